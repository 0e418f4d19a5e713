#!/usr/bin/env python3
"""The daemon's idle CPU, on an empty store and after N alerts of history.

Usage: python3 crates/nightwatch/benches/idle_cpu.py target/release/nightwatch DATA_DIR N
DATA_DIR must hold a serve.yaml routing alertname=DiskFull (see BENCHMARKS.md); the daemon
listens on 127.0.0.1:0. Idle CPU is the daemon process's utime+stime over 30 s, 5 s after
the last write, as a share of one core."""
import json, os, socket, subprocess, sys, time, threading
binary, home, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
env = dict(os.environ, NIGHTWATCH_HOME=home)
p = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
line = p.stdout.readline().strip()
addr = line.rsplit("http://", 1)[1]
host, port = addr.split(":")
def post(body):
    s = socket.create_connection((host, int(port)))
    data = body.encode()
    s.sendall(b"POST /hooks/alertmanager HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(data) + data)
    reply = b""
    while True:
        chunk = s.recv(65536)
        if not chunk: break
        reply += chunk
    s.close()
    assert reply.split()[1] == b"200", reply[:200]
def group(g, size):
    alerts = [{"status":"firing","labels":{"alertname":"DiskFull","instance":"i%d" % (g*500+i)},"annotations":{},"startsAt":"2026-02-14T03:16:30Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://p","fingerprint":"idle-%d" % (g*500+i)} for i in range(size)]
    return json.dumps({"version":"4","groupKey":"g","status":"firing","receiver":"r","groupLabels":{},"commonLabels":{},"commonAnnotations":{},"externalURL":"http://am","alerts":alerts})
def ticks():
    f = open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])
def idle(label):
    time.sleep(5)
    t0, c0 = time.time(), ticks()
    time.sleep(30)
    t1, c1 = time.time(), ticks()
    hz = os.sysconf("SC_CLK_TCK")
    print("%s: idle CPU %.2f%% of a core over %.0f s" % (label, 100.0 * (c1 - c0) / hz / (t1 - t0), t1 - t0), flush=True)
idle("empty store")
start = time.time()
for g in range(n // 500):
    post(group(g, 500))
print("stored %d alerts in %.0f s" % (n, time.time() - start), flush=True)
idle("%d alerts of history" % n)
p.terminate(); p.wait()
