# Classifies one `strace -f -ttt -T -v -x -s 512` trace of a CNI plugin call
# (bench/cni-steps.sh) into its steps. Prints one line per step:
#   STEP COUNT MS
# MS is the time spent inside the step's system calls (strace's <...>), except
# "start" and "wall" (elapsed, from execve). Netlink receives count with the
# request last sent on their socket. Understands sendmsg (libnl, libmnl) and
# sendto/recvfrom (Go's netlink), decoded (the tracer's netns) or raw (a
# socket in another netns: strace prints its type as a number).

function rtm(t) { # nlmsg_type text to a name
	if (t ~ /^RTM_/ || t ~ /^RDMA_/)
		return t
	if (t == "0x10") return "RTM_NEWLINK"
	if (t == "0x12") return "RTM_GETLINK"
	if (t == "0x13") return "RTM_SETLINK"
	if (t == "0x14") return "RTM_NEWADDR"
	if (t == "0x16") return "RTM_GETADDR"
	if (t == "0x18") return "RTM_NEWROUTE"
	if (t == "0x1a") return "RTM_GETROUTE"
	return t
}

function add(step, ms) { cnt[step]++; tot[step] += ms }
function addt(step, ms) { tot[step] += ms }

# the request's step, from the message text and the socket's protocol
function nl_step(line, proto,    t, dump) {
	t = ""
	if (match(line, /nlmsg_type=[A-Za-z0-9_]+/))
		t = rtm(substr(line, RSTART + 11, RLENGTH - 11))
	dump = line ~ /NLM_F_DUMP|NLM_F_ROOT|NLM_F_MATCH|0x300/
	if (proto == "NETLINK_RDMA" || t ~ /^RDMA_/ || t ~ /^0x14[0-9a-f][0-9a-f]$/) {
		if (t ~ /NLDEV_CMD_SET|^0x1402$/)
			return "rdma netlink: set (move)"
		return dump ? "rdma netlink: dump" : "rdma netlink: get"
	}
	if (dump)
		return "netlink dump " t
	if (t == "RTM_NEWLINK" || t == "RTM_SETLINK") {
		if (line ~ /IFLA_NET_NS_FD|IFLA_NET_NS_PID|\\x08\\x00\\x1c\\x00|\\x08\\x00\\x13\\x00/)
			return "move (RTM_NEWLINK to another netns)"
		return "link change (rename, up, alias)"
	}
	if (t ~ /^RTM_NEW/ || t ~ /^RTM_DEL/)
		return "address/route change"
	if (t ~ /^RTM_GET/)
		return "netlink get " t
	return "netlink other " t
}

function handle(pid, line,    name, dur, fd, m) {
	dur = 0
	if (match(line, /<[0-9.]+>$/))
		dur = substr(line, RSTART + 1, RLENGTH - 2) * 1000
	name = line
	sub(/\(.*/, "", name)
	if (name == "execve" && !start_ts) {
		start_ts = ts
		return
	}
	if (name == "read" && line ~ /^read\(0,/ && !read0) {
		read0 = ts
		return
	}
	if (name == "exit_group") {
		end_ts = ts
		return
	}
	if (name == "clone" || name == "clone3" || name == "fork" || name == "vfork") {
		add(line ~ /CLONE_THREAD/ ? "threads created" : "processes created", dur)
		return
	}
	if (name == "execve") {
		add("processes created", dur)
		return
	}
	if (name == "setns") {
		add("setns (enter a netns)", dur)
		return
	}
	if (name == "socket" && line ~ /AF_NETLINK/) {
		fd = line
		sub(/.*= /, "", fd)
		sub(/ .*/, "", fd)
		m = "NETLINK_ROUTE"
		if (line ~ /NETLINK_RDMA/ || line ~ /, 20\)/)
			m = "NETLINK_RDMA"
		if (fd ~ /^[0-9]+$/)
			nl[fd] = m
		add(m == "NETLINK_RDMA" ? "netlink sockets opened (rdma)" : "netlink sockets opened (route)", dur)
		return
	}
	if (match(line, /^[a-z0-9_]+\([0-9]+/)) {
		fd = substr(line, index(line, "(") + 1)
		sub(/[^0-9].*/, "", fd)
	} else
		fd = ""
	if (fd != "" && (fd in nl)) {
		if (name == "sendmsg" || name == "sendto") {
			last[fd] = nl_step(line, nl[fd])
			add(last[fd], dur)
			return
		}
		if (name == "recvmsg" || name == "recvfrom" || name == "recvmmsg") {
			addt(fd in last ? last[fd] : "netlink other", dur)
			return
		}
		addt(nl[fd] == "NETLINK_RDMA" ? "netlink sockets opened (rdma)" : "netlink sockets opened (route)", dur)
		if (name == "close") { # (reading nl[fd] after a delete would bring it back)
			delete nl[fd]
			delete last[fd]
		}
		return
	}
	if (name == "fsync" || name == "fdatasync" || name == "syncfs" || name == "sync_file_range") {
		add("fsync", dur)
		return
	}
	if (name == "flock" || (name == "fcntl" && line ~ /F_SETLK|F_OFD_SETLK/) || line ~ /\.lock"/) {
		add("locks", dur)
		return
	}
	if (line ~ /"\/sys\// || line ~ /"\/sys"/) {
		add("sysfs", dur)
		return
	}
	if (line ~ /\/proc\/(self|thread-self|[0-9]+)\/ns\/net|\/run\/netns\//) {
		add("netns files", dur)
		return
	}
	if (name == "rename" || name == "renameat" || name == "renameat2" || line ~ /\.tmp"/) {
		add("state files", dur)
		return
	}
	if (state_dir != "" && index(line, "\"" state_dir) > 0) {
		add("state files", dur)
		return
	}
	if (name == "futex" || name == "wait4" || name == "waitid" || name == "nanosleep" ||
	    name == "epoll_pwait" || name == "clock_nanosleep" || name == "sched_yield") {
		add("waits (futex, nanosleep, wait4)", dur)
		return
	}
	add("other system calls", dur)
}

{
	pid = $1
	ts = $2
	rest = $0
	sub(/^[0-9]+ +[0-9.]+ +/, "", rest)
	if (rest ~ /^\+\+\+/ || rest ~ /^---/)
		next
	if (rest ~ /<unfinished \.\.\.>$/) {
		sub(/ *<unfinished \.\.\.>$/, "", rest)
		pend[pid] = rest
		next
	}
	if (rest ~ /^<\.\.\. [a-z0-9_]+ resumed>/) {
		sub(/^<\.\.\. [a-z0-9_]+ resumed>/, "", rest)
		rest = pend[pid] rest
		delete pend[pid]
	}
	nsys++
	handle(pid, rest)
}

END {
	if (!end_ts)
		end_ts = ts
	printf "%s\t%d\t%.3f\n", "wall (execve to exit, traced)", nsys, (end_ts - start_ts) * 1000
	if (read0)
		printf "%s\t%d\t%.3f\n", "start (execve to reading stdin)", 1, (read0 - start_ts) * 1000
	for (s in cnt)
		printf "%s\t%d\t%.3f\n", s, cnt[s], tot[s]
}
