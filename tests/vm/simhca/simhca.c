// SPDX-License-Identifier: GPL-2.0
/*
 * simhca - simulated RoCE and InfiniBand HCAs for testing (a test double, like
 * netdevsim).
 *
 * Each simulated HCA is an auxiliary device "simhca.roce.<ID>" (the way irdma
 * hangs off "ice.roce.N") under the root device /sys/devices/simhca. The
 * module's auxiliary driver binds it and registers an ib_device through the
 * real ib_core, with dev.parent = the auxiliary device, so
 * /sys/bus/auxiliary/devices/simhca.roce.<ID>/infiniband/<NAME> exists.
 *
 * Each ib_device has one RoCE port bound to a netdev with
 * ib_device_set_netdev() (ib_core takes its own reference on the netdev):
 * the kernel's roce_gid_mgmt fills the GID table from the netdev's addresses,
 * and the port state follows the netdev's link. The device has a
 * disassociate_ucontext op, so it can be moved between network namespaces in
 * exclusive mode (rdma dev set NAME netns NS), like irdma or mlx5.
 *
 * A device created with the "ib" keyword has an InfiniBand port instead, as
 * a ConnectX on a fabric with a subnet manager shows it: a LID, SM LID 1, a
 * port GUID and GID 0 fe80::GUID. Its netdev (optional: "-") is not bound to
 * the port; it only gives the device its parent (PCI placement) and its link
 * state. The MAD layer opens QP0 and QP1 on it, and ib_ipoib its netdev.
 *
 * Control (sysfs, see README.md):
 *   /sys/bus/simhca/new_device  "NAME_PATTERN NETDEV_NAME|- [ID] [ib]"
 *   /sys/bus/simhca/del_device  "ID"
 *   /sys/bus/simhca/list        "ID IBDEV NETDEV AUXDEV" per line
 *   /sys/bus/simhca/set_counters "ID NAME VALUE [NAME VALUE]..."
 *
 * Port counters: process_mad answers PerfMgmt Get (ClassPortInfo,
 * PortCounters, PortCountersExt), so ib_core shows ports/1/counters/; and
 * hw_counters through rdma_hw_stats. Their values are what set_counters set.
 *
 * No data path: post_send fails with -EOPNOTSUPP, posted receives complete
 * only as flushed when their QP goes to ERR. Kernel PD/CQ/QP/DMA-MR objects
 * can be created so that the MAD layer (QP1, and QP0 on IB ports) opens its
 * port the way it does on real HCAs.
 *
 * Locking: simhca_mutex serialises control operations (new, del, exit).
 * The device list and each device's netdev/ib pointers are changed only with
 * both simhca_mutex and rtnl_lock held (the ib pointer also by the auxiliary
 * driver's probe/remove, under rtnl_lock); the netdevice notifier reads them
 * under rtnl_lock. No ib_core registration call is made with rtnl_lock held.
 */

#include <linux/module.h>
#include <linux/version.h>
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/idr.h>
#include <linux/workqueue.h>
#include <linux/ctype.h>
#include <linux/device.h>
#include <linux/auxiliary_bus.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/if_arp.h>
#include <linux/rtnetlink.h>
#include <linux/nsproxy.h>
#include <net/net_namespace.h>
#include <net/addrconf.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_pma.h>

#define DRV_NAME		"simhca"
#define SIMHCA_AUX_NAME		"roce"
#define SIMHCA_GID_TBL_LEN	16
#define SIMHCA_MAX_ID		0xffff
/* IB: LID = ID + 2 (1 is the SM's), up to the last unicast LID 0xbfff */
#define SIMHCA_IB_MAX_ID	0xbffd
#define SIMHCA_IB_SM_LID	1
#define SIMHCA_IB_GID_TBL_LEN	1
/* IB node/port GUID: locally administered, "SHCA", then the ID */
#define SIMHCA_IB_GUID_BASE	0x0200534843410000ULL
/* what the port supports before ib_cm adds IB_PORT_CM_SUP (modify_port) */
#define SIMHCA_IB_PORT_CAPS	(IB_PORT_SYS_IMAGE_GUID_SUP |		\
				 IB_PORT_CLIENT_REG_SUP)

/*
 * Port counters, settable through /sys/bus/simhca/set_counters. Names are
 * those of ports/1/counters/ (PMA PortCounters, PortCountersExt) and of
 * ports/1/hw_counters/ (rdma_hw_stats).
 */
enum simhca_cnt {
	/* PortCounters only */
	SIMHCA_SYMBOL_ERROR,
	SIMHCA_LINK_ERROR_RECOVERY,
	SIMHCA_LINK_DOWNED,
	SIMHCA_RCV_ERRORS,
	SIMHCA_RCV_REMPHYS_ERRORS,
	SIMHCA_RCV_SWITCH_RELAY_ERRORS,
	SIMHCA_XMIT_DISCARDS,
	SIMHCA_XMIT_CONSTRAINT_ERRORS,
	SIMHCA_RCV_CONSTRAINT_ERRORS,
	SIMHCA_LOCAL_LINK_INTEGRITY_ERRORS,
	SIMHCA_EXCESSIVE_BUFFER_OVERRUN_ERRORS,
	SIMHCA_VL15_DROPPED,
	SIMHCA_XMIT_WAIT,
	/* both (32 bits, saturating, in PortCounters; 64 in PortCountersExt) */
	SIMHCA_XMIT_DATA,
	SIMHCA_RCV_DATA,
	SIMHCA_XMIT_PACKETS,
	SIMHCA_RCV_PACKETS,
	/* PortCountersExt only */
	SIMHCA_UNICAST_XMIT_PACKETS,
	SIMHCA_UNICAST_RCV_PACKETS,
	SIMHCA_MULTICAST_XMIT_PACKETS,
	SIMHCA_MULTICAST_RCV_PACKETS,
	/* hw_counters, as mlx5 names them: every port */
	SIMHCA_HW_FIRST,
	SIMHCA_HW_OUT_OF_BUFFER = SIMHCA_HW_FIRST,
	SIMHCA_HW_OUT_OF_SEQUENCE,
	SIMHCA_HW_DUPLICATE_REQUEST,
	SIMHCA_HW_RNR_NAK_RETRY_ERR,
	SIMHCA_HW_PACKET_SEQ_ERR,
	SIMHCA_HW_IMPLIED_NAK_SEQ_ERR,
	SIMHCA_HW_LOCAL_ACK_TIMEOUT_ERR,
	/* hw_counters of RoCE ports only (congestion control) */
	SIMHCA_HW_ROCE_FIRST,
	SIMHCA_HW_RP_CNP_IGNORED = SIMHCA_HW_ROCE_FIRST,
	SIMHCA_HW_RP_CNP_HANDLED,
	SIMHCA_HW_NP_ECN_MARKED_ROCE_PACKETS,
	SIMHCA_HW_NP_CNP_SENT,
	SIMHCA_CNT_NUM
};

/* One simulated HCA: the auxiliary device and its configuration. */
struct simhca_dev {
	struct auxiliary_device adev;
	struct list_head list;		/* simhca_devs */
	u32 id;
	char pattern[IB_DEVICE_NAME_MAX];
	bool link_ib;			/* InfiniBand port, not RoCE */
	bool always_up;			/* IB without a netdev: port ACTIVE */
	/*
	 * The bound netdev; we hold a reference (dev_hold) on it. Written
	 * under rtnl; read under rtnl, or under RCU by query_port.
	 */
	struct net_device __rcu *netdev;
	/* rtnl: set while the ib_device is registered */
	struct simhca_ib *ib;
	/* rtnl: last port state reported through an event */
	bool port_active;
	int probe_err;
	/* kept here, not in simhca_ib: they survive an unbind/bind */
	spinlock_t cnt_lock;
	u64 cnt[SIMHCA_CNT_NUM];
};

