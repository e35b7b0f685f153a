#!/usr/bin/python3
"""kubelet's side of the device plugin API v1beta1, from kubelet's own .proto files.

What kubelet's device manager does, for the tests (kubelet itself cannot run here):
  serve DIR LOG [PODRES-SOCKET STATE]
                    like kubelet starting: removes every socket in DIR, serves
                    Registration on DIR/kubelet.sock; on Register it dials the
                    plugin back and calls GetDevicePluginOptions before it
                    answers, then keeps ListAndWatch open. Every event is a
                    JSON line in LOG. SIGTERM ends it (the streams close).
                    With PODRES-SOCKET: PodResourcesLister (v1) there, List
                    answering what STATE records.
  assign STATE NS POD CONTAINER RESOURCE ID...
                    records an allocation (kubelet's checkpoint) for List
  options DIR EP    GetDevicePluginOptions on DIR/EP
  preferred DIR EP --available A,B --must C --size N
  allocate DIR EP ID...    (one container)
  time-allocate DIR EP N ID...   N Allocates on one connection, as kubelet
                           keeps one: "median_ms p99_ms max_ms"
  last-list LOG RESOURCE   the newest list: "ID HEALTH NUMA" per line
  lists LOG RESOURCE       how many lists arrived
The messages come from the build's copies of deviceplugin.proto (gogoproto
options stripped, src/lib/device-plugin/kubelet_proto): RDMANS_KUBELET_PROTOS names that dir.
"""
import json
import os
import signal
import sys
import tempfile
import threading
import time
from concurrent import futures


def load_protos():
    proto_dir = os.environ["RDMANS_KUBELET_PROTOS"]
    # RDMANS_KUBELET_PY: a directory to keep the generated modules in (protoc
    # runs once, not at every call: each call is a process under TCG)
    out = os.environ.get("RDMANS_KUBELET_PY") or tempfile.mkdtemp(prefix="kubelet-py-")
    if not os.path.exists(os.path.join(out, "podresources_pb2_grpc.py")):
        from grpc_tools import protoc
        os.makedirs(out, exist_ok=True)
        for f in ("deviceplugin.proto", "podresources.proto"):
            if protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={out}",
                            f"--grpc_python_out={out}", os.path.join(proto_dir, f)]):
                sys.exit(f"kubelet.py: protoc failed on {proto_dir}/{f}")
    sys.path.insert(0, out)
    import deviceplugin_pb2
    import deviceplugin_pb2_grpc
    import podresources_pb2
    import podresources_pb2_grpc
    return deviceplugin_pb2, deviceplugin_pb2_grpc, podresources_pb2, podresources_pb2_grpc


import grpc  # noqa: E402

dp, dpg, pr, prg = load_protos()
log_lock = threading.Lock()


def log(path, event):
    event.setdefault("t", time.time())
    with log_lock, open(path, "a") as f:
        f.write(json.dumps(event) + "\n")


def dial(directory, endpoint):
    ch = grpc.insecure_channel("unix://" + os.path.join(directory, endpoint))
    grpc.channel_ready_future(ch).result(timeout=30)
    return ch, dpg.DevicePluginStub(ch)


def pod_resources(state_path, log_path):
    class Lister(prg.PodResourcesListerServicer):
        def List(self, req, ctx):
            try:
                state = json.load(open(state_path))
            except FileNotFoundError:
                state = []
            log(log_path, {"event": "podresources-list"})
            pods = {}
            for a in state:
                p = pods.setdefault((a["ns"], a["pod"]), {})
                p.setdefault(a["container"], []).append(
                    pr.ContainerDevices(resource_name=a["resource"], device_ids=a["ids"]))
            return pr.ListPodResourcesResponse(pod_resources=[
                pr.PodResources(name=name, namespace=ns, containers=[
                    pr.ContainerResources(name=c, devices=devs) for c, devs in ctrs.items()])
                for (ns, name), ctrs in pods.items()])
    return Lister()


