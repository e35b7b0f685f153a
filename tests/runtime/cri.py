#!/usr/bin/env python3
"""A small CRI client for the runtime suite: what kubelet sends, nothing more.

The gRPC stubs are generated at start from k8s.io/cri-api's api.proto as
Debian ships it (golang-k8s-cri-api-dev), never written out by hand.

One process serves a whole test: it reads one JSON array per line on stdin,
["Method", args...], and answers one JSON object per line on stdout:
{"ok": RESULT} or {"error": "CODE: details"}. Shell tests run it as a
coprocess (cri_start in runtime-lib.sh), so python starts once.

Methods (see COMMANDS below): version, status, runp, runp_many, pstatus,
create, start, exec, stopp, rmp, stopc, rmc, pods, containers, cniconfig.
"""
import concurrent.futures
import json
import os
import re
import sys
import tempfile

PROTO = os.environ.get(
    "CRI_API_PROTO",
    "/usr/share/gocode/src/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto")
SOCKET = os.environ.get("CRI_SOCKET", "unix:///run/containerd/containerd.sock")
TIMEOUT = float(os.environ.get("CRI_TIMEOUT", "240"))


def load_stubs():
    """Compile api.proto with grpc_tools into a temporary dir and import it."""
    from grpc_tools import protoc
    gen = tempfile.mkdtemp(prefix="cri-gen.")
    src = open(PROTO, encoding="utf-8").read()
    # Older grpc-tools reject newer field options (debug_redact) and gogo imports.
    src = re.sub(r"\s*\[\s*\(?debug_redact\)?\s*=\s*true\s*\]", "", src)
    src = re.sub(r'import\s+"github.com/gogo/[^"]*";', "", src)
    src = re.sub(r"option\s+\(gogoproto\.[^;]*;", "", src)
    with open(os.path.join(gen, "api.proto"), "w", encoding="utf-8") as f:
        f.write(src)
    rc = protoc.main(["protoc", "-I" + gen, "--python_out=" + gen,
                      "--grpc_python_out=" + gen, os.path.join(gen, "api.proto")])
    if rc != 0:
        raise SystemExit(f"cri.py: protoc failed on {PROTO} ({rc})")
    sys.path.insert(0, gen)
    import api_pb2
    import api_pb2_grpc
    return api_pb2, api_pb2_grpc


pb, pb_grpc = load_stubs()
import grpc  # noqa: E402 (after the stubs: they import it too)
from google.protobuf import json_format  # noqa: E402

channel = grpc.insecure_channel(SOCKET)
rt = pb_grpc.RuntimeServiceStub(channel)


def call(method, req):
    return getattr(rt, method)(req, timeout=TIMEOUT)


def done(method, req):
    """A call whose answer carries nothing: null on success."""
    call(method, req)


def pod_config(name, uid, annotations=None, namespace="default"):
    return pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=name, uid=uid, namespace=namespace, attempt=0),
        hostname=name,
        log_directory="/var/log/pods/" + uid,
        annotations=annotations or {},
        labels={"app": "rdmans-test"},
        linux=pb.LinuxPodSandboxConfig())


def runp(name, uid=None, annotations=None, handler=""):
    cfg = pod_config(name, uid or name + "-uid", annotations)
    return call("RunPodSandbox", pb.RunPodSandboxRequest(
        config=cfg, runtime_handler=handler)).pod_sandbox_id


def runp_many(specs):
    """[[name, handler], ...] in parallel, as kubelet's pod workers do."""
    def one(spec):
        try:
            return {"ok": runp(spec[0], handler=spec[1] if len(spec) > 1 else "")}
        except grpc.RpcError as e:
            return {"error": f"{e.code().name}: {e.details()}"}
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(specs)) as ex:
        return list(ex.map(one, specs))


def pstatus(pod_id):
    r = call("PodSandboxStatus", pb.PodSandboxStatusRequest(pod_sandbox_id=pod_id, verbose=True))
    st = r.status
    out = {"state": pb.PodSandboxState.Name(st.state), "ip": st.network.ip,
           "additional_ips": [a.ip for a in st.network.additional_ips]}
    info = r.info.get("info")
    if info:
        netns = json.loads(info).get("runtimeSpec", {}).get("linux", {}).get("namespaces", [])
        out["netns"] = next((n.get("path", "") for n in netns if n.get("type") == "network"), "")
    return out


