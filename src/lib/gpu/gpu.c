// SPDX-License-Identifier: Apache-2.0
/*
 * NVIDIA GPUs from the driver's /proc/driver/nvidia/gpus/BDF/information
 * ("Bus Location:", "Device Minor:", "GPU UUID:", "Model:", a key, a colon,
 * tabs and spaces, the value), and a container's share of them as the NVIDIA
 * Container Toolkit names it: NVIDIA_VISIBLE_DEVICES ("all", "none", "void",
 * or indexes and UUIDs, comma-separated), CDI names nvidia.com/gpu=INDEX|UUID|all,
 * and /dev/nvidiaN device nodes.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/gpu.h"
#include "rdmans/util.h"

#define INFORMATION_MAX 8192

/* The value after "KEY:" on a line of text, blanks trimmed, into buf; false when absent. */
static bool field(const char *text, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *v, *end;

		if (strncmp(l, key, klen) != 0 || l[klen] != ':')
			continue;
		v = l + klen + 1;
		v += strspn(v, " \t");
		end = strchr(v, '\n');
		if (!end)
			end = v + strlen(v);
		while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
			end--;
		if ((size_t)(end - v) >= len)
			return false;
		memcpy(buf, v, (size_t)(end - v));
		buf[end - v] = '\0';
		return true;
	}
	return false;
}

/* "12": digits only, at most 9 of them; -1 otherwise. */
static long small_number(const char *s)
{
	long v = 0;

	if (!*s || strlen(s) > 9 || strspn(s, "0123456789") != strlen(s))
		return -1;
	for (; *s; s++)
		v = v * 10 + (*s - '0');
	return v;
}

int rn_gpu_parse_information(const char *text, struct rn_gpu *out, struct rn_error *err)
{
	char minor[16];
	long m;

	memset(out, 0, sizeof(*out));
	if (!field(text, "Bus Location", out->bdf, sizeof(out->bdf)) || !out->bdf[0])
		return rn_error_set(err, EINVAL, "no 'Bus Location:' (the GPU's PCI address)");
	if (!field(text, "Device Minor", minor, sizeof(minor)) || (m = small_number(minor)) < 0 ||
	    m > 255)
		return rn_error_set(err, EINVAL,
				    "GPU %s: no 'Device Minor:' of 0-255 (its /dev/nvidiaN)",
				    out->bdf);
	out->minor = (unsigned)m;
	if (!field(text, "GPU UUID", out->uuid, sizeof(out->uuid)) ||
	    strncmp(out->uuid, "GPU-", 4) != 0)
		return rn_error_set(err, EINVAL, "GPU %s: no 'GPU UUID:' GPU-...", out->bdf);
	if (!field(text, "Model", out->model, sizeof(out->model)))
		out->model[0] = '\0';
	return 0;
}

static int by_bdf(const void *a, const void *b)
{
	return strcmp(((const struct rn_gpu *)a)->bdf, ((const struct rn_gpu *)b)->bdf);
}

int rn_gpu_list(const char *proc_root, struct rn_gpu **ret, size_t *ret_n, struct rn_error *err)
{
	_cleanup_free_ struct rn_gpu *v = NULL;
	_cleanup_closedir_ DIR *d = NULL;
	char dir[4096];
	struct dirent *de;
	size_t n = 0;

	*ret = NULL;
	*ret_n = 0;
	if (rn_path(dir, sizeof(dir), "%s/driver/nvidia/gpus", proc_root ? proc_root : "/proc") < 0)
		return rn_error_set(err, ENAMETOOLONG, "proc root %s is too long", proc_root);
	d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0; /* no NVIDIA driver loaded: no GPU */
		return rn_error_errno(err, errno, "cannot list %s", dir);
	}
	while ((de = readdir(d))) {
		_cleanup_free_ char *text = NULL;
		char path[4096];
		int r;

		if (de->d_name[0] == '.')
			continue;
		if (n == RN_GPU_MAX)
			return rn_error_set(err, E2BIG, "more than %d GPUs in %s", RN_GPU_MAX, dir);
		if (rn_path(path, sizeof(path), "%s/%s/information", dir, de->d_name) < 0)
			return rn_error_set(err, ENAMETOOLONG, "%s/%s: name too long", dir,
					    de->d_name);
		r = rn_read_regular(path, INFORMATION_MAX, "NVIDIA GPU information", &text, NULL,
				    err);
		if (r < 0)
			return r;
		if (RN_GROW(v, NULL, n + 1) < 0)
			return rn_error_set(err, ENOMEM, "out of memory");
		r = rn_gpu_parse_information(text, &v[n], err);
		if (r < 0)
			return rn_error_wrap(err, "%s", path);
		n++;
	}
	if (n)
		qsort(v, n, sizeof(*v), by_bdf);
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

