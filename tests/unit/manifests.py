#!/usr/bin/python3
"""Every manifest in examples/, deploy/ and cni-conf/ parses, passes the
Kubernetes API's own schemas (k8s-validate.js: npm kubernetes-models), every
CNI config in them passes the plugins' own parsers (argv[1]: cni-conf-check),
the DaemonSet does what node agents do (SR-IOV and RDMA device plugins:
tolerations, system-node-critical, requests, a readiness probe, hostPath
mounts), and they point only at things this tree builds: CNI types we install
(or Debian's reference plugins), the image deploy/Containerfile builds, and
binaries/paths meson installs. TAP on stdout."""
import atexit
import copy
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ours = {"rdma-netns", "rdma-netns-ipam"}
libcni_1_1_versions = {"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"}
reference = {"host-device", "host-local", "static", "macvlan", "sriov"}
results = []
conf_check = sys.argv[1] if len(sys.argv) > 1 else None
npm_dir = os.environ.get("RDMANS_NPM_DIR", "/var/cache/rdmans-npm")
kubectl = os.environ.get("RDMANS_KUBECTL", "/var/cache/rdmans-kubectl/root/usr/bin/kubectl")
kustomize_kinds = {"Kustomization", "Component"}
k8s_docs = []  # (where, doc) for k8s-validate.js


def check(name, ok, why=""):
    results.append((name, ok, why))


def cni_configs(doc):
    """CNI configs inside a NetworkAttachmentDefinition or a conflist."""
    if isinstance(doc, dict) and doc.get("kind") == "NetworkAttachmentDefinition":
        return [json.loads(doc["spec"]["config"])]
    return []


# The node a NAD lands on: its /etc/cni/net.d holds cni-conf/rdma-netns-ipam.d/
# (etcd endpoints and credentials stay out of NADs), as cni-conf/ says to install it.
node_root = tempfile.mkdtemp(prefix="rn-manifests.")
atexit.register(shutil.rmtree, node_root)
# and the password file it names (moved into the scratch root: the parser reads it).
node_d = f"{node_root}/etc/cni/net.d/rdma-netns-ipam.d"
shutil.copytree(f"{top}/cni-conf/rdma-netns-ipam.d", node_d)
node_conf = json.load(open(f"{node_d}/rdma-netns-ipam.conf"))
node_conf["etcd"]["password_file"] = f"{node_d}/etcd-password"
json.dump(node_conf, open(f"{node_d}/rdma-netns-ipam.conf", "w"))
with open(f"{node_d}/etcd-password", "w") as f:
    f.write("the operator's etcd password\n")


