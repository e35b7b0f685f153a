#!/usr/bin/python3
"""Every manifest in examples/, deploy/ and cni-conf/ parses, and points only at
things this tree builds: CNI types we install (or Debian's reference plugins),
the image deploy/Containerfile builds, and binaries/paths meson installs.
TAP on stdout."""
import glob
import json
import os
import sys

import yaml

top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ours = {"rdma-netns", "rdma-netns-ipam"}
libcni_1_1_versions = {"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"}
reference = {"host-device", "host-local", "static", "macvlan", "sriov"}
results = []


def check(name, ok, why=""):
    results.append((name, ok, why))


def cni_configs(doc):
    """CNI configs inside a NetworkAttachmentDefinition or a conflist."""
    if isinstance(doc, dict) and doc.get("kind") == "NetworkAttachmentDefinition":
        return [json.loads(doc["spec"]["config"])]
    return []


def check_cni(where, conf):
    plugins = conf.get("plugins", [conf])
    for p in plugins:
        t = p.get("type")
        check(f"{where}: plugin type {t} is ours or a reference plugin", t in ours | reference, str(t))
        ipam = p.get("ipam")
        if ipam:
            check(f"{where}: ipam type {ipam.get('type')} is known", ipam.get("type") in ours | reference,
                  str(ipam))
    check(f"{where}: names a cniVersion", "cniVersion" in conf)
    # libcni 1.1 (podman 4.3, containerd <= 1.7, older Multus) refuses 1.1.0:
    # "unsupported CNI result version". Examples must work on every supported runtime.
    check(f"{where}: cniVersion {conf.get('cniVersion')} is one libcni 1.1 accepts",
          conf.get("cniVersion") in libcni_1_1_versions, str(conf.get("cniVersion")))


for path in sorted(glob.glob(f"{top}/examples/*.yaml") + glob.glob(f"{top}/deploy/*.yaml") +
                   glob.glob(f"{top}/cni-conf/*.yaml")):
    rel = os.path.relpath(path, top)
    try:
        docs = [d for d in yaml.safe_load_all(open(path)) if d is not None]
        check(f"{rel} parses as YAML", True)
    except yaml.YAMLError as e:
        check(f"{rel} parses as YAML", False, str(e))
        continue
    for d in docs:
        for c in cni_configs(d):
            check_cni(f"{rel} {d['metadata']['name']}", c)
        text = json.dumps(d)
        if '"image"' in text:
            imgs = {c["image"] for spec in [d.get("spec", {}).get("template", {}).get("spec", {})]
                    for c in spec.get("containers", []) + spec.get("initContainers", [])}
            if rel.startswith("deploy/"):
                check(f"{rel}: images are the one deploy/Containerfile builds", imgs <= {"rdmans:0.1.0"},
                      str(imgs))

for path in sorted(glob.glob(f"{top}/cni-conf/*.conf") + glob.glob(f"{top}/cni-conf/*.conflist") +
                   glob.glob(f"{top}/cni-conf/*/*.conf")):
    rel = os.path.relpath(path, top)
    try:
        conf = json.load(open(path))
        check(f"{rel} parses as JSON", True)
    except ValueError as e:
        check(f"{rel} parses as JSON", False, str(e))
        continue
    if "type" in conf or "plugins" in conf:
        check_cni(rel, conf)

# the node installer reads what meson installs with the Containerfile's options
installer = open(f"{top}/deploy/node-install.sh").read()
containerfile = open(f"{top}/deploy/Containerfile").read()
check("Containerfile installs the CNI plugins where node-install.sh reads them",
      "-Dcnibindir=/usr/lib/rdmans/cni" in containerfile and "src=/usr/lib/rdmans" in installer)
check("node-install.sh takes the hook from libexecdir/rdmans", "/usr/libexec/rdmans/rdmans-hook" in installer)
check("node-install.sh takes the hook JSON from datadir", "/usr/share/containers/oci/hooks.d/rdmans-hook.json" in installer)
check("meson_options.txt defines cnibindir", "'cnibindir'" in open(f"{top}/meson_options.txt").read())

print(f"1..{len(results)}")
for i, (name, ok, why) in enumerate(results, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {name}")
    if not ok and why:
        print(f"# {why}")
sys.exit(0 if all(ok for _, ok, _ in results) else 1)
