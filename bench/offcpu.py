#!/usr/bin/env python3
"""Off-CPU time of a command's threads, by the kernel stack they slept in.

Reads `perf script` of a `perf record -e sched:sched_switch -g -a` run from
stdin. A thread of COMM that is switched out at time t0 with stack S and
switched in again at t1 is charged t1 - t0 to S. Prints ms per cycle (the
total divided by CYCLES), how often per cycle, the task state at switch-out
(D: uninterruptible, e.g. a kernel wait; S: a sleep the thread asked for;
R: preempted) and the stack's first frames below the scheduler.

    perf script -i F | bench/offcpu.py COMM CYCLES [LINES]
"""
import collections
import re
import sys

# Scheduler and wait plumbing: the frames below them name the reason.
PLUMBING = {
    '__schedule', 'schedule', 'schedule_timeout', 'schedule_preempt_disabled',
    'schedule_timeout_uninterruptible', 'preempt_schedule_common', '__cond_resched',
    'preempt_schedule_irq', 'io_schedule', 'io_schedule_timeout', 'wait_for_completion',
    'wait_for_completion_state', 'wait_for_completion_io_timeout', '__wait_for_common',
    'futex_do_wait', 'futex_wait_queue', '__futex_wait', 'futex_wait', 'do_nanosleep',
    'hrtimer_nanosleep', 'mutex_lock', '__mutex_lock', '__mutex_lock_slowpath',
    '__mutex_lock.constprop.0', 'rwsem_down_write_slowpath', 'rwsem_down_read_slowpath',
    'down_write', 'down_read', '__wait_rcu_gp', 'wait_rcu_gp', 'synchronize_rcu_normal',
    'irqentry_exit', 'raw_irqentry_exit_cond_resched', 'common_interrupt',
    'asm_common_interrupt', 'asm_sysvec_apic_timer_interrupt', 'asm_sysvec_reschedule_ipi',
    'asm_sysvec_call_function_single', 'irqentry_exit_to_user_mode', 'exit_to_user_mode_loop',
    'do_syscall_64', 'entry_SYSCALL_64_after_hwframe', '[unknown]',
}
HEADER = re.compile(r'\[\d+\]\s+([\d.]+):\s+sched:sched_switch:(.*)$')
SWITCH = re.compile(r'prev_comm=(.*) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> '
                    r'next_comm=.* next_pid=(\d+)')


def switches(lines):
    """(time, prev comm, prev tid, prev state, next tid, stack) per sched_switch."""
    head, stack = None, []
    for line in lines:
        if line.startswith(('\t', ' ')) and line.strip():
            if head:
                parts = line.split()
                if len(parts) >= 2:
                    stack.append(parts[1].split('+')[0])
            continue
        if head:
            yield head + (stack,)
        head, stack = None, []
        m = HEADER.search(line)
        s = SWITCH.search(m.group(2)) if m else None
        if s:
            head = (float(m.group(1)), s.group(1), int(s.group(2)), s.group(3), int(s.group(4)))
    if head:
        yield head + (stack,)


def main():
    if len(sys.argv) < 3:
        sys.exit('usage: perf script -i F | offcpu.py COMM CYCLES [LINES]')
    comm, cycles = sys.argv[1][:15], int(sys.argv[2])
    lines = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    asleep = {}
    charged = collections.defaultdict(lambda: [0, 0.0])
    for t, prev_comm, prev, state, nxt, stack in switches(sys.stdin):
        if nxt in asleep:
            t0, why = asleep.pop(nxt)
            charged[why][0] += 1
            charged[why][1] += t - t0
        if prev_comm == comm:
            frames = [f for f in stack if f not in PLUMBING][:5]
            asleep[prev] = (t, state[:1] + '  ' + ' < '.join(frames or ['?']))
    total = sum(s for _, s in charged.values())
    print(f'  {total * 1e3 / cycles:8.2f} ms per cycle off CPU, {comm}\'s threads')
    for why, (n, s) in sorted(charged.items(), key=lambda kv: -kv[1][1])[:lines]:
        print(f'  {s * 1e3 / cycles:8.2f} ms {n / cycles:6.2f}x  {why[:160]}')


if __name__ == '__main__':
    main()