struct simhca_ib {
	struct ib_device ibdev;
	struct simhca_dev *sdev;
	struct ida qpn_ida;
	atomic_t next_key;
	spinlock_t port_lock;
	u32 port_cap_flags;		/* IB: port_lock; set by modify_port */
};

struct simhca_ucontext {
	struct ib_ucontext ibuc;
};

struct simhca_pd {
	struct ib_pd ibpd;
};

struct simhca_cq {
	struct ib_cq ibcq;
	spinlock_t lock;
	struct list_head flushed;	/* simhca_wqe: flushed receives */
	bool armed;			/* req_notify_cq since the last call */
	struct work_struct notify_work;	/* calls comp_handler */
};

/* A posted receive, kept so that it can be flushed when its QP errs. */
struct simhca_wqe {
	struct list_head list;
	struct ib_qp *qp;
	u64 wr_id;
};

struct simhca_qp {
	struct ib_qp ibqp;
	enum ib_qp_state state;
	struct ib_qp_cap cap;
	u32 qkey;
	u16 pkey_index;
	u32 sq_psn;
	u32 rq_psn;
	enum ib_sig_type sq_sig_type;
	spinlock_t rq_lock;		/* state and rq */
	struct list_head rq;		/* simhca_wqe: posted receives */
};

struct simhca_mr {
	struct ib_mr ibmr;
};

struct simhca_ah {
	struct ib_ah ibah;
};

static DEFINE_MUTEX(simhca_mutex);
static LIST_HEAD(simhca_devs);
static DEFINE_IDA(simhca_ida);
static bool simhca_enabled;		/* simhca_mutex */
static struct device *simhca_root;

static inline struct simhca_ib *to_sib(struct ib_device *ibdev)
{
	return container_of(ibdev, struct simhca_ib, ibdev);
}

static inline struct simhca_qp *to_sqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct simhca_qp, ibqp);
}

static inline struct simhca_cq *to_scq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct simhca_cq, ibcq);
}

static inline struct simhca_dev *adev_to_sdev(struct auxiliary_device *adev)
{
	return container_of(adev, struct simhca_dev, adev);
}

static bool simhca_link_up(const struct net_device *ndev)
{
	return ndev && netif_running(ndev) && netif_carrier_ok(ndev);
}

static bool simhca_port_up(const struct simhca_dev *sdev,
			   const struct net_device *ndev)
{
	return sdev->always_up || simhca_link_up(ndev);
}

static __be64 simhca_ib_guid(u32 id)
{
	return cpu_to_be64(SIMHCA_IB_GUID_BASE | id);
}

/* ---------------------------------------------------------------------- */
/* ib_device ops                                                          */
/* ---------------------------------------------------------------------- */

static int simhca_query_device(struct ib_device *ibdev,
			       struct ib_device_attr *attr,
			       struct ib_udata *udata)
{
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	attr->fw_ver = 1;
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = ~0ULL;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = 0;
	attr->vendor_part_id = 0;
	attr->hw_ver = 0;
	attr->max_qp = 1024;
	attr->max_qp_wr = 4096;
	attr->device_cap_flags = 0;
	attr->kernel_cap_flags = 0;
	attr->max_send_sge = 8;
	attr->max_recv_sge = 8;
	attr->max_sge_rd = 8;
	attr->max_cq = 1024;
	attr->max_cqe = 65535;
	attr->max_mr = 1024;
	attr->max_pd = 1024;
	attr->max_qp_rd_atom = 16;
	attr->max_qp_init_rd_atom = 16;
	attr->max_res_rd_atom = 16 * 1024;
	attr->atomic_cap = IB_ATOMIC_NONE;
	attr->max_ah = 1024;
	attr->max_srq = 0;
	attr->max_pkeys = 1;
	attr->local_ca_ack_delay = 15;
	return 0;
}

static void simhca_query_ib_port(struct simhca_ib *sib,
				 struct ib_port_attr *props)
{
	props->max_mtu = IB_MTU_4096;
	props->active_mtu = IB_MTU_4096;
	props->phys_mtu = 4096;
	props->gid_tbl_len = SIMHCA_IB_GID_TBL_LEN;
	props->pkey_tbl_len = 1;
	spin_lock(&sib->port_lock);
	props->port_cap_flags = sib->port_cap_flags;
	spin_unlock(&sib->port_lock);
	props->max_msg_sz = 1U << 31;
	props->lid = sib->sdev->id + 2;
	props->lmc = 0;
	props->sm_lid = SIMHCA_IB_SM_LID;
	props->sm_sl = 0;
	props->max_vl_num = 4;		/* VL0-7 */
	props->active_width = IB_WIDTH_4X;
	props->active_speed = IB_SPEED_NDR;
}

static int simhca_query_port(struct ib_device *ibdev, u32 port,
			     struct ib_port_attr *props)
{
	struct simhca_ib *sib = to_sib(ibdev);
	struct net_device *ndev;
	bool up;

	/* props is zeroed by the caller (__ib_query_port). */
	rcu_read_lock();
	ndev = rcu_dereference(sib->sdev->netdev);
	up = simhca_port_up(sib->sdev, ndev);

	if (sib->sdev->link_ib) {
		simhca_query_ib_port(sib, props);
	} else {
		props->max_mtu = IB_MTU_4096;
		props->active_mtu = ndev ? ib_mtu_int_to_enum(ndev->mtu) :
					   IB_MTU_1024;
		props->phys_mtu = ndev ? ndev->mtu : 1500;
		props->gid_tbl_len = SIMHCA_GID_TBL_LEN;
		props->ip_gids = true;
		props->pkey_tbl_len = 1;
		props->port_cap_flags = IB_PORT_CM_SUP | IB_PORT_REINIT_SUP;
		props->max_msg_sz = 1U << 31;
		props->lid = 0;
		props->lmc = 0;
		props->sm_lid = 0;
		props->sm_sl = 0;
		props->max_vl_num = 1;
		props->active_width = IB_WIDTH_4X;
		props->active_speed = IB_SPEED_EDR;
	}
	if (up) {
		props->state = IB_PORT_ACTIVE;
		props->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	} else {
		props->state = IB_PORT_DOWN;
		/* an IB port without a peer polls; Ethernet ones say DISABLED */
		props->phys_state = sib->sdev->link_ib ?
					    IB_PORT_PHYS_STATE_POLLING :
					    IB_PORT_PHYS_STATE_DISABLED;
	}
	rcu_read_unlock();
	return 0;
}

static int simhca_get_port_immutable(struct ib_device *ibdev, u32 port,
				     struct ib_port_immutable *immutable)
{
	if (to_sib(ibdev)->sdev->link_ib) {
		immutable->core_cap_flags = RDMA_CORE_PORT_IBA_IB;
		immutable->gid_tbl_len = SIMHCA_IB_GID_TBL_LEN;
	} else {
		immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE |
					    RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
		immutable->gid_tbl_len = SIMHCA_GID_TBL_LEN;
	}
	immutable->pkey_tbl_len = 1;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer simhca_get_link_layer(struct ib_device *ibdev,
						  u32 port)
{
	return to_sib(ibdev)->sdev->link_ib ? IB_LINK_LAYER_INFINIBAND :
					      IB_LINK_LAYER_ETHERNET;
}

/*
 * IB only (RoCE GIDs come from roce_gid_mgmt): ib_core's GID cache asks the
 * driver for every entry of a non-RoCE port. GID 0 is the default subnet
 * prefix fe80::/64 and the port GUID, as an SM leaves it.
 */
static int simhca_query_gid(struct ib_device *ibdev, u32 port, int index,
			    union ib_gid *gid)
{
	if (index < 0 || index >= SIMHCA_IB_GID_TBL_LEN)
		return -EINVAL;
	gid->global.subnet_prefix = cpu_to_be64(0xfe80000000000000ULL);
	gid->global.interface_id = ibdev->node_guid;	/* = port GUID */
	return 0;
}

/* IB only: ib_cm sets IB_PORT_CM_SUP here (RoCE ports need no op for it). */
static int simhca_modify_port(struct ib_device *ibdev, u32 port, int mask,
			      struct ib_port_modify *props)
{
	struct simhca_ib *sib = to_sib(ibdev);

