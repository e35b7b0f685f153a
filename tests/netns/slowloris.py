#!/usr/bin/python3
"""slowloris.py HOST PORT N READY-FILE: holds N connections to HOST:PORT, each
an HTTP request whose headers never end: the request line, then one header
line per connection every second. Writes "connected N" to READY-FILE once
every connection is open and has sent its first lines. On SIGTERM it checks
every connection once more and prints "open K closed M" (M: those the server
closed), then exits."""
import signal
import socket
import sys
import time

host, port, n, ready = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
socks = []
closed = 0
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)


def still_open(s):
    """Sends one more header line; False when the server has closed it."""
    try:
        s.setblocking(False)
        try:
            s.recv(1, socket.MSG_PEEK)
            return False  # closed, or answered (an error) before the headers ended
        except BlockingIOError:
            pass
        s.send(b"X-Slow: 1\r\n")
        return True
    except OSError:
        return False


for i in range(n):
    s = socket.create_connection((host, port), timeout=30)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: slow\r\n")
    socks.append(s)
with open(ready, "w") as f:
    f.write("connected %d\n" % len(socks))
while not stop:
    alive = []
    for s in socks:
        if still_open(s):
            alive.append(s)
        else:
            closed += 1
            s.close()
    socks = alive
    for _ in range(10):
        if stop:
            break
        time.sleep(0.1)
alive = [s for s in socks if still_open(s)]
closed += len(socks) - len(alive)
print("open %d closed %d" % (len(alive), closed), flush=True)
