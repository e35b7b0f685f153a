#!/usr/bin/python3
"""The library's layout rules (README, "Layout"), checked on the tree.

src/lib is flat: six static libraries are built from it and a file's name
says which one it belongs to (ipam_*, etcd_* -> rdmans-ipam; *_json and
cni_protocol (the CNI protocol, in jansson) -> rdmans-json; pod_* -> rdmans-json
(what a pod's annotations ask: rdmans-hook and rdmans-nri);
ping* -> rdmans-ping (librdmacm, linked into the CLI only); nri_wire ->
rdmans-nri-wire (protobuf-c); nri* -> rdmans-nri; kubelet_wire ->
rdmans-kubelet-wire (grpc, protobuf-c); device_plugin* -> rdmans-device-plugin;
everything else -> rdmans, the core). Each external library stays inside its
one module, and sysfs inside src/lib/sysfs*.c. Usage: layout.py SOURCE_ROOT (TAP on stdout).
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
checks = []


def check(name, problems):
    checks.append((name, problems))


# 1. each external library's headers are included by its one module only
owners = {
    "libmnl/": {"src/lib/rdma_nl.c"},
    "netlink/": {"src/lib/link.c"},  # libnl-3 (the kernel's uapi is linux/netlink.h)
    "curl/": {"src/lib/ipam_http.c"},
    "microhttpd.h": {"src/cli/cmd_exporter.c"},
    # rdma-core's libibverbs: verbs.c, and ping.c, the one user of librdmacm, whose API is made
    # of verbs objects (id->verbs, rdma_create_qp() on an ibv_pd) and whose data path
    # (ibv_post_send, ibv_poll_cq) is inline functions of infiniband/verbs.h
    "infiniband/": {"src/lib/verbs.c", "src/lib/ping.c"},
    "rdma/rdma_cma.h": {"src/lib/ping.c"},  # librdmacm (rdma/rdma_netlink.h is the kernel's uapi)
    "rdma/rdma_verbs.h": {"src/lib/ping.c"},
    # protobuf-c (rdmans-nri's NRI and ttrpc messages); the generated *.pb-c.h include it
    "protobuf-c/": {"src/lib/nri_wire.c", "src/lib/kubelet_wire.c"},
    # grpc's C core (kubelet's device plugin and PodResources APIs)
    "grpc/": {"src/lib/kubelet_wire.c"},
}
pb_c = re.compile(r'^\s*#\s*include\s*"[^"]*\.pb-c\.h"', re.M)
include = re.compile(r'^\s*#\s*include\s*<([^>]+)>', re.M)
sources = sorted(p for p in (root / "src").rglob("*") if p.suffix in (".c", ".h"))
sources += sorted((root / "include").rglob("*.h"))
for prefix, allowed in owners.items():
    bad = []
    for p in sources:
        rel = str(p.relative_to(root))
        if rel in allowed:
            continue
        for h in include.findall(p.read_text()):
            if h.startswith(prefix):
                bad.append(f"{rel} includes <{h}>: only {', '.join(sorted(allowed))} may")
    check(f"<{prefix}...> only in {', '.join(sorted(allowed))}", bad)
wire_modules = {"src/lib/nri_wire.c", "src/lib/kubelet_wire.c"}
bad = [str(p.relative_to(root)) + " includes a generated *.pb-c.h: only the wire modules may"
       for p in sources if str(p.relative_to(root)) not in wire_modules and pb_c.search(p.read_text())]
check("generated protobuf-c headers only in src/lib/nri_wire.c and src/lib/kubelet_wire.c", bad)


# 2. every src/lib/*.c is in exactly one library, the one its name says
def library_of(name):
    if name.startswith(("ipam_", "etcd_")) or name == "ipam.c":
        return "rdmans-ipam"
    if name.startswith("ping"):
        return "rdmans-ping"
    if name.endswith("_json.c") or name == "cni_protocol.c" or name.startswith("pod_"):
        return "rdmans-json"
    if name == "nri_wire.c":
        return "rdmans-nri-wire"
    if name.startswith("nri"):
        return "rdmans-nri"
    if name == "kubelet_wire.c":
        return "rdmans-kubelet-wire"
    if name.startswith("device_plugin"):
        return "rdmans-device-plugin"
    return "rdmans"


build = (root / "src/lib/meson.build").read_text()
listed = {}
# static_library('NAME', <sources: files(...) or a variable holding files(...)>, ...
variables = {m.group(1): m.group(2) for m in re.finditer(r"^(\w+)\s*=\s*files\((.*?)\)", build, re.M | re.S)}
for m in re.finditer(r"static_library\(\s*'([^']+)',\s*(files\((.*?)\)|\w+)", build, re.S):
    lib, body = m.group(1), m.group(3) if m.group(3) is not None else variables.get(m.group(2), "")
    for f in re.findall(r"'([^']+\.c)'", body):
        listed.setdefault(f, []).append(lib)
bad = []
for p in sorted((root / "src/lib").glob("*.c")):
    libs = listed.get(p.name, [])
    if libs != [library_of(p.name)]:
        bad.append(f"src/lib/{p.name} is built into {libs or 'no library'}, its name says {library_of(p.name)}")
check("every src/lib/*.c is built into the library its name says", bad)

# 3. the core library does not use jansson (the JSON readers are their own library)
bad = []
for p in sorted((root / "src/lib").glob("*.c")):
    if library_of(p.name) == "rdmans" and "jansson.h" in include.findall(p.read_text()):
        bad.append(f"src/lib/{p.name} (core) includes <jansson.h>")
check("the core library does not include <jansson.h>", bad)

# 4. a header per source: include/rdmans/X.h declares only what src/lib/X.c defines, and every
#    src/lib/X.c has its X.h (in include/rdmans, or beside it when private to its library).
#    The three IPAM stores implement one private interface, ipam_store.h.
SHARED_INTERFACE = {"ipam_store_local.c": "ipam_store.h", "ipam_store_etcd.c": "ipam_store.h",
                    "ipam_store_k8s.c": "ipam_store.h"}
decl = re.compile(r"^(?!static|typedef|#)[a-z][\w \*]*?\b(rn_\w+)\(", re.M)
defined = {}
for p in sorted((root / "src/lib").glob("*.c")):
    for name in decl.findall(p.read_text()):
        defined.setdefault(name, p.stem)
bad = []
for h in sorted((root / "include/rdmans").glob("*.h")):
    text = re.sub(r"static inline[^{;]*\{.*?\n\}", "", h.read_text(), flags=re.S)
    for name in decl.findall(text):
        where = defined.get(name)
        if where is None:
            bad.append(f"include/rdmans/{h.name} declares {name}, which no src/lib file defines")
        elif where != h.stem:
            bad.append(f"include/rdmans/{h.name} declares {name}, defined in src/lib/{where}.c")
for p in sorted((root / "src/lib").glob("*.c")):
    own = SHARED_INTERFACE.get(p.name, p.stem + ".h")
    if not (root / "include/rdmans" / own).exists() and not (root / "src/lib" / own).exists():
        bad.append(f"src/lib/{p.name} has no header of its own ({own})")
check("a header per source: include/rdmans/X.h declares what src/lib/X.c defines", bad)

# 5. rdma-netns's front end (src/cni) likewise: src/cni/X.h declares what src/cni/X.c defines;
#    cni.h holds the codes and the context they all work on, and declares no function; main.c
#    (the executable's one call) has no header.
cni_decl = re.compile(r"^(?!static|typedef|#)[a-z][\w \*]*?\b(cni_\w+)\(", re.M)
cni_defined = {}
for p in sorted((root / "src/cni").glob("*.c")):
    for name in cni_decl.findall(p.read_text()):
        cni_defined.setdefault(name, p.stem)
bad = []
for h in sorted((root / "src/cni").glob("*.h")):
    for name in cni_decl.findall(h.read_text()):
        where = cni_defined.get(name)
        if h.name == "cni.h":
            bad.append(f"src/cni/cni.h declares {name}: its own file's header should")
        elif where is None:
            bad.append(f"src/cni/{h.name} declares {name}, which no src/cni file defines")
        elif where != h.stem:
            bad.append(f"src/cni/{h.name} declares {name}, defined in src/cni/{where}.c")
for p in sorted((root / "src/cni").glob("*.c")):
    if p.name != "main.c" and not (root / "src/cni" / (p.stem + ".h")).exists():
        bad.append(f"src/cni/{p.name} has no header of its own ({p.stem}.h)")
check("a header per source in src/cni: X.h declares what X.c defines", bad)

# 6. the newcomer's map: every src/lib module has its line in ARCHITECTURE.md ("- `name` ...")
arch = (root / "ARCHITECTURE.md").read_text()
listed_in_map = set(re.findall(r"^- `(\w+)` ", arch, re.M))
bad = [f"src/lib/{p.name} has no line in ARCHITECTURE.md" for p in sorted((root / "src/lib").glob("*.c"))
       if p.stem not in listed_in_map]
bad += [f"ARCHITECTURE.md names {m}, which is not in src/lib" for m in sorted(listed_in_map)
        if not (root / "src/lib" / (m + ".c")).exists()]
check("ARCHITECTURE.md has a line for every src/lib module, and only for those", bad)

# 6. sysfs has one reader (like systemd's sd-device): no sysfs path is spelled outside the sysfs
#    module (src/lib/sysfs*.c); a message may name one, but no string literal starts with "/sys/",
#    "class/", "bus/" or "module/" (the pieces a path under rn_sysfs_root() is built from)
sys_literal = re.compile(r'"(/sys/|class/|bus/|module/)')
bad = []
for p in sorted(q for q in (root / "src").rglob("*") if q.suffix in (".c", ".h")):
    if p.parent == root / "src/lib" and p.name.startswith("sysfs"):
        continue
    for lineno, line in enumerate(p.read_text().splitlines(), 1):
        if sys_literal.search(line):
            bad.append(f"{p.relative_to(root)}:{lineno} spells a sysfs path: ask src/lib/sysfs*.c")
check("sysfs paths are spelled in src/lib/sysfs*.c only", bad)

# 7. headers declare their own file and include no umbrella: the include graph of
#    include/rdmans has no cycle, so a file's includes say which modules it uses
inc_re = re.compile(r'^#include "rdmans/([^"]+)"', re.M)
graph = {h.name: set(inc_re.findall(h.read_text())) for h in (root / "include/rdmans").glob("*.h")}
bad = []
state = {}


def visit(h, path):
    state[h] = "open"
    for d in sorted(graph.get(h, ())):
        if state.get(d) == "open":
            bad.append("include cycle: " + " -> ".join(path[path.index(d):] + [d]))
        elif d not in state:
            visit(d, path + [d])
    state[h] = "done"


for h in sorted(graph):
    if h not in state:
        visit(h, [h])
check("include/rdmans has no include cycle", bad)

for n, (name, problems) in enumerate(checks, 1):
    print(f"{'not ok' if problems else 'ok'} {n} - {name}")
    for line in problems:
        print(f"# {line}")
print(f"1..{len(checks)}")
sys.exit(1 if any(p for _, p in checks) else 0)