/* Marks the GPU one name means (an index in NVML's order, a UUID, "all"); where says whose name. */
static int select_name(const struct rn_gpu *gpus, size_t n, const char *name, const char *where,
		       bool *sel, struct rn_error *err)
{
	long idx = small_number(name);

	if (strcmp(name, "all") == 0) {
		for (size_t i = 0; i < n; i++)
			sel[i] = true;
		return 0;
	}
	if (idx >= 0) {
		if ((size_t)idx >= n)
			return rn_error_set(
				err, EINVAL, "%s names GPU %ld, but this node has %zu GPU(s)%s",
				where, idx, n, n ? " (0 to the last, in PCI address order)" : "");
		sel[idx] = true;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(gpus[i].uuid, name) == 0) {
			sel[i] = true;
			return 0;
		}
	}
	if (strncmp(name, "MIG-", 4) == 0 || strchr(name, ':'))
		return rn_error_set(
			err, EINVAL,
			"%s names MIG device '%.80s': a MIG slice has no PCI function of "
			"its own to place RDMA devices by; give whole GPUs",
			where, name);
	return rn_error_set(err, EINVAL, "%s names '%.80s', which is no GPU of this node", where,
			    name);
}

int rn_gpu_select(const struct rn_gpu *gpus, size_t n, const struct rn_gpu_request *req,
		  bool *ret_sel, struct rn_error *err)
{
	const char *vis = req->visible_devices;
	bool by_node = false;
	int r;

	for (size_t i = 0; i < n; i++)
		ret_sel[i] = false;
	for (size_t k = 0; k < req->n_devnodes; k++) {
		const char *p = req->devnodes[k];
		long minor;

		if (strncmp(p, "/dev/nvidia", 11) != 0 || (minor = small_number(p + 11)) < 0)
			continue; /* nvidiactl, nvidia-uvm, nvidia-caps/...: no GPU of their own */
		for (size_t i = 0; i < n; i++)
			if (gpus[i].minor == (unsigned long)minor)
				ret_sel[i] = by_node = true;
	}
	/*
	 * The nodes it has are the GPUs it can open: an image's own
	 * NVIDIA_VISIBLE_DEVICES=all (CUDA's images set it) must not widen them.
	 */
	if (by_node)
		return 0;
	if (vis && *vis && strcmp(vis, "none") != 0 && strcmp(vis, "void") != 0) {
		_cleanup_free_ char *copy = strdup(vis);
		char *save = NULL;

		if (!copy)
			return rn_error_set(err, ENOMEM, "out of memory");
		for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			t += strspn(t, " ");
			r = select_name(gpus, n, t, "NVIDIA_VISIBLE_DEVICES", ret_sel, err);
			if (r < 0)
				return r;
		}
	}
	for (size_t k = 0; k < req->n_cdi; k++) {
		const char *c = req->cdi[k];

		if (strncmp(c, "nvidia.com/gpu=", 15) != 0)
			continue; /* another vendor's, or another class of NVIDIA's */
		r = select_name(gpus, n, c + 15, "CDI device nvidia.com/gpu", ret_sel, err);
		if (r < 0)
			return r;
	}
	return 0;
}
