#!/usr/bin/env python3
"""Idle footprint of the host, for builds given as NAME=BUILD_DIR, in one run.

For each build: the peak RSS of `runloop-mcp --version`; VmRSS of a stdio
deployment (hello, testtools, lifecycle; a cloud backend) after initialize
and tools/list, idle; the shared objects it maps then; and the time of its
first and second list_devboxes call against a local fake Runloop API (the
first one loads libcurl and libcrypto in a build that loads them lazily).
Run by idle_rss.sh, which builds the peer revision.
"""
import fcntl
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROUNDS = 5


class FakeApi(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"devboxes":[],"has_more":false,"total_count":0}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def deployment(port):
    return ("server:\n  name: idle-bench\n  transport: stdio\n"
            "runloop:\n  backend: cloud\n"
            f"  base_url: http://127.0.0.1:{port}\n  api_key: bench-key\n"
            "plugins:\n  - name: hello\n  - name: testtools\n"
            "  - name: lifecycle\n")


def vm_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def mapped_libs(pid):
    with open(f"/proc/{pid}/maps") as f:
        names = {l.split()[-1].rsplit("/", 1)[-1] for l in f if ".so" in l}
    return sorted(n.split(".so")[0] for n in names)


def version_rss_kib(binary):
    """VmHWM of `binary --version` once it is done and writing its line.

    ru_maxrss would count the forking parent's pages too, so the child's
    stdout is a full pipe: its one write blocks after all its work, and its
    own /proc status is read then.
    """
    r, w = os.pipe()
    fcntl.fcntl(w, 1031, 4096)  # F_SETPIPE_SZ: one page
    os.set_blocking(w, False)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(w, True)
    p = subprocess.Popen([binary, "--version"], stdout=w)
    os.close(w)
    hwm = -1
    try:
        for _ in range(6000):  # up to 60 s on a loaded machine
            # --version sleeps nowhere but in that write.
            with open(f"/proc/{p.pid}/stat") as f:
                blocked = f.read().rsplit(")", 1)[1].split()[0] == "S"
            if blocked:
                with open(f"/proc/{p.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            hwm = int(line.split()[1])
                break
            time.sleep(0.01)
    finally:
        while os.read(r, 65536):
            pass
        os.close(r)
        p.wait(timeout=60)
    if hwm < 0:
        raise RuntimeError(f"{binary} --version never wrote its line")
    return hwm


class Host:
    def __init__(self, build, conf):
        env = dict(os.environ, RLMCP_PLUGIN_DIR=os.path.join(build, "plugins"))
        self.p = subprocess.Popen(
            [os.path.join(build, "bin", "runloop-mcp"), "--config", conf],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=env)
        self.next_id = 1

    def call(self, method, params=None):
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method,
               "params": params or {}}
        self.next_id += 1
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"the host exited during {method}")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def notify(self, method):
        msg = {"jsonrpc": "2.0", "method": method}
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def measure(build, conf):
    h = Host(build, conf)
    try:
        h.call("initialize", {"protocolVersion": "2025-11-25",
                              "capabilities": {},
                              "clientInfo": {"name": "bench", "version": "1"}})
        h.notify("notifications/initialized")
        tools = h.call("tools/list")["tools"]
        # Idle: let start-up work (threads, lazy frees) settle.
        time.sleep(0.5)
        rss = vm_rss_kib(h.p.pid)
        libs = mapped_libs(h.p.pid)
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            r = h.call("tools/call", {"name": "list_devboxes", "arguments": {}})
            times.append((time.perf_counter() - t0) * 1000)
            if r.get("isError"):
                raise RuntimeError(f"list_devboxes failed: {r}")
        after = vm_rss_kib(h.p.pid)
        return {"rss": rss, "tools": len(tools), "libs": libs,
                "first_ms": times[0], "second_ms": times[1], "after": after}
    finally:
        h.close()


def main():
    builds = [a.split("=", 1) for a in sys.argv[1:]]
    if not builds:
        sys.exit("usage: idle_rss.py NAME=BUILD_DIR [NAME=BUILD_DIR ...]")
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeApi)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(deployment(srv.server_address[1]))
        conf = f.name
    try:
        print("--version peak RSS (VmHWM, KiB), median of "
              f"{ROUNDS}:")
        for name, build in builds:
            binary = os.path.join(build, "bin", "runloop-mcp")
            peaks = [version_rss_kib(binary) for _ in range(ROUNDS)]
            print(f"  {name:12} {statistics.median(peaks):.0f}")
        res = {name: [] for name, _ in builds}
        for _ in range(ROUNDS):  # interleaved: load changes hit all alike
            for name, build in builds:
                res[name].append(measure(build, conf))
        print(f"stdio deployment, {ROUNDS} runs each (median):")
        print(f"  {'build':12} {'idle VmRSS KiB':>15} {'1st call ms':>12} "
              f"{'2nd call ms':>12} {'VmRSS after KiB':>16} tools")
        for name, _ in builds:
            r = res[name]
            med = lambda k: statistics.median(x[k] for x in r)
            print(f"  {name:12} {med('rss'):15.0f} {med('first_ms'):12.1f} "
                  f"{med('second_ms'):12.1f} {med('after'):16.0f} "
                  f"{r[0]['tools']}")
        for name, _ in builds:
            print(f"  {name} maps when idle: {' '.join(res[name][0]['libs'])}")
    finally:
        srv.shutdown()
        os.unlink(conf)


if __name__ == "__main__":
    main()
