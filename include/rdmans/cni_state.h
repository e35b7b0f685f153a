/* SPDX-License-Identifier: Apache-2.0 */
/*
 * State of the rdma-netns CNI plugin: one file per attachment, and
 * per-device locks. Other programs (the exporter, hooks) read these files.
 *
 * Where: RN_CNI_STATE_DIR (/var/lib/cni/rdma-netns), mode 0700, owned by
 * root. One file per attachment (network name, container ID, interface
 * name), named "NETWORK:CONTAINERID:IFNAME" (when that would be longer than
 * 200 bytes: "NETWORK-prefix:CONTAINERID-prefix:~HASH"; read the fields, not
 * the name). Files are written to a temporary name and renamed, so a reader
 * sees a whole file or none (fsync'ed too where a power loss must not lose
 * them: rn_cni_state_write_nosync() says when not). Files whose name starts with '.' and
 * the "locks" directory are not state.
 *
 * Format 1 (text, UTF-8): one "key=value" per line, in any order; lines
 * starting with '#' are comments; unknown keys must be ignored by readers.
 * In values, backslash escapes: "\\" is a backslash, "\n" a newline.
 *
 *   format=1
 *   network=NAME                 the network configuration's "name"
 *   container_id=ID              CNI_CONTAINERID
 *   ifname=NAME                  CNI_IFNAME (the interface in the pod)
 *   netns=PATH                   CNI_NETNS at ADD
 *   mode=main|chained            main: we moved the netdev; chained: only RDMA devices
 *   phase=adding|ready|releasing "adding" until ADD finished (a crashed ADD leaves it);
 *                                "releasing": a DEL brought the devices home, the IPAM
 *                                release (and the removal of this file) remain
 *   created=UNIX_SECONDS
 *   boot_id=UUID                 the kernel's boot ID at ADD: a file of an older boot (a
 *                                reboot undid the ADD) claims no device, and its DEL or GC
 *                                releases the IPAM allocation alone. A file without one
 *                                (from before rdma-netns wrote it) counts as this boot's
 *   pod_namespace=NS             K8S_POD_NAMESPACE from CNI_ARGS (absent when not given)
 *   pod_name=NAME                K8S_POD_NAME
 *   pod_uid=UID                  K8S_POD_UID
 *   infra_container_id=ID        K8S_POD_INFRA_CONTAINER_ID
 *   ipam=TYPE                    the IPAM plugin delegated to (main mode), absent if none
 *   bus_id=ID                    PCI BDF (or auxiliary id) of the device, absent if none
 *   netdevs=N                    netdevs moved (main mode) or used (chained: 1, not moved)
 *   netdev.I.name=NAME           its name on the host before ADD (restored at DEL)
 *   netdev.I.pod_name=NAME       its name in the pod (netdev.0 is named ifname)
 *   netdev.I.mac=aa:bb:..        its MAC address
 *   netdev.I.ifindex=N           its ifindex on the host at ADD
 *   netdev.I.kind=KIND           "veth", "macvlan", ...; empty for a physical netdev
 *   netdev.I.alias=TEXT          its IFLA_IFALIAS before ADD (restored at DEL)
 *   netdev.I.up=0|1              whether it was up on the host before ADD
 *   rdma=N                       RDMA devices moved into the pod
 *   rdma.I.name=NAME             RDMA device name (the same in the pod and the host)
 *   ip.I=CIDR                    addresses given to the pod interface ("10.0.0.5/24")
 *   nccl.KEY=VALUE               the network configuration's "nccl" block, passed through
 *   devinfo=PATH                 the device-info file written for Multus
 */
#ifndef RDMANS_CNI_STATE_H
#define RDMANS_CNI_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "rdmans/cleanup.h"
#include "rdmans/error.h"

#define RN_CNI_STATE_DIR "/var/lib/cni/rdma-netns"
#define RN_CNI_STATE_FORMAT 1

struct rn_kv {
	char *key;
	char *value;
};

struct rn_cni_state {
	size_t n;
	struct rn_kv *v;
};

void rn_cni_state_free(struct rn_cni_state *st);
static inline void rn_cni_state_freep(struct rn_cni_state *st)
{
	rn_cni_state_free(st);
}
#define _cleanup_cni_state_ _cleanup_(rn_cni_state_freep)

