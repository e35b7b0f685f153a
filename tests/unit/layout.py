#!/usr/bin/python3
"""The library's layout rules (README, "Layout"), checked on the tree.

src/lib has one folder per static library, and the core library's files in
folders by domain: ipam/ -> rdmans-ipam; json/ -> rdmans-json (jansson);
ping/ -> rdmans-ping (librdmacm, linked into the CLI only); nri/ -> rdmans-nri
and rdmans-nri-wire (nri_wire.c, protobuf-c); device-plugin/ ->
rdmans-device-plugin and rdmans-kubelet-wire (kubelet_wire.c, grpc,
protobuf-c); every other folder (base, kernel, sysfs, gpu, attach, nccl,
doctor, exporter) -> rdmans, the core. Each external library stays inside its
one module, and sysfs inside src/lib/sysfs/. ARCHITECTURE.md names each module
under its folder. Usage: layout.py SOURCE_ROOT (TAP on stdout).
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
    "libmnl/": {"src/lib/kernel/rdma_nl.c"},
    "netlink/": {"src/lib/kernel/link.c"},  # libnl-3 (the kernel's uapi is linux/netlink.h)
    "curl/": {"src/lib/ipam/ipam_http.c"},
    "microhttpd.h": {"src/cli/cmd_exporter.c"},
    # rdma-core's libibverbs: verbs.c, and ping.c, the one user of librdmacm, whose API is made
    # of verbs objects (id->verbs, rdma_create_qp() on an ibv_pd) and whose data path
    # (ibv_post_send, ibv_poll_cq) is inline functions of infiniband/verbs.h
    "infiniband/": {"src/lib/kernel/verbs.c", "src/lib/ping/ping.c"},
    "rdma/rdma_cma.h": {"src/lib/ping/ping.c"},  # librdmacm (rdma/rdma_netlink.h is the kernel's uapi)
    "rdma/rdma_verbs.h": {"src/lib/ping/ping.c"},
    # protobuf-c (rdmans-nri's NRI and ttrpc messages); the generated *.pb-c.h include it
    "protobuf-c/": {"src/lib/nri/nri_wire.c", "src/lib/device-plugin/kubelet_wire.c"},
    # grpc's C core (kubelet's device plugin and PodResources APIs)
    "grpc/": {"src/lib/device-plugin/kubelet_wire.c"},
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
wire_modules = {"src/lib/nri/nri_wire.c", "src/lib/device-plugin/kubelet_wire.c"}
bad = [str(p.relative_to(root)) + " includes a generated *.pb-c.h: only the wire modules may"
       for p in sources if str(p.relative_to(root)) not in wire_modules and pb_c.search(p.read_text())]
check("generated protobuf-c headers only in " + " and ".join(sorted(wire_modules)), bad)


# 2. every src/lib source is in a folder, and built into exactly the library its folder says
FOLDER_LIBRARY = {"ipam": "rdmans-ipam", "json": "rdmans-json", "ping": "rdmans-ping",
                  "nri": "rdmans-nri", "device-plugin": "rdmans-device-plugin"}
CORE_FOLDERS = {"base", "kernel", "sysfs", "gpu", "attach", "nccl", "doctor", "exporter"}
# the wire modules are libraries of their own in their folder: only they link protobuf-c and grpc
WIRE_LIBRARY = {"nri/nri_wire.c": "rdmans-nri-wire", "device-plugin/kubelet_wire.c": "rdmans-kubelet-wire"}
lib_dir = root / "src/lib"
lib_sources = sorted(lib_dir.glob("*/*.c"))


def library_of(p):
    rel = str(p.relative_to(lib_dir))
    return WIRE_LIBRARY.get(rel) or FOLDER_LIBRARY.get(p.parent.name, "rdmans")


build = (lib_dir / "meson.build").read_text()
listed = {}
# static_library('NAME', <sources: files(...) or a variable holding files(...)>, ...
variables = {m.group(1): m.group(2) for m in re.finditer(r"^(\w+)\s*=\s*files\((.*?)\)", build, re.M | re.S)}
for m in re.finditer(r"static_library\(\s*'([^']+)',\s*(files\((.*?)\)|\w+)", build, re.S):
    lib, body = m.group(1), m.group(3) if m.group(3) is not None else variables.get(m.group(2), "")
    for f in re.findall(r"'([^']+\.c)'", body):
        listed.setdefault(f, []).append(lib)
bad = [f"src/lib/{p.name} is not in a folder: put it in its library's or domain's"
       for p in sorted(lib_dir.glob("*.[ch]"))]
for p in lib_sources:
    rel = str(p.relative_to(lib_dir))
    if p.parent.name not in CORE_FOLDERS and p.parent.name not in FOLDER_LIBRARY:
        bad.append(f"src/lib/{rel}: {p.parent.name}/ is neither a library's folder nor a core domain's")
    libs = listed.get(rel, [])
    if libs != [library_of(p)]:
        bad.append(f"src/lib/{rel} is built into {libs or 'no library'}, its folder says {library_of(p)}")
check("every src/lib source is in a folder and built into the library its folder says", bad)

# 3. the core library does not use jansson (the JSON readers are their own library)
bad = []
for p in lib_sources:
    if library_of(p) == "rdmans" and "jansson.h" in include.findall(p.read_text()):
        bad.append(f"src/lib/{p.relative_to(lib_dir)} (core) includes <jansson.h>")
check("the core library does not include <jansson.h>", bad)

# 4. a header per source: include/rdmans/X.h declares only what src/lib/X.c defines, and every
#    src/lib/*/X.c has its X.h (in include/rdmans, or beside it when private to its library).
#    The three IPAM stores implement one private interface, ipam_store.h.
SHARED_INTERFACE = {"ipam_store_local.c": "ipam_store.h", "ipam_store_etcd.c": "ipam_store.h",
                    "ipam_store_k8s.c": "ipam_store.h"}
decl = re.compile(r"^(?!static|typedef|#)[a-z][\w \*]*?\b(rn_\w+)\(", re.M)
defined = {}
for p in lib_sources:
    for name in decl.findall(p.read_text()):
        defined.setdefault(name, p.stem)
where_of = {p.stem: str(p.relative_to(root).with_suffix("")) for p in lib_sources}
bad = []
for h in sorted((root / "include/rdmans").glob("*.h")):
    text = re.sub(r"static inline[^{;]*\{.*?\n\}", "", h.read_text(), flags=re.S)
    for name in decl.findall(text):
        where = defined.get(name)
        if where is None:
            bad.append(f"include/rdmans/{h.name} declares {name}, which no src/lib file defines")
        elif where != h.stem:
            bad.append(f"include/rdmans/{h.name} declares {name}, defined in {where_of[where]}.c")
for p in lib_sources:
    own = SHARED_INTERFACE.get(p.name, p.stem + ".h")
    if not (root / "include/rdmans" / own).exists() and not (p.parent / own).exists():
        bad.append(f"src/lib/{p.relative_to(lib_dir)} has no header of its own ({own})")
check("a header per source: include/rdmans/X.h declares what src/lib/*/X.c defines", bad)

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

# 6. the newcomer's map: every src/lib module has its line in ARCHITECTURE.md ("- `name` ..."),
#    under the heading that names its folder ("### src/lib/FOLDER/ ...")
arch = (root / "ARCHITECTURE.md").read_text()
folder_in_map = {}
folder = None
for line in arch.splitlines():
    heading = re.match(r"^#+ .*?`?src/lib/([\w-]+)/", line)
    if heading:
        folder = heading.group(1)
    elif line.startswith("#"):
        folder = None
    m = re.match(r"^- `(\w+)` ", line)
    if m:
        folder_in_map[m.group(1)] = folder
bad = []
for p in lib_sources:
    if p.stem not in folder_in_map:
        bad.append(f"src/lib/{p.relative_to(lib_dir)} has no line in ARCHITECTURE.md")
    elif folder_in_map[p.stem] != p.parent.name:
        bad.append(f"ARCHITECTURE.md names {p.stem} under src/lib/{folder_in_map[p.stem]}/, "
                   f"it is in src/lib/{p.parent.name}/")
modules = {p.stem for p in lib_sources}
bad += [f"ARCHITECTURE.md names {m}, which is not in src/lib" for m in sorted(folder_in_map)
        if m not in modules]
check("ARCHITECTURE.md has a line for every src/lib module, under its folder, and only for those", bad)

# 6. sysfs has one reader (like systemd's sd-device): no sysfs path is spelled outside the sysfs
#    module (src/lib/sysfs/); a message may name one, but no string literal starts with "/sys/",
#    "class/", "bus/" or "module/" (the pieces a path under rn_sysfs_root() is built from)
sys_literal = re.compile(r'"(/sys/|class/|bus/|module/)')
bad = []
for p in sorted(q for q in (root / "src").rglob("*") if q.suffix in (".c", ".h")):
    if p.parent == lib_dir / "sysfs":
        continue
    for lineno, line in enumerate(p.read_text().splitlines(), 1):
        if sys_literal.search(line):
            bad.append(f"{p.relative_to(root)}:{lineno} spells a sysfs path: ask src/lib/sysfs/")
check("sysfs paths are spelled in src/lib/sysfs/ only", bad)

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