	if (mask & ~(IB_PORT_SHUTDOWN | IB_PORT_INIT_TYPE |
		     IB_PORT_RESET_QKEY_CNTR))
		return -EOPNOTSUPP;
	spin_lock(&sib->port_lock);
	sib->port_cap_flags = (sib->port_cap_flags | props->set_port_cap_mask) &
			      ~props->clr_port_cap_mask;
	spin_unlock(&sib->port_lock);
	return 0;
}

static int simhca_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			     u16 *pkey)
{
	if (index > 0)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static void simhca_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "simhca-1.0");
}

static int simhca_alloc_ucontext(struct ib_ucontext *uctx,
				 struct ib_udata *udata)
{
	return 0;
}

static void simhca_dealloc_ucontext(struct ib_ucontext *uctx)
{
}

/* Nothing is mapped into user space, so there is nothing to revoke. */
static void simhca_disassociate_ucontext(struct ib_ucontext *uctx)
{
}

static int simhca_alloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	return 0;
}

static int simhca_dealloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	return 0;
}

/*
 * The kernel's ops change shape over time; built and selftested on Debian's
 * 6.1 and 7.2: create_cq takes the uverbs attribute bundle from 6.11, and
 * reg_user_mr a DMA handle (struct ib_dmah) from 6.17.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define SIMHCA_CQ_UDATA struct uverbs_attr_bundle *attrs
#else
#define SIMHCA_CQ_UDATA struct ib_udata *udata
#endif
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 17, 0)
#define SIMHCA_MR_DMAH struct ib_dmah *dmah,
#else
#define SIMHCA_MR_DMAH
#endif
/* bus attribute callbacks take a const bus_type from 6.4 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
#define SIMHCA_BUS const struct bus_type
#else
#define SIMHCA_BUS struct bus_type
#endif

/*
 * Completions: the only ones are flushes (IB_WC_WR_FLUSH_ERR) of receives
 * posted to a QP that goes to ERR, as hardware reports them. Consumers that
 * stop a QP wait for these: without them IPoIB waits 5 s on every close and
 * ib_drain_rq() forever.
 */
static void simhca_cq_notify_work(struct work_struct *work)
{
	struct simhca_cq *cq = container_of(work, struct simhca_cq,
					    notify_work);
	bool call;

	spin_lock_irq(&cq->lock);
	call = cq->armed && !list_empty(&cq->flushed);
	if (call)
		cq->armed = false;
	spin_unlock_irq(&cq->lock);
	/* from a work item: never re-entered from the consumer's own calls */
	if (call && cq->ibcq.comp_handler) {
		local_bh_disable();
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
		local_bh_enable();
	}
}

static int simhca_create_cq(struct ib_cq *ibcq,
			    const struct ib_cq_init_attr *attr,
			    SIMHCA_CQ_UDATA)
{
	struct simhca_cq *cq = to_scq(ibcq);

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > 65535)
		return -EINVAL;
	ibcq->cqe = attr->cqe;
	spin_lock_init(&cq->lock);
	INIT_LIST_HEAD(&cq->flushed);
	INIT_WORK(&cq->notify_work, simhca_cq_notify_work);
	return 0;
}

static int simhca_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct simhca_cq *cq = to_scq(ibcq);
	struct simhca_wqe *wqe, *tmp;

	cancel_work_sync(&cq->notify_work);
	list_for_each_entry_safe(wqe, tmp, &cq->flushed, list)
		kfree(wqe);
	return 0;
}

static int simhca_poll_cq(struct ib_cq *ibcq, int num_entries,
			  struct ib_wc *wc)
{
	struct simhca_cq *cq = to_scq(ibcq);
	struct simhca_wqe *wqe;
	unsigned long flags;
	int n = 0;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num_entries &&
	       (wqe = list_first_entry_or_null(&cq->flushed,
					       struct simhca_wqe, list))) {
		list_del(&wqe->list);
		memset(&wc[n], 0, sizeof(wc[n]));
		wc[n].wr_id = wqe->wr_id;
		wc[n].status = IB_WC_WR_FLUSH_ERR;
		wc[n].opcode = IB_WC_RECV;
		wc[n].qp = wqe->qp;
		kfree(wqe);
		n++;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

static int simhca_req_notify_cq(struct ib_cq *ibcq,
				enum ib_cq_notify_flags flags)
{
	struct simhca_cq *cq = to_scq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	cq->armed = true;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && !list_empty(&cq->flushed))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/* qp->rq_lock held: completes the receives on list as flushed. */
static void simhca_flush(struct ib_qp *ibqp, struct list_head *list)
{
	struct simhca_cq *cq = to_scq(ibqp->recv_cq);

	if (list_empty(list))
		return;
	spin_lock(&cq->lock);
	list_splice_tail_init(list, &cq->flushed);
	spin_unlock(&cq->lock);
	schedule_work(&cq->notify_work);
}

static int simhca_create_qp(struct ib_qp *ibqp,
			    struct ib_qp_init_attr *init,
			    struct ib_udata *udata)
{
	struct simhca_ib *sib = to_sib(ibqp->device);
	struct simhca_qp *qp = to_sqp(ibqp);
	int qpn;

	if (init->create_flags)
		return -EOPNOTSUPP;
	if (init->srq || init->rwq_ind_tbl)
		return -EOPNOTSUPP;
	spin_lock_init(&qp->rq_lock);
	INIT_LIST_HEAD(&qp->rq);

	switch (init->qp_type) {
	case IB_QPT_SMI:
		/* the MAD layer's QP0, on IB ports only */
		if (!sib->sdev->link_ib)
			return -EOPNOTSUPP;
		if (init->port_num != 1)
			return -EINVAL;
		qpn = 0;
		break;
	case IB_QPT_GSI:
		if (init->port_num != 1)
			return -EINVAL;
		qpn = 1;
		break;
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		qpn = ida_alloc_range(&sib->qpn_ida, 2, 0xffffff, GFP_KERNEL);
		if (qpn < 0)
			return qpn;
		break;
	default:
		return -EOPNOTSUPP;
	}

	ibqp->qp_num = qpn;
	qp->state = IB_QPS_RESET;
	qp->cap = init->cap;
	qp->sq_sig_type = init->sq_sig_type;
	return 0;
}

static int simhca_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			    int mask, struct ib_udata *udata)
{
	struct simhca_qp *qp = to_sqp(ibqp);
	struct simhca_wqe *wqe, *tmp;
	unsigned long flags;
	LIST_HEAD(drop);

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	if (mask & IB_QP_STATE) {
		spin_lock_irqsave(&qp->rq_lock, flags);
		qp->state = attr->qp_state;
		if (qp->state == IB_QPS_ERR)
			simhca_flush(ibqp, &qp->rq);
		else if (qp->state == IB_QPS_RESET)
			list_splice_init(&qp->rq, &drop);	/* no completions */
		spin_unlock_irqrestore(&qp->rq_lock, flags);
		list_for_each_entry_safe(wqe, tmp, &drop, list)
			kfree(wqe);
	}
	if (mask & IB_QP_QKEY)
		qp->qkey = attr->qkey;
	if (mask & IB_QP_PKEY_INDEX)
		qp->pkey_index = attr->pkey_index;
	if (mask & IB_QP_SQ_PSN)
		qp->sq_psn = attr->sq_psn;
	if (mask & IB_QP_RQ_PSN)
		qp->rq_psn = attr->rq_psn;
	return 0;
}

