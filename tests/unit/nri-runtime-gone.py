#!/usr/bin/python3
"""rdmans-nri started by a runtime (pre-installed: NRI_PLUGIN_SOCKET names the
connection) whose end of the connection is already closed, as when a runtime
gives up on a request: the plugin's write fails with EPIPE, it says so and
exits 1. It is never killed by SIGPIPE (a DaemonSet's plugin would then not
connect again). TAP on stdout. Usage: nri-runtime-gone.py RDMANS_NRI"""
import os
import socket
import subprocess
import sys

nri = sys.argv[1]
checks = []


def check(name, ok, diag=""):
    checks.append((name, ok, diag))


ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
ours.close()  # the runtime went away before the plugin's first word
fd = theirs.fileno()
os.set_inheritable(fd, True)
env = dict(os.environ, NRI_PLUGIN_SOCKET=str(fd), NRI_PLUGIN_NAME="rdmans-nri", NRI_PLUGIN_IDX="50")
p = subprocess.run([nri], env=env, pass_fds=(fd,), capture_output=True, text=True, timeout=60)
theirs.close()
check("not killed by a signal (SIGPIPE)", p.returncode >= 0, f"returncode {p.returncode}")
check("exits 1", p.returncode == 1, f"returncode {p.returncode}")
check("says it cannot write to the NRI socket", "cannot write to the NRI socket" in p.stderr,
      f"stderr: {p.stderr.strip()}")

for n, (name, ok, diag) in enumerate(checks, 1):
    print(f"{'ok' if ok else 'not ok'} {n} - {name}")
    if not ok and diag:
        print(f"# {diag}")
print(f"1..{len(checks)}")
sys.exit(0 if all(ok for _, ok, _ in checks) else 1)
