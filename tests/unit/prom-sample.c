// SPDX-License-Identifier: Apache-2.0
/*
 * Prints the exporter's text for a fake sysfs tree (irdma with the IIJ E810 walkthrough's
 * counter names, rxe, a second port, mlx5's error and congestion counter
 * names, awkward netns and pod names), for
 * tests/unit/promtool.sh to run `promtool check metrics` on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakesys.h"
#include "rdmans/counters.h"
#include "rdmans/prom.h"

int main(void)
{
	static const char *const irdma_counters[] = {
		"RxECNMrkd",	  "RxUDP",	    "TxUDP",	      "cnpHandled",
		"cnpIgnored",	  "cnpSent",	    "ip4InOctets",    "ip4InPkts",
		"ip4OutOctets",	  "ip4OutPkts",	    "iwInRdmaReads",  "iwInRdmaSends",
		"iwInRdmaWrites", "iwOutRdmaReads", "iwOutRdmaSends", "iwOutRdmaWrites",
		"iwRdmaBnd",	  "iwRdmaInv",	    "tcpRetransSegs", "lifespan",
	};
	/* mlx5's and rxe's counter names, as the dashboard's error panels name them */
	static const char *const mlx5_hw[] = {
		"out_of_sequence",
		"packet_seq_err",
		"local_ack_timeout_err",
		"rnr_nak_retry_err",
		"implied_nak_seq_err",
		"duplicate_request",
		"out_of_buffer",
		"req_cqe_error",
		"resp_cqe_error",
		"req_remote_access_errors",
		"resp_local_length_error",
		"np_ecn_marked_roce_packets",
		"np_cnp_sent",
		"rp_cnp_handled",
		"rp_cnp_ignored",
	};
	static const char *const pma[] = {
		"port_xmit_data",
		"port_rcv_data",
		"port_xmit_packets",
		"port_rcv_packets",
		"symbol_error",
		"link_error_recovery",
		"link_downed",
		"port_rcv_errors",
		"port_rcv_remote_physical_errors",
		"port_rcv_switch_relay_errors",
		"port_xmit_discards",
		"port_xmit_constraint_errors",
		"port_rcv_constraint_errors",
		"local_link_integrity_errors",
		"excessive_buffer_overrun_errors",
		"VL15_dropped",
	};
	struct rn_scrape s = { 0 };
	struct rn_buf out = { 0 };
	struct rn_error err = { 0 };
	char *root = fakesys_new();
	char rel[256];

	rn_sysfs_set_root(root);
	fakesys_add_netdev_pci(root, "ens192", "0000:0b:00.0");
	fakesys_add_rdma_aux(root, "irdma0", "0000:0b:00.0", "ice.roce.0", "b696:91ff:feec:a458",
			     "Ethernet");
	fakesys_add_gid(root, "irdma0", 1, 0, "fe80:0000:0000:0000:b696:91ff:feec:a458", "RoCE v2",
			"ens192");
	fakesys_write(root, "class/infiniband/irdma0/ports/1/rate", "25 Gb/sec (1X EDR)");
	for (size_t i = 0; i < sizeof(irdma_counters) / sizeof(irdma_counters[0]); i++) {
		snprintf(rel, sizeof(rel), "class/infiniband/irdma0/ports/1/hw_counters/%s",
			 irdma_counters[i]);
		fakesys_write(root, rel, i % 2 ? "18446744073709551615" : "141075419");
	}
	fakesys_write(root, "class/infiniband/irdma0/hw_counters/dev_wide", "3");
	fakesys_write(root, "class/net/ens192/mtu", "9000");
	fakesys_write(root, "class/net/ens192/operstate", "up");
	fakesys_add_netdev_virtual(root, "veth0");
	fakesys_add_rdma_virtual(root, "rxe0", "veth0", NULL, "Ethernet");
	fakesys_add_port(root, "rxe0", 2, "Ethernet");
	fakesys_write(root, "class/infiniband/rxe0/ports/1/hw_counters/sent_pkts", "10");
	fakesys_write(root, "class/infiniband/rxe0/ports/2/hw_counters/sent_pkts", "0");
	fakesys_write(root, "class/infiniband/rxe0/ports/1/counters/port_xmit_data", "4");
	fakesys_write(root, "class/infiniband/rxe0/ports/1/hw_counters/rcvd_seq_err", "1");
	fakesys_write(root, "class/infiniband/rxe0/ports/1/hw_counters/retry_exceeded_err", "2");
	fakesys_add_netdev_pci(root, "ens1f0np0", "0000:17:00.0");
	fakesys_add_rdma_pci(root, "mlx5_0", "0000:17:00.0", "0c42:a103:0016:5d9e", "Ethernet");
	for (size_t i = 0; i < sizeof(mlx5_hw) / sizeof(mlx5_hw[0]); i++) {
		snprintf(rel, sizeof(rel), "class/infiniband/mlx5_0/ports/1/hw_counters/%s",
			 mlx5_hw[i]);
		fakesys_write(root, rel, "5");
	}
	for (size_t i = 0; i < sizeof(pma) / sizeof(pma[0]); i++) {
		snprintf(rel, sizeof(rel), "class/infiniband/mlx5_0/ports/1/counters/%s", pma[i]);
		fakesys_write(root, rel, "7");
	}

	if (rn_scrape_sysfs(&s, "cni-\"odd\"\\name\nwith newline \xff", &err) < 0) {
		fprintf(stderr, "prom-sample: %s\n", err.msg);
		return 1;
	}
	s.rdma = s.exclusive = true;
	snprintf(s.ns[0].pod, sizeof(s.ns[0].pod), "gpu-pod0");
	snprintf(s.ns[0].pod_namespace, sizeof(s.ns[0].pod_namespace), "ml \"team\"");
	snprintf(s.ns[0].container, sizeof(s.ns[0].container), "4f3c2a1b9e8d");
	s.ns_failed = 1;
	s.ns[0].failed = true;
	s.ns[0].error_code = EACCES;
	snprintf(s.ns[0].error, sizeof(s.ns[0].error), "an error\nover two lines");
	if (rn_prom_render(&s, &out, &err) < 0) {
		fprintf(stderr, "prom-sample: %s\n", err.msg);
		return 1;
	}
	fwrite(out.buf, 1, out.len, stdout);
	rn_buf_free(&out);
	rn_scrape_free(&s);
	rn_sysfs_set_root(NULL);
	fakesys_free(root);
	return 0;
}