static int simhca_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			   int mask, struct ib_qp_init_attr *init)
{
	struct simhca_qp *qp = to_sqp(ibqp);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->path_mtu = IB_MTU_1024;
	attr->qkey = qp->qkey;
	attr->pkey_index = qp->pkey_index;
	attr->sq_psn = qp->sq_psn;
	attr->rq_psn = qp->rq_psn;
	attr->port_num = 1;
	attr->cap = qp->cap;
	init->qp_type = ibqp->qp_type;
	init->cap = qp->cap;
	init->sq_sig_type = qp->sq_sig_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	return 0;
}

static int simhca_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct simhca_ib *sib = to_sib(ibqp->device);
	struct simhca_cq *cq = to_scq(ibqp->recv_cq);
	struct simhca_qp *qp = to_sqp(ibqp);
	struct simhca_wqe *wqe, *tmp;

	/* posted receives, and flushed ones nobody polled, go with the QP */
	list_for_each_entry_safe(wqe, tmp, &qp->rq, list)
		kfree(wqe);
	spin_lock_irq(&cq->lock);
	list_for_each_entry_safe(wqe, tmp, &cq->flushed, list) {
		if (wqe->qp != ibqp)
			continue;
		list_del(&wqe->list);
		kfree(wqe);
	}
	spin_unlock_irq(&cq->lock);
	if (ibqp->qp_num >= 2)
		ida_free(&sib->qpn_ida, ibqp->qp_num);
	return 0;
}

static int simhca_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			    const struct ib_send_wr **bad_wr)
{
	*bad_wr = wr;
	return -EOPNOTSUPP;
}

/*
 * Receives are accepted and never complete, except as flushed when the QP is
 * (or goes) in ERR. The MAD layer posts receive buffers on QP0/QP1 when it
 * opens a port, and frees them itself on close.
 */
static int simhca_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
			    const struct ib_recv_wr **bad_wr)
{
	struct simhca_qp *qp = to_sqp(ibqp);
	struct simhca_wqe *wqe;
	unsigned long flags;
	LIST_HEAD(one);

	for (; wr; wr = wr->next) {
		wqe = kmalloc(sizeof(*wqe), GFP_ATOMIC);
		if (!wqe) {
			*bad_wr = wr;
			return -ENOMEM;
		}
		wqe->qp = ibqp;
		wqe->wr_id = wr->wr_id;
		spin_lock_irqsave(&qp->rq_lock, flags);
		if (qp->state == IB_QPS_ERR) {
			list_add_tail(&wqe->list, &one);
			simhca_flush(ibqp, &one);
		} else {
			list_add_tail(&wqe->list, &qp->rq);
		}
		spin_unlock_irqrestore(&qp->rq_lock, flags);
	}
	return 0;
}

static struct ib_mr *simhca_get_dma_mr(struct ib_pd *pd, int access)
{
	struct simhca_ib *sib = to_sib(pd->device);
	struct simhca_mr *mr;
	u32 key;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	key = (u32)atomic_inc_return(&sib->next_key) << 8;
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	return &mr->ibmr;
}

static struct ib_mr *simhca_reg_user_mr(struct ib_pd *pd, u64 start,
					u64 length, u64 virt, int access,
					SIMHCA_MR_DMAH
					struct ib_udata *udata)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static int simhca_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	kfree(container_of(ibmr, struct simhca_mr, ibmr));
	return 0;
}

/*
 * IB only: ib_sa makes an address handle to the SM LID when the port comes up,
 * and IPoIB ones to its peers; nothing is ever sent through them.
 */
static int simhca_create_ah(struct ib_ah *ibah,
			    struct rdma_ah_init_attr *init_attr,
			    struct ib_udata *udata)
{
	if (udata)
		return -EOPNOTSUPP;
	if (init_attr->ah_attr->type != RDMA_AH_ATTR_TYPE_IB)
		return -EINVAL;
	return 0;
}

static int simhca_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Port counters: PMA (ports/N/counters/) and hw_counters                 */
/* ---------------------------------------------------------------------- */

/* sysfs name and width in bits (the largest value set_counters takes) */
static const struct {
	const char *name;
	u8 bits;
} simhca_cnt_info[SIMHCA_CNT_NUM] = {
	[SIMHCA_SYMBOL_ERROR] = { "symbol_error", 16 },
	[SIMHCA_LINK_ERROR_RECOVERY] = { "link_error_recovery", 8 },
	[SIMHCA_LINK_DOWNED] = { "link_downed", 8 },
	[SIMHCA_RCV_ERRORS] = { "port_rcv_errors", 16 },
	[SIMHCA_RCV_REMPHYS_ERRORS] = { "port_rcv_remote_physical_errors", 16 },
	[SIMHCA_RCV_SWITCH_RELAY_ERRORS] = { "port_rcv_switch_relay_errors", 16 },
	[SIMHCA_XMIT_DISCARDS] = { "port_xmit_discards", 16 },
	[SIMHCA_XMIT_CONSTRAINT_ERRORS] = { "port_xmit_constraint_errors", 8 },
	[SIMHCA_RCV_CONSTRAINT_ERRORS] = { "port_rcv_constraint_errors", 8 },
	[SIMHCA_LOCAL_LINK_INTEGRITY_ERRORS] = { "local_link_integrity_errors", 4 },
	[SIMHCA_EXCESSIVE_BUFFER_OVERRUN_ERRORS] = { "excessive_buffer_overrun_errors", 4 },
	[SIMHCA_VL15_DROPPED] = { "VL15_dropped", 16 },
	[SIMHCA_XMIT_WAIT] = { "port_xmit_wait", 32 },
	[SIMHCA_XMIT_DATA] = { "port_xmit_data", 64 },
	[SIMHCA_RCV_DATA] = { "port_rcv_data", 64 },
	[SIMHCA_XMIT_PACKETS] = { "port_xmit_packets", 64 },
	[SIMHCA_RCV_PACKETS] = { "port_rcv_packets", 64 },
	[SIMHCA_UNICAST_XMIT_PACKETS] = { "unicast_xmit_packets", 64 },
	[SIMHCA_UNICAST_RCV_PACKETS] = { "unicast_rcv_packets", 64 },
	[SIMHCA_MULTICAST_XMIT_PACKETS] = { "multicast_xmit_packets", 64 },
	[SIMHCA_MULTICAST_RCV_PACKETS] = { "multicast_rcv_packets", 64 },
	[SIMHCA_HW_OUT_OF_BUFFER] = { "out_of_buffer", 64 },
	[SIMHCA_HW_OUT_OF_SEQUENCE] = { "out_of_sequence", 64 },
	[SIMHCA_HW_DUPLICATE_REQUEST] = { "duplicate_request", 64 },
	[SIMHCA_HW_RNR_NAK_RETRY_ERR] = { "rnr_nak_retry_err", 64 },
	[SIMHCA_HW_PACKET_SEQ_ERR] = { "packet_seq_err", 64 },
	[SIMHCA_HW_IMPLIED_NAK_SEQ_ERR] = { "implied_nak_seq_err", 64 },
	[SIMHCA_HW_LOCAL_ACK_TIMEOUT_ERR] = { "local_ack_timeout_err", 64 },
	[SIMHCA_HW_RP_CNP_IGNORED] = { "rp_cnp_ignored", 64 },
	[SIMHCA_HW_RP_CNP_HANDLED] = { "rp_cnp_handled", 64 },
	[SIMHCA_HW_NP_ECN_MARKED_ROCE_PACKETS] = { "np_ecn_marked_roce_packets", 64 },
	[SIMHCA_HW_NP_CNP_SENT] = { "np_cnp_sent", 64 },
};

/* filled from simhca_cnt_info at init: ib_core keeps a pointer to it */
static struct rdma_stat_desc simhca_hw_descs[SIMHCA_CNT_NUM - SIMHCA_HW_FIRST];

/* how many hw_counters a device has: IB ports have no congestion counters */
static int simhca_hw_num(const struct simhca_dev *sdev)
{
	return (sdev->link_ib ? SIMHCA_HW_ROCE_FIRST : SIMHCA_CNT_NUM) -
	       SIMHCA_HW_FIRST;
}