def serve(directory, log_path, podres_sock=None, state_path=None):
    # kubelet's device manager empties its directory at start (all but its checkpoint)
    for name in os.listdir(directory):
        if name != "kubelet_internal_checkpoint":
            os.unlink(os.path.join(directory, name))
    channels = []

    def watch(stub, resource):
        try:
            for resp in stub.ListAndWatch(dp.Empty()):
                log(log_path, {"event": "list", "resource": resource,
                               "devices": [{"id": d.ID, "health": d.health,
                                            "numa": [n.ID for n in d.topology.nodes]}
                                           for d in resp.devices]})
            log(log_path, {"event": "stream-end", "resource": resource, "code": "OK"})
        except grpc.RpcError as e:
            log(log_path, {"event": "stream-end", "resource": resource, "code": str(e.code())})

    class Registration(dpg.RegistrationServicer):
        def Register(self, req, ctx):
            log(log_path, {"event": "register", "version": req.version, "endpoint": req.endpoint,
                           "resource": req.resource_name,
                           "preferred": req.options.get_preferred_allocation_available})
            if req.version != "v1beta1":
                ctx.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"Unsupported version {req.version}")
            try:
                ch, stub = dial(directory, req.endpoint)
                opts = stub.GetDevicePluginOptions(dp.Empty(), timeout=30)
            except Exception as e:  # kubelet answers Register with the dial's error
                log(log_path, {"event": "dial-failed", "error": str(e)})
                ctx.abort(grpc.StatusCode.UNKNOWN, f"cannot dial the plugin: {e}")
            channels.append(ch)
            log(log_path, {"event": "options", "resource": req.resource_name,
                           "preferred": opts.get_preferred_allocation_available})
            threading.Thread(target=watch, args=(stub, req.resource_name), daemon=True).start()
            return dp.Empty()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    dpg.add_RegistrationServicer_to_server(Registration(), server)
    sock = os.path.join(directory, "kubelet.sock")
    server.add_insecure_port("unix://" + sock)
    if podres_sock:
        os.makedirs(os.path.dirname(podres_sock), exist_ok=True)
        if os.path.exists(podres_sock):
            os.unlink(podres_sock)
        prg.add_PodResourcesListerServicer_to_server(pod_resources(state_path, log_path), server)
        server.add_insecure_port("unix://" + podres_sock)
    server.start()
    log(log_path, {"event": "started"})
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    done.wait()
    server.stop(0)
    for ch in channels:
        ch.close()
    if os.path.exists(sock):
        os.unlink(sock)


def as_dict(msg):
    from google.protobuf import json_format
    return json_format.MessageToDict(msg, preserving_proto_field_name=True)


def main(argv):
    cmd = argv[1]
    try:
        if cmd == "serve":
            serve(*argv[2:6])
        elif cmd == "assign":
            try:
                state = json.load(open(argv[2]))
            except FileNotFoundError:
                state = []
            state.append({"ns": argv[3], "pod": argv[4], "container": argv[5],
                          "resource": argv[6], "ids": argv[7:]})
            with open(argv[2] + ".new", "w") as f:
                json.dump(state, f)
            os.rename(argv[2] + ".new", argv[2])
        elif cmd == "options":
            _, stub = dial(argv[2], argv[3])
            print(json.dumps(as_dict(stub.GetDevicePluginOptions(dp.Empty(), timeout=30))))
        elif cmd == "preferred":
            args = dict(zip(argv[4::2], argv[5::2]))
            req = dp.PreferredAllocationRequest(container_requests=[
                dp.ContainerPreferredAllocationRequest(
                    available_deviceIDs=[x for x in args.get("--available", "").split(",") if x],
                    must_include_deviceIDs=[x for x in args.get("--must", "").split(",") if x],
                    allocation_size=int(args.get("--size", "0")))])
            _, stub = dial(argv[2], argv[3])
            resp = stub.GetPreferredAllocation(req, timeout=30)
            print(",".join(resp.container_responses[0].deviceIDs))
        elif cmd == "allocate":
            _, stub = dial(argv[2], argv[3])
            req = dp.AllocateRequest(container_requests=[
                dp.ContainerAllocateRequest(devices_ids=argv[4:])])
            print(json.dumps(as_dict(stub.Allocate(req, timeout=30)), sort_keys=True))
        elif cmd == "time-allocate":
            _, stub = dial(argv[2], argv[3])
            req = dp.AllocateRequest(container_requests=[
                dp.ContainerAllocateRequest(devices_ids=argv[5:])])
            times = []
            for _ in range(int(argv[4])):
                t0 = time.monotonic()
                stub.Allocate(req, timeout=30)
                times.append((time.monotonic() - t0) * 1000)
            times.sort()
            print(f"{times[len(times) // 2]:.2f} {times[int(len(times) * 0.99)]:.2f} {times[-1]:.2f}")
        elif cmd in ("last-list", "lists"):
            lists = [e for e in map(json.loads, open(argv[2]))
                     if e["event"] == "list" and e["resource"] == argv[3]]
            if cmd == "lists":
                print(len(lists))
            elif lists:
                for d in sorted(lists[-1]["devices"], key=lambda d: d["id"]):
                    print(d["id"], d["health"], ",".join(map(str, d["numa"])) or "-")
        else:
            sys.exit(f"kubelet.py: unknown command {cmd}")
    except grpc.RpcError as e:
        print(f"{e.code().name}: {e.details()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
