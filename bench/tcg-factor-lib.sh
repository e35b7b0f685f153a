# shellcheck shell=bash
# tcg_probe_ms RDMANS N: the median ms of N `rdmans env --netns` in a fresh
# netns with a veth and an address: process start, setns, a private sysfs
# mount, netlink dumps and the resolver, what rdmans-nri does per container
# (with no RDMA device the resolver ends in "no device", after the probe).
tcg_probe_ms() {
	local i t0 t1
	ip netns add tcgf && ip link add tcgf0 type veth peer name tcgf1 &&
		ip link set tcgf1 netns tcgf && ip -n tcgf addr add 10.99.0.2/24 dev tcgf1 &&
		ip -n tcgf link set tcgf1 up || return 1
	: >/tmp/tcgf.us
	for i in $(seq 1 "$2"); do
		t0=$(date +%s%N)
		"$1" env --netns tcgf >/dev/null 2>&1
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000)) >>/tmp/tcgf.us
	done
	ip netns del tcgf
	ip link del tcgf0 2>/dev/null
	sort -n /tmp/tcgf.us | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] / 1000 }'
}