static void simhca_pma_class_port_info(struct ib_pma_mad *pmad)
{
	struct ib_class_port_info *cpi = (void *)pmad->data;

	cpi->base_version = 1;
	cpi->class_version = 1;
	/* EXT_WIDTH: sysfs reads the 64-bit data/packet counters */
	cpi->capability_mask = IB_PMA_CLASS_CAP_EXT_WIDTH |
			       IB_PMA_CLASS_CAP_XMIT_WAIT;
}

/* cnt: a snapshot. The 32-bit data and packet counters saturate. */
static void simhca_pma_port_counters(struct ib_pma_mad *pmad, const u64 *cnt)
{
	struct ib_pma_portcounters *pc = (void *)pmad->data;

	pc->symbol_error_counter = cpu_to_be16(cnt[SIMHCA_SYMBOL_ERROR]);
	pc->link_error_recovery_counter = cnt[SIMHCA_LINK_ERROR_RECOVERY];
	pc->link_downed_counter = cnt[SIMHCA_LINK_DOWNED];
	pc->port_rcv_errors = cpu_to_be16(cnt[SIMHCA_RCV_ERRORS]);
	pc->port_rcv_remphys_errors =
		cpu_to_be16(cnt[SIMHCA_RCV_REMPHYS_ERRORS]);
	pc->port_rcv_switch_relay_errors =
		cpu_to_be16(cnt[SIMHCA_RCV_SWITCH_RELAY_ERRORS]);
	pc->port_xmit_discards = cpu_to_be16(cnt[SIMHCA_XMIT_DISCARDS]);
	pc->port_xmit_constraint_errors = cnt[SIMHCA_XMIT_CONSTRAINT_ERRORS];
	pc->port_rcv_constraint_errors = cnt[SIMHCA_RCV_CONSTRAINT_ERRORS];
	pc->link_overrun_errors =
		cnt[SIMHCA_LOCAL_LINK_INTEGRITY_ERRORS] << 4 |
		cnt[SIMHCA_EXCESSIVE_BUFFER_OVERRUN_ERRORS];
	pc->vl15_dropped = cpu_to_be16(cnt[SIMHCA_VL15_DROPPED]);
	pc->port_xmit_data = cpu_to_be32(min_t(u64, cnt[SIMHCA_XMIT_DATA],
					       U32_MAX));
	pc->port_rcv_data = cpu_to_be32(min_t(u64, cnt[SIMHCA_RCV_DATA],
					      U32_MAX));
	pc->port_xmit_packets = cpu_to_be32(min_t(u64, cnt[SIMHCA_XMIT_PACKETS],
						  U32_MAX));
	pc->port_rcv_packets = cpu_to_be32(min_t(u64, cnt[SIMHCA_RCV_PACKETS],
						 U32_MAX));
	pc->port_xmit_wait = cpu_to_be32(cnt[SIMHCA_XMIT_WAIT]);
}

static void simhca_pma_port_counters_ext(struct ib_pma_mad *pmad,
					 const u64 *cnt)
{
	struct ib_pma_portcounters_ext *pc = (void *)pmad->data;

	pc->port_xmit_data = cpu_to_be64(cnt[SIMHCA_XMIT_DATA]);
	pc->port_rcv_data = cpu_to_be64(cnt[SIMHCA_RCV_DATA]);
	pc->port_xmit_packets = cpu_to_be64(cnt[SIMHCA_XMIT_PACKETS]);
	pc->port_rcv_packets = cpu_to_be64(cnt[SIMHCA_RCV_PACKETS]);
	pc->port_unicast_xmit_packets =
		cpu_to_be64(cnt[SIMHCA_UNICAST_XMIT_PACKETS]);
	pc->port_unicast_rcv_packets =
		cpu_to_be64(cnt[SIMHCA_UNICAST_RCV_PACKETS]);
	pc->port_multicast_xmit_packets =
		cpu_to_be64(cnt[SIMHCA_MULTICAST_XMIT_PACKETS]);
	pc->port_multicast_rcv_packets =
		cpu_to_be64(cnt[SIMHCA_MULTICAST_RCV_PACKETS]);
}

/*
 * The port's Performance Management Agent, as an HCA's firmware runs it:
 * ib_core's sysfs creates ports/N/counters/ only for a device with this op,
 * and reads every file through it (Get(ClassPortInfo) once, to choose between
 * the 32-bit and the extended table).
 *
 * Only PerfMgmt Get is answered. Anything else is left unhandled
 * (IB_MAD_RESULT_FAILURE): received MADs go to the MAD agents as without
 * this op (none are ever received), and a locally addressed directed-route
 * SMP, which ib_mad now hands here instead of posting to QP0, fails to send
 * (EINVAL; it failed with EOPNOTSUPP from post_send before): there is no SMA.
 */
static int simhca_process_mad(struct ib_device *ibdev, int mad_flags, u32 port,
			      const struct ib_wc *in_wc,
			      const struct ib_grh *in_grh,
			      const struct ib_mad *in, struct ib_mad *out,
			      size_t *out_mad_size, u16 *out_mad_pkey_index)
{
	struct simhca_dev *sdev = to_sib(ibdev)->sdev;
	struct ib_pma_mad *pout = (struct ib_pma_mad *)out;
	u64 cnt[SIMHCA_CNT_NUM];

	if (in->mad_hdr.mgmt_class != IB_MGMT_CLASS_PERF_MGMT ||
	    in->mad_hdr.class_version != 1 ||
	    in->mad_hdr.method != IB_MGMT_METHOD_GET || port != 1 ||
	    *out_mad_size < sizeof(*out))
		return IB_MAD_RESULT_FAILURE;

	memset(out, 0, sizeof(*out));
	out->mad_hdr = in->mad_hdr;
	out->mad_hdr.method = IB_MGMT_METHOD_GET_RESP;
	out->mad_hdr.status = 0;

	spin_lock(&sdev->cnt_lock);
	memcpy(cnt, sdev->cnt, sizeof(cnt));
	spin_unlock(&sdev->cnt_lock);

	switch (in->mad_hdr.attr_id) {
	case IB_PMA_CLASS_PORT_INFO:
		simhca_pma_class_port_info(pout);
		break;
	case IB_PMA_PORT_COUNTERS:
		simhca_pma_port_counters(pout, cnt);
		break;
	case IB_PMA_PORT_COUNTERS_EXT:
		simhca_pma_port_counters_ext(pout, cnt);
		break;
	default:
		out->mad_hdr.status =
			cpu_to_be16(IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);
		return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
	}
	/* PortSelect: the request's, as the PMA echoes it */
	if (in->mad_hdr.attr_id != IB_PMA_CLASS_PORT_INFO)
		pout->data[1] = ((const struct ib_pma_mad *)in)->data[1];
	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
}

/* ports/1/hw_counters/ and `rdma statistic show link` */
static struct rdma_hw_stats *simhca_alloc_hw_port_stats(struct ib_device *ibdev,
							u32 port)
{
	/* lifespan 0: sysfs reads show the latest set_counters at once */
	return rdma_alloc_hw_stats_struct(simhca_hw_descs,
					  simhca_hw_num(to_sib(ibdev)->sdev), 0);
}

static int simhca_get_hw_stats(struct ib_device *ibdev,
			       struct rdma_hw_stats *stats, u32 port, int index)
{
	struct simhca_dev *sdev = to_sib(ibdev)->sdev;
	int i;

	if (!port)
		return -EINVAL;		/* no per-device stats */
	spin_lock(&sdev->cnt_lock);
	for (i = 0; i < stats->num_counters; i++)
		stats->value[i] = sdev->cnt[SIMHCA_HW_FIRST + i];
	spin_unlock(&sdev->cnt_lock);
	return stats->num_counters;
}

