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
 * them: rn_cni_attachment_write() says when not). Files whose name starts
 * with '.' and the "locks" directory are not state.
 *
 * Format 1 (text, UTF-8): one "key=value" per line, in any order; lines
 * starting with '#' are comments; unknown keys must be ignored by readers
 * (a rewrite by rdma-netns keeps them, after the keys it knows). rdma-netns
 * writes the keys it knows in one fixed order, the same in every version
 * (cni_state.c says which); a file of another format is refused, not guessed at.
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
 *   rdma_kernel=0|1              whether the kernel had RDMA netlink at ADD (absent: 1)
 *   netdevs=N                    netdevs moved (main mode) or used (chained: 1, not moved)
 *   netdev.I.name=NAME           its name on the host before ADD (restored at DEL)
 *   netdev.I.pod_name=NAME       its name in the pod (netdev.0 is named ifname)
 *   netdev.I.mac=aa:bb:..        its MAC address
 *   netdev.I.ifindex=N           its ifindex on the host at ADD
 *   netdev.I.kind=KIND           "veth", "macvlan", ...; empty for a physical netdev
 *   netdev.I.alias=TEXT          its IFLA_IFALIAS before ADD (restored at DEL)
 *   netdev.I.up=0|1              whether it was up on the host before ADD
 *   netdev.I.ib_gid=GID          an IPoIB netdev's port GID (the kernel makes it anew when
 *                                its RDMA device moves: found by this after)
 *   rdma=N                       RDMA devices moved into the pod
 *   rdma.I.name=NAME             RDMA device name (the same in the pod and the host)
 *   soft_roce=NAME               the rxe device made in the pod (softRoce), absent if none
 *   ip.I=CIDR                    addresses given to the pod interface ("10.0.0.5/24")
 *   nccl.KEY=VALUE               the network configuration's "nccl" block, passed through
 *   devinfo=PATH                 the device-info file written for Multus
 */
#ifndef RDMANS_CNI_STATE_H
#define RDMANS_CNI_STATE_H

#include <limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>

#include "rdmans/attach_plan.h"
#include "rdmans/cleanup.h"
#include "rdmans/error.h"

#define RN_CNI_STATE_DIR "/var/lib/cni/rdma-netns"
#define RN_CNI_STATE_FORMAT 1
/* A network name or container ID: the CNI spec sets no bound, rdma-netns this one. */
#define RN_CNI_NAME_MAX 1024
/* Addresses of the pod interface kept (ip.I); an address is at most 63 bytes. */
#define RN_CNI_IPS_MAX 32
#define RN_CNI_IP_SIZE 64

/* phase=: where an attachment is in its life. */
enum rn_cni_phase {
	RN_CNI_PHASE_UNKNOWN, /* none, or one this reader does not know: not ready */
	RN_CNI_PHASE_ADDING,
	RN_CNI_PHASE_READY,
	RN_CNI_PHASE_RELEASING,
};

/* A key and its value, kept as the file has them. */
struct rn_cni_setting {
	char *key;
	char *value;
};

/*
 * What one attachment's state file holds (the keys above). Text fields are
 * "" when the file has no such key. The device section (mode, bus_id,
 * rdma_kernel, netdevs, rdma) is attach's plan, stored whole: its unsaved
 * fields read as exclusive = true, sysfs_walked = false, rdma_view = 0.
 */
struct rn_cni_attachment {
	char network[RN_CNI_NAME_MAX + 1];
	char container_id[RN_CNI_NAME_MAX + 1];
	char ifname[IF_NAMESIZE];
	char netns[PATH_MAX];
	enum rn_cni_phase phase;
	long long created; /* seconds since the epoch; 0 when not recorded */
	char boot_id[64]; /* "" in files from before it was recorded: this boot's */
	char pod_namespace[256];
	char pod_name[256];
	char pod_uid[128];
	char infra_container_id[128];
	char ipam[NAME_MAX + 1]; /* the IPAM plugin's type, "" for none */
	char devinfo[PATH_MAX];
	struct rn_attach_plan plan;
	char soft_roce[RN_RDMA_NAME_MAX];
	size_t n_ips;
	char ips[RN_CNI_IPS_MAX][RN_CNI_IP_SIZE];
	/* the network configuration's "nccl" block: keys without "nccl.", in order */
	size_t n_nccl;
	struct rn_cni_setting *nccl;
	/* keys this reader does not know (a newer writer's): written back as they were */
	size_t n_unknown;
	struct rn_cni_setting *unknown;
};

void rn_cni_attachment_free(struct rn_cni_attachment *att);
static inline void rn_cni_attachment_freep(struct rn_cni_attachment *att)
{
	rn_cni_attachment_free(att);
}
#define _cleanup_cni_attachment_ _cleanup_(rn_cni_attachment_freep)

/* Appends nccl.KEY=VALUE (copies of both). */
int rn_cni_attachment_add_nccl(struct rn_cni_attachment *att, const char *key, const char *value,
			       struct rn_error *err);

/*
 * The one reader: dir/name, parsed and checked. 0; -ENOENT (with a
 * message) when there is no such file; -EBADMSG when the file reads but a
 * value is damaged (err names the file and what: "state file DIR/NAME is
 * damaged: ..."), and then *ret holds all the same what the file says, a
 * value cut to its field, a count to RN_ATTACH_MAX: enough to tell whose
 * attachment it is and which devices it may claim, not to act on its
 * devices; another -errno when it cannot be read (a format this reader
 * does not know among them). *ret is freed with rn_cni_attachment_free()
 * whatever the result.
 */
int rn_cni_attachment_read(const char *dir, const char *name, struct rn_cni_attachment *ret,
			   struct rn_error *err);
/*
 * The one writer: dir/name atomically (temporary file, rename). durable:
 * fsync the file and dir too; without, a power loss may lose the file or
 * leave it empty: for state that records only what a reboot undoes anyway
 * (src/cni/add.c says when).
 */
int rn_cni_attachment_write(const char *dir, const char *name, const struct rn_cni_attachment *att,
			    bool durable, struct rn_error *err);

/*
 * Whether att was written before the last reboot: it records a boot_id other
 * than this_boot (rn_kernel_boot_id()). Not when it records none, or when
 * this_boot is "" (unreadable).
 */
bool rn_cni_attachment_older_boot(const struct rn_cni_attachment *att, const char *this_boot);

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
