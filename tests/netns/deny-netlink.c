// SPDX-License-Identifier: Apache-2.0
/*
 * deny-netlink CMD [ARG...]: runs CMD with socket(AF_NETLINK, *,
 * NETLINK_ROUTE) failing with EPERM, as a seccomp profile or an LSM may deny
 * it. Tests use it to prove a failed lookup is reported as one, never taken
 * for "not there".
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "deny-netlink: add this architecture's AUDIT_ARCH_*"
#endif

#define LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))

int main(int argc, char **argv)
{
	struct sock_filter filter[] = {
		LOAD(arch),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		LOAD(nr),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 5),
		LOAD(args[0]), /* the low half on little-endian machines */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 0, 3),
		LOAD(args[2]),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NETLINK_ROUTE, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

	if (argc < 2) {
		fprintf(stderr, "usage: deny-netlink CMD [ARG...]\n");
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		fprintf(stderr, "deny-netlink: cannot install the filter: %s\n", strerror(errno));
		return 2;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "deny-netlink: cannot run %s: %s\n", argv[1], strerror(errno));
	return 127;
}