static const struct ib_device_ops simhca_ib_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = 1,

	.query_device = simhca_query_device,
	.query_port = simhca_query_port,
	.get_port_immutable = simhca_get_port_immutable,
	.get_link_layer = simhca_get_link_layer,
	.query_pkey = simhca_query_pkey,
	.get_dev_fw_str = simhca_get_dev_fw_str,
	.alloc_ucontext = simhca_alloc_ucontext,
	.dealloc_ucontext = simhca_dealloc_ucontext,
	.disassociate_ucontext = simhca_disassociate_ucontext,
	.alloc_pd = simhca_alloc_pd,
	.dealloc_pd = simhca_dealloc_pd,
	.create_cq = simhca_create_cq,
	.destroy_cq = simhca_destroy_cq,
	.poll_cq = simhca_poll_cq,
	.req_notify_cq = simhca_req_notify_cq,
	.create_qp = simhca_create_qp,
	.modify_qp = simhca_modify_qp,
	.query_qp = simhca_query_qp,
	.destroy_qp = simhca_destroy_qp,
	.post_send = simhca_post_send,
	.post_recv = simhca_post_recv,
	.get_dma_mr = simhca_get_dma_mr,
	.reg_user_mr = simhca_reg_user_mr,
	.dereg_mr = simhca_dereg_mr,
	.process_mad = simhca_process_mad,
	.alloc_hw_port_stats = simhca_alloc_hw_port_stats,
	.get_hw_stats = simhca_get_hw_stats,

	INIT_RDMA_OBJ_SIZE(ib_ucontext, simhca_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_pd, simhca_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_cq, simhca_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_qp, simhca_qp, ibqp),
};

/* Added to simhca_ib_ops for a device with an InfiniBand port. */
static const struct ib_device_ops simhca_ib_link_ops = {
	.query_gid = simhca_query_gid,
	.modify_port = simhca_modify_port,
	.create_ah = simhca_create_ah,
	.destroy_ah = simhca_destroy_ah,

	INIT_RDMA_OBJ_SIZE(ib_ah, simhca_ah, ibah),
};

/* ---------------------------------------------------------------------- */
/* Port state: follows the bound netdev                                   */
/* ---------------------------------------------------------------------- */

/* rtnl held. Dispatches PORT_ACTIVE/PORT_ERR when the state changes. */
static void simhca_update_port(struct simhca_dev *sdev)
{
	bool up = simhca_port_up(sdev, rtnl_dereference(sdev->netdev));
	struct ib_event ev = {};

	ASSERT_RTNL();
	if (up == sdev->port_active)
		return;
	sdev->port_active = up;
	if (!sdev->ib)
		return;
	ev.device = &sdev->ib->ibdev;
	ev.element.port_num = 1;
	ev.event = up ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR;
	ib_dispatch_event(&ev);		/* queued to ib_wq: fine under rtnl */
}

/* rtnl held. The netdev is going away for good: let go of it. */
static void simhca_release_netdev(struct simhca_dev *sdev)
{
	struct net_device *ndev = rtnl_dereference(sdev->netdev);

	/*
	 * RCU readers (query_port) are done with ndev before it is freed:
	 * unregister_netdevice_many() does synchronize_net() after the
	 * NETDEV_UNREGISTER notifiers.
	 */
	RCU_INIT_POINTER(sdev->netdev, NULL);
	if (sdev->ib && !sdev->link_ib)
		ib_device_set_netdev(&sdev->ib->ibdev, NULL, 1);
	simhca_update_port(sdev);
	dev_put(ndev);
}

static int simhca_netdev_event(struct notifier_block *nb, unsigned long event,
			       void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct simhca_dev *sdev;

	switch (event) {
	case NETDEV_UNREGISTER:
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
	case NETDEV_REGISTER:
		break;
	default:
		return NOTIFY_DONE;
	}

	ASSERT_RTNL();
	list_for_each_entry(sdev, &simhca_devs, list) {
		if (rtnl_dereference(sdev->netdev) != ndev)
			continue;
		/*
		 * NETDEV_UNREGISTER also comes when the netdev moves to
		 * another netns; then reg_state stays NETREG_REGISTERED and
		 * the device keeps its netdev (like irdma/mlx5). Only a netdev
		 * being destroyed (NETREG_UNREGISTERING, or UNREGISTERED for
		 * the rebroadcasts while refs are awaited) is let go.
		 */
		if (event == NETDEV_UNREGISTER &&
		    ndev->reg_state != NETREG_REGISTERED)
			simhca_release_netdev(sdev);
		else
			simhca_update_port(sdev);
	}
	return NOTIFY_DONE;
}

static struct notifier_block simhca_netdev_nb = {
	.notifier_call = simhca_netdev_event,
};

/* ---------------------------------------------------------------------- */
/* Auxiliary driver: creates / destroys the ib_device                     */
/* ---------------------------------------------------------------------- */

static int simhca_aux_probe(struct auxiliary_device *adev,
			    const struct auxiliary_device_id *id)
{
	struct simhca_dev *sdev = adev_to_sdev(adev);
	struct simhca_ib *sib;
	struct ib_device *ibdev;
	struct net_device *ndev;
	int ret;

	sib = ib_alloc_device(simhca_ib, ibdev);
	if (!sib) {
		ret = -ENOMEM;
		goto out;
	}
	sib->sdev = sdev;
	ida_init(&sib->qpn_ida);
	spin_lock_init(&sib->port_lock);
	sib->port_cap_flags = SIMHCA_IB_PORT_CAPS;
	ibdev = &sib->ibdev;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = 1;
	ibdev->dev.parent = &adev->dev;
	strscpy(ibdev->node_desc, sdev->link_ib ? "simhca simulated IB HCA" :
						  "simhca simulated RoCE HCA",
		sizeof(ibdev->node_desc));
	ib_set_device_ops(ibdev, &simhca_ib_ops);
	if (sdev->link_ib)
		ib_set_device_ops(ibdev, &simhca_ib_link_ops);

	rtnl_lock();
	ndev = rtnl_dereference(sdev->netdev);
	if (sdev->link_ib) {
		/* unique per ID; an IB port has no bound netdev */
		ibdev->node_guid = simhca_ib_guid(sdev->id);
		ret = 0;
	} else if (ndev) {
		addrconf_addr_eui48((u8 *)&ibdev->node_guid, ndev->dev_addr);
		/* ib_core takes its own reference on ndev. */
		ret = ib_device_set_netdev(ibdev, ndev, 1);
	} else {
		ibdev->node_guid = cpu_to_be64(0x0200000000000000ULL | sdev->id);
		ret = 0;
	}
	rtnl_unlock();
	if (ret)
		goto err_dealloc;

	/* name pattern is validated: only [A-Za-z0-9_.-] and one "%d" */
	ret = ib_register_device(ibdev, sdev->pattern, NULL);
	if (ret)
		goto err_dealloc;

	rtnl_lock();
	/* The netdev may have been destroyed while we were registering. */
	ndev = rtnl_dereference(sdev->netdev);
	if (!ndev && !sdev->link_ib)
		ib_device_set_netdev(ibdev, NULL, 1);
	sdev->ib = sib;
	sdev->port_active = simhca_port_up(sdev, ndev);
	rtnl_unlock();

	auxiliary_set_drvdata(adev, sib);
	dev_info(&adev->dev, "registered %s\n", dev_name(&ibdev->dev));
	sdev->probe_err = 0;
	return 0;

err_dealloc:
	ida_destroy(&sib->qpn_ida);
	ib_dealloc_device(ibdev);	/* also drops the netdev ref if taken */
out:
	sdev->probe_err = ret;
	return ret;
}

static void simhca_aux_remove(struct auxiliary_device *adev)
{
	struct simhca_dev *sdev = adev_to_sdev(adev);
	struct simhca_ib *sib;

	rtnl_lock();
	sib = sdev->ib;
	sdev->ib = NULL;
	rtnl_unlock();
	if (!sib)
		return;

	/* Works wherever the device is (any netns); drops the netdev ref. */
	ib_unregister_device(&sib->ibdev);
	ida_destroy(&sib->qpn_ida);
	ib_dealloc_device(&sib->ibdev);
	auxiliary_set_drvdata(adev, NULL);
}

