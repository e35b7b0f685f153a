#!/usr/bin/env python3
"""A fault-injecting pass-through in front of one real etcd member (v3 JSON).

usage: etcd-faults.py UPSTREAM_URL ETCD_PID CONTROL_FILE PORT_FILE

Every request goes to UPSTREAM_URL and its answer comes back unchanged,
except that from the Nth write (a txn, put or deleterange) on, the failure
that CONTROL_FILE names ("GEN N MODE", read at each request; a new GEN
starts the count again, N=0 only counts) happens:

  nospace      etcd's own NOSPACE alarm is raised on the member (the
               maintenance API), so etcd itself refuses the write, as a
               member over its --quota-backend-bytes does
  frozen       the member gets SIGSTOP and, once all its threads have
               stopped, the request: it hangs in etcd until the test sends
               SIGCONT, and etcd then carries it out
  unavailable  503 with the gateway's JSON for gRPC Unavailable, what a
               member without a leader answers
  badgateway   502 with a plain-text body, from a load balancer in between
  reset        the connection is reset (RST) with no answer

Once frozen, the requests after that first write are held without reaching
etcd, and dropped with no answer when the GEN changes: only the one write
that froze the member is carried out late, so a test knows what to expect.

GET /_state answers "writes W open O": the writes counted in this GEN and
the other connections still open. Connections are counted when accepted,
one at a time and in order, so when that answer is made every connection
made before it is counted.
"""
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UPSTREAM, ETCD_PID, CONTROL, PORT_FILE = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
WRITE_PATHS = ("/v3/kv/txn", "/v3/kv/put", "/v3/kv/deleterange")

lock = threading.Lock()
state = {"gen": None, "writes": 0, "open": 0, "fired": False}


def control():
    try:
        with open(CONTROL) as f:
            gen, n, mode = f.read().split()
        return gen, int(n), mode
    except (OSError, ValueError):
        return "-", 0, "off"


def upstream(path, body, timeout=120):
    req = urllib.request.Request(UPSTREAM + path, data=body,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def freeze(pid):
    """SIGSTOP, and return once every thread of pid has stopped. kill() wakes
    one thread, which then stops the others; until it has run, the rest go on,
    and etcd could answer the request sent next (a DEL whose frozen
    write succeeded)."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        states = []
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                    states.append(f.read().rsplit(") ", 1)[1][:1])
            except (OSError, IndexError):
                pass  # a thread that exited meanwhile
        if states and all(s in ("T", "t") for s in states):
            return
        time.sleep(0.001)
    # Forward the request anyway: a member that still answers makes the test's
    # check fail, with this line beside it. Failing the request here instead
    # would look like the frozen member the test expects.
    print("etcd-faults: pid %d did not stop within 30 s" % pid, file=sys.stderr)


def raise_nospace():
    status = json.loads(upstream("/v3/maintenance/status", b"{}")[2])
    member = status["header"]["member_id"]
    body = json.dumps({"action": "ACTIVATE", "memberID": member, "alarm": "NOSPACE"})
    upstream("/v3/maintenance/alarm", body.encode())


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, code, ctype, body):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with lock:
            text = "writes %d open %d\n" % (state["writes"], state["open"] - 1)
        self.answer(200, "text/plain", text.encode())

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        gen, n, mode = control()
        is_write = self.path in WRITE_PATHS and (
            self.path != "/v3/kv/txn" or b"request_put" in body or b"request_delete_range" in body)
        with lock:
            if gen != state["gen"]:
                state.update(gen=gen, writes=0, fired=False)
            if is_write:
                state["writes"] += 1
            fault = is_write and n > 0 and state["writes"] >= n
            first = fault and not state["fired"]
            if fault:
                state["fired"] = True
        if fault and mode == "unavailable":
            msg = "etcdserver: no leader"
            self.answer(503, "application/json",
                        json.dumps({"error": msg, "message": msg, "code": 14}).encode())
            return
        if fault and mode == "badgateway":
            self.answer(502, "text/plain", b"upstream connect error or disconnect/reset before headers\n")
            return
        if fault and mode == "reset":
            self.close_connection = True
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            return
        if fault and mode == "frozen" and not first:
            while control()[0] == gen:
                time.sleep(0.05)
            self.close_connection = True
            return
        if first and mode == "nospace":
            raise_nospace()
        if first and mode == "frozen":
            freeze(ETCD_PID)
        code, ctype, data = upstream(self.path, body)
        try:
            self.answer(code, ctype, data)
        except OSError:
            pass  # the client gave up waiting (frozen)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def process_request(self, request, client_address):
        with lock:
            state["open"] += 1
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            with lock:
                state["open"] -= 1


server = Server(("127.0.0.1", 0), Handler)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write("%d\n" % server.server_address[1])
os.rename(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