def parser_says(conf):
    """What the plugins' own parsers say of one plugin config: "ok" or the error."""
    r = subprocess.run([conf_check, node_root], input=json.dumps(conf), capture_output=True, text=True,
                       env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1"))
    return r.stdout.strip() + r.stderr.strip()


def check_cni(where, conf):
    plugins = conf.get("plugins", [conf])
    for p in plugins:
        if p.get("type") == "rdma-netns" or (p.get("ipam") or {}).get("type") == "rdma-netns-ipam":
            full = dict(p, cniVersion=conf.get("cniVersion"), name=conf.get("name"))
            said = parser_says(full)
            check(f"{where}: the plugins' own parsers accept its {p.get('type')} config", said == "ok", said)
        t = p.get("type")
        check(f"{where}: plugin type {t} is ours or a reference plugin", t in ours | reference, str(t))
        ipam = p.get("ipam")
        if ipam:
            check(f"{where}: ipam type {ipam.get('type')} is known", ipam.get("type") in ours | reference,
                  str(ipam))
    check(f"{where}: names a cniVersion", "cniVersion" in conf)
    if where.split(":")[0].endswith("-1.1.conflist"):
        # the variant for runtimes whose libcni is 1.2+ (containerd 2.x, CRI-O 1.30+):
        # they call STATUS for 1.1.0 networks only
        check(f"{where}: the 1.1.0 variant says cniVersion 1.1.0", conf.get("cniVersion") == "1.1.0",
              str(conf.get("cniVersion")))
        return
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
        if d.get("kind") in kustomize_kinds:
            continue  # kustomize's own files: rendered below
        k8s_docs.append((f"{rel} {d.get('kind')} {d.get('metadata', {}).get('name')}", d))
        if d.get("kind") == "NetworkAttachmentDefinition":
            check(f"{rel} {d['metadata']['name']}: spec.config is a JSON string",
                  isinstance(d.get("spec", {}).get("config"), str))
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
options = open(f"{top}/meson_options.txt").read()
check("Containerfile builds the node tree, and no test (simhca.ko needs make and kernel headers)",
      "-Dnode_bundle=true" in containerfile and "-Dtests=false" in containerfile)
check("node-install.sh reads the node tree where meson installs it (PREFIX/lib/rdmans/node)",
      "--prefix=/usr" in containerfile and "/usr/lib/rdmans/node" in installer)
check("node-install.sh takes the hook JSON from datadir", "/usr/share/containers/oci/hooks.d/rdmans-hook.json" in installer)
check("meson_options.txt defines cnibindir, node_bundle, node_prefix, tests",
      all(f"'{o}'" in options for o in ("cnibindir", "node_bundle", "node_prefix", "tests")))

# --- the DaemonSet, as the SR-IOV and RDMA device plugins' DaemonSets do it ---------------
ds = [d for d in yaml.safe_load_all(open(f"{top}/deploy/daemonset.yaml")) if d and d["kind"] == "DaemonSet"][0]
pod = ds["spec"]["template"]["spec"]
check("DaemonSet: rolling updates", ds["spec"].get("updateStrategy", {}).get("type") == "RollingUpdate")
check("DaemonSet: priorityClassName system-node-critical (never evicted before the pods it serves)",
      pod.get("priorityClassName") == "system-node-critical")
check("DaemonSet: tolerates every taint (runs on tainted GPU nodes)",
      {"operator": "Exists"} in pod.get("tolerations", []))
for c in pod.get("containers", []) + pod.get("initContainers", []):
    req = c.get("resources", {}).get("requests", {})
    check(f"DaemonSet: container {c['name']} requests cpu and memory", "cpu" in req and "memory" in req, str(req))
    check(f"DaemonSet: container {c['name']} limits memory", "memory" in c.get("resources", {}).get("limits", {}))
main = pod["containers"][0]
probe = main.get("readinessProbe", {}).get("httpGet", {})
check("DaemonSet: the exporter has a readiness probe on its /metrics port",
      probe.get("path") == "/metrics" and probe.get("port") in (9877, "metrics"), str(probe))
vols = {v["name"]: v.get("hostPath", {}).get("path") for v in pod.get("volumes", [])}
mounts = {m["mountPath"]: vols.get(m["name"]) for m in pod["initContainers"][0].get("volumeMounts", [])}
for host_path in ("/opt/cni/bin", "/opt/rdmans", "/etc/cdi", "/etc/containers/oci/hooks.d", "/etc/modprobe.d"):
    check(f"DaemonSet: the installer writes the host's {host_path} through a hostPath mount at /host{host_path}",
          mounts.get(f"/host{host_path}") == host_path, str(mounts))
check("node-install.sh installs the node tree under the host prefix meson builds it for (/opt/rdmans)",
      "node_prefix', type : 'string', value : '/opt/rdmans'" in options)

# --- hardened as Pod Security admission and the CIS benchmark expect ----------------------------
ns = [d for d in yaml.safe_load_all(open(f"{top}/deploy/daemonset.yaml")) if d and d["kind"] == "Namespace"][0]
check("Namespace: Pod Security labels enforce, audit and warn privileged (hostNetwork, hostPID, privileged)",
      all(ns["metadata"].get("labels", {}).get(f"pod-security.kubernetes.io/{m}") == "privileged"
          for m in ("enforce", "audit", "warn")), str(ns["metadata"].get("labels")))
check("DaemonSet: seccompProfile RuntimeDefault for the pod",
      pod.get("securityContext", {}).get("seccompProfile", {}).get("type") == "RuntimeDefault")
for c in pod.get("containers", []) + pod.get("initContainers", []):
    check(f"DaemonSet: container {c['name']} has a read-only root filesystem",
          c.get("securityContext", {}).get("readOnlyRootFilesystem") is True)
sa_mounts = [c["name"] for c in pod.get("containers", []) + pod.get("initContainers", [])
             if any(m["name"] == "sa-token" for m in c.get("volumeMounts", []))]
check("DaemonSet: no automounted ServiceAccount token; the projected one only in ipam-kubeconfig",
      pod.get("automountServiceAccountToken") is False and sa_mounts == ["ipam-kubeconfig"], str(sa_mounts))
for cname, vol in (("exporter", "netns"), ("exporter", "cni-state"), ("ipam-reconcile", "netns"),
                   ("ipam-reconcile", "cni-conf"), ("nri", "pod-resources")):
    c = [x for x in pod["containers"] if x["name"] == cname][0]
    m = [x for x in c.get("volumeMounts", []) if x["name"] == vol]
    check(f"DaemonSet: {cname} mounts hostPath {vol} read-only (it writes nothing there)",
          len(m) == 1 and m[0].get("readOnly") is True, str(m))
install = pod["initContainers"][0]
check("DaemonSet: the boot configuration is left alone unless asked (RDMANS_PERSIST_EXCLUSIVE false)",
      {"name": "RDMANS_PERSIST_EXCLUSIVE", "value": "false"} in install.get("env", []))

# --- kustomize: the base and the example overlay, as `kubectl kustomize` renders them ----------


def kustomize(path):
    """The documents `kubectl kustomize PATH` renders, or None with the error checked."""
    r = subprocess.run([kubectl, "kustomize", path], capture_output=True, text=True)
    rel = os.path.relpath(path, top)
    check(f"kubectl kustomize {rel} renders", r.returncode == 0, r.stderr[-1500:])
    if r.returncode != 0:
        return None
    docs = [d for d in yaml.safe_load_all(r.stdout) if d]
    for d in docs:
        k8s_docs.append((f"kustomize {rel}: {d.get('kind')} {d.get('metadata', {}).get('name')}", d))
    return docs


if not os.access(kubectl, os.X_OK):
    check(f"kubectl is at {kubectl}", False, "run tools/kubectl.sh (tools/install-deps.sh does)")
else:
    plain = [d for f in ("daemonset.yaml", "rbac.yaml", "rdmaaddress-crd.yaml")
             for d in yaml.safe_load_all(open(f"{top}/deploy/{f}")) if d]
    base = kustomize(f"{top}/deploy") or []
    check("the base renders exactly deploy/'s objects",
          sorted((d["kind"], d["metadata"]["name"]) for d in base) ==
          sorted((d["kind"], d["metadata"]["name"]) for d in plain))
    over = kustomize(f"{top}/examples/overlays/example") or []
    ods = [d for d in over if d["kind"] == "DaemonSet"]
    if ods:
        opod = ods[0]["spec"]["template"]["spec"]
        cs = opod["containers"] + opod["initContainers"]
        ovols = {v["name"]: v.get("hostPath", {}).get("path") for v in opod["volumes"]}
        env = {(c["name"], e["name"]): e.get("value") for c in cs for e in c.get("env", [])}
        check("overlay: every container runs the registry's image at its tag",
              {c["image"] for c in cs} == {"registry.example.com/ml/rdmans:0.1.0"}, str({c["image"] for c in cs}))
        check("overlay: the CNI bin dir and the NRI socket's directory are the node's",
              (ovols["cni-bin"], ovols["nri-socket"]) == ("/home/kubernetes/bin", "/run/containerd/nri"), str(ovols))
        check("overlay: nodes by the operator's label, not NFD's",
              opod["nodeSelector"] == {"rdmans.io/rdma-node": "true"}, str(opod["nodeSelector"]))
        imounts = {m["name"]: m["mountPath"] for m in opod["initContainers"][0].get("volumeMounts", [])}
        check("overlay: persist-exclusive mounts the host's / whole for the initramfs rebuild, and names it",
              ovols.get("host-root") == "/" and imounts.get("host-root") == "/host-root" and
              env.get(("install", "RDMANS_HOST_FULL_ROOT")) == "/host-root" and
              env.get(("install", "RDMANS_REBUILD_INITRAMFS")) == "true", str((imounts, env)))
        check("overlay: no flat file naming the kubernetes store; exclusive mode persisted; other env kept",
              env.get(("ipam-kubeconfig", "RDMANS_IPAM_FLAT_CONF")) == "false" and
              env.get(("install", "RDMANS_PERSIST_EXCLUSIVE")) == "true" and
              env.get(("ipam-kubeconfig", "RDMANS_TOKEN_CHECK_INTERVAL")) == "60", str(env))
    else:
        check("overlay: renders a DaemonSet", False)
    # a control: a kustomization naming a file that is not there must not render
    bad = tempfile.mkdtemp(prefix="rn-kustomize.")
    atexit.register(shutil.rmtree, bad)
    with open(f"{bad}/kustomization.yaml", "w") as f:
        f.write("resources: [no-such-file.yaml]\n")
    r = subprocess.run([kubectl, "kustomize", bad], capture_output=True, text=True)
    check("kubectl kustomize refuses a kustomization naming a missing file", r.returncode != 0, r.stdout[-500:])

# --- Kubernetes' own schemas ------------------------------------------------------------------
# A control first: a DaemonSet the API server would refuse must be refused here too.
broken = copy.deepcopy(ds)
broken["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "9877x"
broken["spec"]["template"]["spec"]["tolerations"] = {"operator": "Exists"}
validator = os.path.join(os.path.dirname(os.path.abspath(__file__)), "k8s-validate.js")
if not os.path.isdir(os.path.join(npm_dir, "node_modules", "kubernetes-models")):
    check(f"kubernetes-models is installed in {npm_dir}", False, "run tools/install-deps.sh")
else:
    r = subprocess.run(["node", validator], capture_output=True, text=True,
                       input=json.dumps([{"where": w, "doc": d} for w, d in k8s_docs + [("control", broken)]]),
                       env=dict(os.environ, RDMANS_NPM_DIR=npm_dir))
    try:
        out = json.loads(r.stdout)
    except ValueError:
        out = []
        check("k8s-validate.js runs", False, r.stderr[-2000:])
    for res in out:
        if res["where"] == "control":
            check("the schema check refuses a DaemonSet with a string port and a toleration object",
                  len(res["errors"]) == 2, json.dumps(res["errors"]))
        else:
            check(f"{res['where']} passes Kubernetes' schema ({res['checked']})", not res["errors"],
                  "; ".join(res["errors"]))

# --- the plugins' parsers, checked with a config they must refuse -------------------------
if conf_check:
    said = parser_says({"cniVersion": "1.0.0", "name": "x", "type": "rdma-netns", "device": "eth1",
                        "ipam": {"type": "rdma-netns-ipam", "range": "10.0.0.0/33"}})
    check("the parsers refuse a config with a bad range, and say why", "10.0.0.0/33" in said, said)
else:
    check("manifests.py got the cni-conf-check program (argv[1])", False)

print(f"1..{len(results)}")
for i, (name, ok, why) in enumerate(results, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {name}")
    if not ok and why:
        print(f"# {why}")
sys.exit(0 if all(ok for _, ok, _ in results) else 1)