static const struct auxiliary_device_id simhca_aux_ids[] = {
	{ .name = DRV_NAME "." SIMHCA_AUX_NAME },
	{}
};
MODULE_DEVICE_TABLE(auxiliary, simhca_aux_ids);

static struct auxiliary_driver simhca_aux_driver = {
	.name = SIMHCA_AUX_NAME,
	.probe = simhca_aux_probe,
	.remove = simhca_aux_remove,
	.id_table = simhca_aux_ids,
};

/* ---------------------------------------------------------------------- */
/* Device creation / deletion                                             */
/* ---------------------------------------------------------------------- */

static void simhca_adev_release(struct device *dev)
{
	struct auxiliary_device *adev = to_auxiliary_dev(dev);

	kfree(adev_to_sdev(adev));
}

/* "irdma%d", "mlx5_%d", "rocep1s0": [A-Za-z0-9_.-] and at most one "%d". */
static bool simhca_pattern_ok(const char *p)
{
	size_t len = strlen(p);
	int pct = 0;
	size_t i;

	if (len == 0 || len >= IB_DEVICE_NAME_MAX || p[0] == '.')
		return false;
	for (i = 0; i < len; i++) {
		if (p[i] == '%') {
			if (p[i + 1] != 'd' || ++pct > 1)
				return false;
			i++;
			continue;
		}
		if (!isalnum(p[i]) && p[i] != '_' && p[i] != '-' &&
		    p[i] != '.')
			return false;
	}
	return true;
}

/* simhca_mutex held. */
static struct simhca_dev *simhca_find(u32 id)
{
	struct simhca_dev *sdev;

	list_for_each_entry(sdev, &simhca_devs, list)
		if (sdev->id == id)
			return sdev;
	return NULL;
}

/* Takes sdev off the list; returns its netdev (the caller puts it). */
static struct net_device *simhca_unlist(struct simhca_dev *sdev)
{
	struct net_device *ndev;

	rtnl_lock();
	list_del(&sdev->list);
	ndev = rtnl_dereference(sdev->netdev);
	RCU_INIT_POINTER(sdev->netdev, NULL);
	rtnl_unlock();
	return ndev;
}

/* simhca_mutex held. Unregisters the ib_device and frees everything. */
static void simhca_dev_destroy(struct simhca_dev *sdev)
{
	struct net_device *ndev;
	u32 id = sdev->id;

	ndev = simhca_unlist(sdev);
	/*
	 * Unbinds the driver: simhca_aux_remove unregisters the ib_device,
	 * after which query_port cannot run any more, so ndev can be put.
	 */
	auxiliary_device_delete(&sdev->adev);
	synchronize_rcu();
	if (ndev)
		dev_put(ndev);
	auxiliary_device_uninit(&sdev->adev);	/* release frees sdev */
	ida_free(&simhca_ida, id);
}

/*
 * simhca_mutex held. ifname NULL: no netdev (IB only); the device's parent is
 * simhca's root and its port is always ACTIVE.
 */