def create(pod_id, name, image, command, cdi=None, env=None, annotations=None):
    cfg = pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=name, attempt=0),
        image=pb.ImageSpec(image=image),
        command=command,
        # (cri-api in sid: KeyValue.value is bytes)
        envs=[pb.KeyValue(key=k, value=v.encode()) for k, v in (env or {}).items()],
        annotations=annotations or {},
        CDI_devices=[pb.CDIDevice(name=n) for n in (cdi or [])],
        log_path=name + ".log",
        # kubelet's default: a PID namespace of the container's own (PID 1 is its process)
        linux=pb.LinuxContainerConfig(security_context=pb.LinuxContainerSecurityContext(
            namespace_options=pb.NamespaceOption(pid=pb.CONTAINER))))
    r = call("PodSandboxStatus", pb.PodSandboxStatusRequest(pod_sandbox_id=pod_id))
    sandbox_cfg = pod_config(r.status.metadata.name, r.status.metadata.uid,
                             dict(r.status.annotations), r.status.metadata.namespace)
    return call("CreateContainer", pb.CreateContainerRequest(
        pod_sandbox_id=pod_id, config=cfg, sandbox_config=sandbox_cfg)).container_id


def exec_sync(cid, command, timeout=60):
    r = call("ExecSync", pb.ExecSyncRequest(container_id=cid, cmd=command, timeout=timeout))
    return {"exit": r.exit_code, "stdout": r.stdout.decode(errors="replace"),
            "stderr": r.stderr.decode(errors="replace")}


def status():
    r = call("Status", pb.StatusRequest(verbose=False))
    return {c.type: {"status": c.status, "reason": c.reason, "message": c.message}
            for c in r.status.conditions}


def cniconfig():
    """The CNI config containerd has loaded (verbose Status's info), as it reports it."""
    r = call("Status", pb.StatusRequest(verbose=True))
    return json.loads(r.info.get("cniconfig", "null"))


COMMANDS = {
    "cniconfig": cniconfig,
    "version": lambda: json_format.MessageToDict(call("Version", pb.VersionRequest())),
    "status": status,
    "runp": runp,
    "runp_many": runp_many,
    "pstatus": pstatus,
    "create": create,
    "start": lambda cid: done("StartContainer", pb.StartContainerRequest(container_id=cid)),
    "exec": exec_sync,
    "stopp": lambda pid: done("StopPodSandbox", pb.StopPodSandboxRequest(pod_sandbox_id=pid)),
    "rmp": lambda pid: done("RemovePodSandbox", pb.RemovePodSandboxRequest(pod_sandbox_id=pid)),
    "stopc": lambda cid: done("StopContainer", pb.StopContainerRequest(container_id=cid, timeout=5)),
    "rmc": lambda cid: done("RemoveContainer", pb.RemoveContainerRequest(container_id=cid)),
    "pods": lambda: [{"id": p.id, "name": p.metadata.name, "state": pb.PodSandboxState.Name(p.state)}
                     for p in call("ListPodSandbox", pb.ListPodSandboxRequest()).items],
    "containers": lambda: [{"id": c.id, "name": c.metadata.name, "pod": c.pod_sandbox_id}
                           for c in call("ListContainers", pb.ListContainersRequest()).containers],
}


def serve():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            fn = COMMANDS[req[0]]
            ans = {"ok": fn(*req[1:])}
        except grpc.RpcError as e:
            ans = {"error": f"{e.code().name}: {e.details()}"}
        except Exception as e:  # a bad request is an answer too, never a hang
            ans = {"error": f"client: {type(e).__name__}: {e}"}
        print(json.dumps(ans), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1:  # one call: cri.py METHOD JSON-ARGS...
        print(json.dumps({"ok": COMMANDS[sys.argv[1]](*[json.loads(a) for a in sys.argv[2:]])}))
    else:
        serve()