/* Sets (replaces or appends) key. Keys: [A-Za-z0-9_.-]+. */
int rn_cni_state_set(struct rn_cni_state *st, const char *key, const char *value,
		     struct rn_error *err);
int rn_cni_state_setf(struct rn_cni_state *st, struct rn_error *err, const char *key,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The value of key, or NULL. */
const char *rn_cni_state_get(const struct rn_cni_state *st, const char *key);
/* Like rn_cni_state_get() with "key.I" / "key.I.field" built from the parts. */
const char *rn_cni_state_geti(const struct rn_cni_state *st, const char *key, size_t i,
			      const char *field);
/* Strict decimal parse of key's value; -ENOENT when absent, -EINVAL when not a number. */
int rn_cni_state_get_uint(const struct rn_cni_state *st, const char *key, unsigned long *ret);

/*
 * Creates dir (and dir/locks) with mode 0700 when missing; refuses a dir
 * that is a symlink, not owned by root (when running as root), or writable
 * by others.
 */
int rn_cni_state_dir_init(const char *dir, struct rn_error *err);

/*
 * The file name of an attachment (see above). Checks each part: network
 * and container ID as the CNI spec allows them (alphanumerics, then also
 * '_', '.', '-'), ifname as Linux does.
 */
int rn_cni_state_name(const char *network, const char *container_id, const char *ifname, char *buf,
		      size_t len, struct rn_error *err);

/* Reads dir/name; -ENOENT (with a message) when there is no such file. */
int rn_cni_state_read(const char *dir, const char *name, struct rn_cni_state *out,
		      struct rn_error *err);
/* Writes dir/name atomically (temporary file, fsync, rename, fsync of dir). */
int rn_cni_state_write(const char *dir, const char *name, const struct rn_cni_state *st,
		       struct rn_error *err);
/*
 * The same without the two fsyncs: still atomic for every reader and for a
 * writer killed half way (the rename), but a power loss may lose the file
 * or leave it empty. For state that records only what a reboot undoes
 * anyway (src/cni/add.c says when).
 */
int rn_cni_state_write_nosync(const char *dir, const char *name, const struct rn_cni_state *st,
			      struct rn_error *err);
/*
 * Removes dir/name, and the temporary files of its writers that were killed
 * before their rename; a missing file is not an error. Then fsyncs dir, as
 * a removed file that a power loss brought back would claim its devices
 * again.
 */
int rn_cni_state_remove(const char *dir, const char *name, struct rn_error *err);
/*
 * The same without the fsync, for a file that records its boot (boot_id):
 * brought back by a power loss, it is a file of an older boot and claims
 * nothing.
 */
int rn_cni_state_remove_nosync(const char *dir, const char *name, struct rn_error *err);

/*
 * Whether st was written before the last reboot: it records a boot_id other
 * than this_boot (rn_kernel_boot_id()). Not when it records none, or when
 * this_boot is "" (unreadable).
 */
bool rn_cni_state_older_boot(const struct rn_cni_state *st, const char *this_boot);

/* Names of every state file in dir, sorted. Free with rn_cni_state_names_free(). */
int rn_cni_state_list(const char *dir, char ***ret_names, size_t *ret_n, struct rn_error *err);
void rn_cni_state_names_free(char **names, size_t n);

/*
 * Takes the exclusive lock dir/locks/KEY.lock (flock), waiting up to
 * timeout_ms. *ret_fd holds the lock until closed. Characters of key
 * outside [A-Za-z0-9_.:-] become '_'. -EAGAIN with a message when another
 * process held it for the whole time. A lock file its holder removed
 * meanwhile (rn_cni_unlock_remove) is not taken: the new one is.
 */
int rn_cni_lock(const char *dir, const char *key, const char *what, int timeout_ms, int *ret_fd,
		struct rn_error *err);
/* Removes the lock file of fd (taken by rn_cni_lock with key) and releases it. */
void rn_cni_unlock_remove(const char *dir, const char *key, int fd);

/*
 * The lock of one attachment (network, container, interface: its state
 * name), held by ADD and DEL from before they read its state until they
 * are done, so an ADD and a DEL of one attachment never interleave. Taken
 * before any device lock. rn_cni_attachment_unlock removes its file.
 */
int rn_cni_attachment_lock(const char *dir, const char *state_name, int timeout_ms, int *ret_fd,
			   struct rn_error *err);
void rn_cni_attachment_unlock(const char *dir, const char *state_name, int fd);

#endif