static int simhca_dev_create(const char *pattern, const char *ifname,
			     int want_id, bool link_ib)
{
	struct net *net = current->nsproxy->net_ns;
	struct simhca_dev *sdev;
	struct net_device *ndev;
	struct device *parent;
	int id, ret;

	if (want_id >= 0)
		id = ida_alloc_range(&simhca_ida, want_id, want_id, GFP_KERNEL);
	else
		id = ida_alloc_max(&simhca_ida, link_ib ? SIMHCA_IB_MAX_ID :
							  SIMHCA_MAX_ID,
				   GFP_KERNEL);
	if (id < 0)
		return (id == -ENOSPC && want_id >= 0) ? -EEXIST : id;

	sdev = kzalloc(sizeof(*sdev), GFP_KERNEL);
	if (!sdev) {
		ida_free(&simhca_ida, id);
		return -ENOMEM;
	}
	sdev->id = id;
	strscpy(sdev->pattern, pattern, sizeof(sdev->pattern));
	sdev->link_ib = link_ib;
	sdev->always_up = !ifname;
	sdev->probe_err = -ENODEV;	/* until the probe says otherwise */
	spin_lock_init(&sdev->cnt_lock);
	INIT_LIST_HEAD(&sdev->list);
	sdev->adev.name = SIMHCA_AUX_NAME;
	sdev->adev.id = id;
	/*
	 * A netdev of a PCI function (a NIC of the VM's PCI topology) gives
	 * the auxiliary device that function as its parent, as irdma's
	 * ice.roce.N and mlx5's mlx5_core.rdma.N are: sysfs then shows the
	 * HCA's PCI address, NUMA node and PCIe path. Others: simhca's root.
	 */
	rtnl_lock();
	ndev = ifname ? __dev_get_by_name(net, ifname) : NULL;
	parent = ndev && ndev->dev.parent && dev_is_pci(ndev->dev.parent) ?
			 get_device(ndev->dev.parent) : get_device(simhca_root);
	rtnl_unlock();
	sdev->adev.dev.parent = parent;
	sdev->adev.dev.release = simhca_adev_release;

	ret = auxiliary_device_init(&sdev->adev);
	if (ret) {
		put_device(parent);
		kfree(sdev);
		ida_free(&simhca_ida, id);
		return ret;
	}
	/* From here on, auxiliary_device_uninit() frees sdev. */

	rtnl_lock();
	ndev = ifname ? __dev_get_by_name(net, ifname) : NULL;
	if (!ifname) {
		list_add_tail(&sdev->list, &simhca_devs);
	} else if (!ndev) {
		ret = -ENODEV;
	} else if (ndev->type != ARPHRD_ETHER) {
		ret = -EINVAL;
	} else {
		dev_hold(ndev);
		rcu_assign_pointer(sdev->netdev, ndev);
		list_add_tail(&sdev->list, &simhca_devs);
	}
	rtnl_unlock();
	if (ret)
		goto err_uninit;

	ret = auxiliary_device_add(&sdev->adev);	/* probes synchronously */
	put_device(parent);	/* device_add holds its own reference */
	if (ret)
		goto err_unlist;
	if (sdev->probe_err) {
		ret = sdev->probe_err;
		simhca_dev_destroy(sdev);
		return ret;
	}
	return 0;

err_unlist:
	ndev = simhca_unlist(sdev);
	if (ndev)
		dev_put(ndev);
	auxiliary_device_uninit(&sdev->adev);
	ida_free(&simhca_ida, id);
	return ret;
err_uninit:
	put_device(parent);
	auxiliary_device_uninit(&sdev->adev);
	ida_free(&simhca_ida, id);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* Control: /sys/bus/simhca/{new_device,del_device,list}                  */
/* ---------------------------------------------------------------------- */

static ssize_t new_device_store(SIMHCA_BUS *bus, const char *buf,
				size_t count)
{
	char pattern[IB_DEVICE_NAME_MAX + 1], ifname[IFNAMSIZ + 1];
	char arg3[16], arg4[16];
	bool link_ib = false;
	unsigned int id;
	int want_id = -1;
	char tail;
	int n, ret;

	/* widths: one more than allowed so that overlong input is caught */
	n = sscanf(buf, "%64s %16s %15s %15s %c", pattern, ifname, arg3, arg4,
		   &tail);
	if (n == 3 && !strcmp(arg3, "ib")) {
		link_ib = true;
	} else if (n == 3 || n == 4) {
		if (kstrtouint(arg3, 10, &id))
			n = 0;
		else
			want_id = min(id, SIMHCA_MAX_ID + 1);	/* ERANGE below */
		if (n == 4 && !strcmp(arg4, "ib"))
			link_ib = true;
		else if (n == 4)
			n = 0;
	}
	if (n < 2 || n > 4) {
		pr_err(DRV_NAME ": new_device wants \"NAME_PATTERN NETDEV_NAME|- [ID] [ib]\"\n");
		return -EINVAL;
	}
	if (!simhca_pattern_ok(pattern)) {
		pr_err(DRV_NAME ": bad name pattern \"%s\" ([A-Za-z0-9_.-], one %%d, < %d chars)\n",
		       pattern, IB_DEVICE_NAME_MAX);
		return -EINVAL;
	}
	if (strlen(ifname) >= IFNAMSIZ)
		return -EINVAL;
	if (want_id > (link_ib ? SIMHCA_IB_MAX_ID : SIMHCA_MAX_ID))
		return -ERANGE;

	mutex_lock(&simhca_mutex);
	if (!simhca_enabled)
		ret = -EBUSY;
	else
		/* "-": no netdev, for IB devices (RoCE ones look "-" up) */
		ret = simhca_dev_create(pattern,
					link_ib && !strcmp(ifname, "-") ?
						NULL : ifname,
					want_id, link_ib);
	mutex_unlock(&simhca_mutex);
	return ret ? ret : count;
}
static BUS_ATTR_WO(new_device);

static ssize_t del_device_store(SIMHCA_BUS *bus, const char *buf,
				size_t count)
{
	struct simhca_dev *sdev;
	unsigned int id;
	int ret;

	ret = kstrtouint(skip_spaces(buf), 10, &id);
	if (ret)
		return ret;

	mutex_lock(&simhca_mutex);
	if (!simhca_enabled) {
		ret = -EBUSY;
	} else {
		sdev = simhca_find(id);
		if (sdev)
			simhca_dev_destroy(sdev);
		else
			ret = -ENOENT;
	}
	mutex_unlock(&simhca_mutex);
	return ret ? ret : count;
}
static BUS_ATTR_WO(del_device);

/* The counter named name on sdev, or -EINVAL if it has none of that name. */
static int simhca_cnt_index(const struct simhca_dev *sdev, const char *name)
{
	int i;

	for (i = 0; i < SIMHCA_HW_FIRST + simhca_hw_num(sdev); i++)
		if (!strcmp(name, simhca_cnt_info[i].name))
			return i;
	return -EINVAL;
}

/*
 * "ID NAME VALUE [NAME VALUE]...": all pairs are checked before any is set,
 * so a refused write changes nothing.
 */
static ssize_t set_counters_store(SIMHCA_BUS *bus, const char *buf,
				  size_t count)
{
	int idx[SIMHCA_CNT_NUM];
	u64 val[SIMHCA_CNT_NUM];
	struct simhca_dev *sdev;
	char *copy, *p, *tok;
	int n = 0, i, ret;
	unsigned int id;
	u8 bits;

	copy = kstrndup(buf, count, GFP_KERNEL);
	if (!copy)
		return -ENOMEM;
	p = skip_spaces(copy);
	tok = strsep(&p, " \t\n");
	if (!tok || kstrtouint(tok, 10, &id)) {
		ret = -EINVAL;
		goto out_free;
	}

	mutex_lock(&simhca_mutex);
	sdev = simhca_enabled ? simhca_find(id) : NULL;
	ret = simhca_enabled ? (sdev ? 0 : -ENOENT) : -EBUSY;
	while (!ret) {
		p = p ? skip_spaces(p) : NULL;
		tok = p && *p ? strsep(&p, " \t\n") : NULL;
		if (!tok)
			break;
		if (n == SIMHCA_CNT_NUM) {
			ret = -E2BIG;
			break;
		}
		idx[n] = simhca_cnt_index(sdev, tok);
		if (idx[n] < 0) {
			pr_err(DRV_NAME ": set_counters: no counter \"%s\" on device %u\n",
			       tok, id);
			ret = idx[n];
			break;
		}
		p = p ? skip_spaces(p) : NULL;
		tok = p && *p ? strsep(&p, " \t\n") : NULL;
		if (!tok || kstrtou64(tok, 0, &val[n])) {
			ret = -EINVAL;
			break;
		}
		bits = simhca_cnt_info[idx[n]].bits;
		if (bits < 64 && val[n] >> bits) {
			ret = -ERANGE;	/* the field is narrower */
			break;
		}
		n++;
	}
	if (!ret && !n)
		ret = -EINVAL;
	if (!ret) {
		spin_lock(&sdev->cnt_lock);
		for (i = 0; i < n; i++)
			sdev->cnt[idx[i]] = val[i];
		spin_unlock(&sdev->cnt_lock);
	}
	mutex_unlock(&simhca_mutex);
out_free:
	kfree(copy);
	return ret ? ret : count;
}
static BUS_ATTR_WO(set_counters);

/* "ID IBDEV NETDEV AUXDEV\n" per device; "-" where there is none. */
static ssize_t list_show(SIMHCA_BUS *bus, char *buf)
{
	struct simhca_dev *sdev;
	ssize_t len = 0;

	rtnl_lock();
	list_for_each_entry(sdev, &simhca_devs, list) {
		struct net_device *ndev = rtnl_dereference(sdev->netdev);

		len += scnprintf(buf + len, PAGE_SIZE - len, "%u %s %s %s.%s.%u\n",
				 sdev->id,
				 sdev->ib ? sdev->ib->ibdev.name : "-",
				 ndev ? ndev->name : "-",
				 DRV_NAME, SIMHCA_AUX_NAME, sdev->id);
	}
	rtnl_unlock();
	return len;
}
static BUS_ATTR_RO(list);

static struct attribute *simhca_bus_attrs[] = {
	&bus_attr_new_device.attr,
	&bus_attr_del_device.attr,
	&bus_attr_list.attr,
	&bus_attr_set_counters.attr,
	NULL
};
ATTRIBUTE_GROUPS(simhca_bus);

static struct bus_type simhca_bus = {
	.name = DRV_NAME,
	.bus_groups = simhca_bus_groups,
};

/* ---------------------------------------------------------------------- */

static int __init simhca_init(void)
{
	int i, ret;

	for (i = 0; i < ARRAY_SIZE(simhca_hw_descs); i++)
		simhca_hw_descs[i].name = simhca_cnt_info[SIMHCA_HW_FIRST + i].name;

	simhca_root = root_device_register(DRV_NAME);
	if (IS_ERR(simhca_root))
		return PTR_ERR(simhca_root);

	ret = register_netdevice_notifier(&simhca_netdev_nb);
	if (ret)
		goto err_root;

	ret = auxiliary_driver_register(&simhca_aux_driver);
	if (ret)
		goto err_nb;

	ret = bus_register(&simhca_bus);
	if (ret)
		goto err_aux;

	mutex_lock(&simhca_mutex);
	simhca_enabled = true;
	mutex_unlock(&simhca_mutex);
	return 0;

err_aux:
	auxiliary_driver_unregister(&simhca_aux_driver);
err_nb:
	unregister_netdevice_notifier(&simhca_netdev_nb);
err_root:
	root_device_unregister(simhca_root);
	return ret;
}

static void __exit simhca_exit(void)
{
	struct simhca_dev *sdev;

	mutex_lock(&simhca_mutex);
	simhca_enabled = false;		/* writers now get -EBUSY */
	while ((sdev = list_first_entry_or_null(&simhca_devs,
						struct simhca_dev, list)))
		simhca_dev_destroy(sdev);
	mutex_unlock(&simhca_mutex);

	bus_unregister(&simhca_bus);
	auxiliary_driver_unregister(&simhca_aux_driver);
	unregister_netdevice_notifier(&simhca_netdev_nb);
	root_device_unregister(simhca_root);
	ida_destroy(&simhca_ida);
}

module_init(simhca_init);
module_exit(simhca_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("rdmans test suite");
MODULE_DESCRIPTION("Simulated RoCE and InfiniBand HCAs on auxiliary devices, for testing RDMA netns moves");
MODULE_SOFTDEP("pre: ib_core");
