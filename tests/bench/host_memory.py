#!/usr/bin/env python3
"""The host's memory, for builds given as NAME=BUILD_DIR, in one run.

RSS counts every page of the shared libraries a process maps, pages that
other processes share; what a host costs the machine is its unique set
(USS: Private_Clean + Private_Dirty) and its proportional share (PSS), both
from /proc/PID/smaps_rollup. Printed beside RSS and start time:

1. idle, the default deployment (conf/runloop-mcp.yaml: stdio, the local
   engine, which runs already): start time (spawn to the answers of
   initialize and tools/list), then RSS, PSS, USS and anonymous memory;
2. idle, stdio on a cloud backend (a local fake Runloop API) before any
   call: the case where a library loaded on first use is not mapped yet;
3. sessions: an HTTP deployment (testtools plugin, cloud backend) idle,
   then ROUNDS_HTTP rounds of SESSIONS sessions opened at once and ended
   (host_memory_sessions.mjs), RSS and USS after each; the fourth round's
   growth and the end against idle. NAME+arenas runs a build with
   MALLOC_ARENA_MAX=2 (glibc's arena cap, no code change) to tell the cap
   from the host's own malloc_trim after sessions end.

Run by host_memory.sh, which builds the peer revision. No assertions: this
prints figures.
"""
import http.server
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROUNDS = int(os.environ.get("ROUNDS", "5"))
SESSIONS = int(os.environ.get("SESSIONS", "1000"))
ROUNDS_HTTP = int(os.environ.get("ROUNDS_HTTP", "4"))
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


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


def smaps(pid):
    """KiB: rss, pss, uss, anon of a live process."""
    v = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                v[parts[0].rstrip(":")] = int(parts[1])
    return {"rss": v["Rss"], "pss": v["Pss"],
            "uss": v["Private_Clean"] + v["Private_Dirty"],
            "anon": v.get("Anonymous", 0)}


def mapped_libs(pid):
    with open(f"/proc/{pid}/maps") as f:
        names = {l.split()[-1].rsplit("/", 1)[-1] for l in f if ".so" in l}
    return sorted(n.split(".so")[0] for n in names)


def host_env(build, extra=None):
    env = dict(os.environ, RLMCP_PLUGIN_DIR=os.path.join(build, "plugins"))
    for k in ("RUNLOOP_API_KEY", "RUNLOOP_BASE_URL", "RLMCP_CONFIG"):
        env.pop(k, None)
    env.update(extra or {})
    return env


class StdioHost:
    def __init__(self, build, conf, env):
        self.t0 = time.perf_counter()
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

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def idle_stdio(build, conf, env):
    h = StdioHost(build, conf, env)
    try:
        h.call("initialize", {"protocolVersion": "2025-11-25",
                              "capabilities": {},
                              "clientInfo": {"name": "bench", "version": "1"}})
        h.p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        tools = h.call("tools/list")["tools"]
        start_ms = (time.perf_counter() - h.t0) * 1000
        time.sleep(0.5)  # start-up work settles
        m = smaps(h.p.pid)
        m.update(start_ms=start_ms, tools=len(tools), libs=mapped_libs(h.p.pid))
        return m
    finally:
        h.close()


def print_idle(title, builds, res):
    print(title)
    print(f"  {'build':16} {'start ms':>9} {'RSS KiB':>8} {'PSS KiB':>8} "
          f"{'USS KiB':>8} {'anon KiB':>9} tools")
    for name in builds:
        r = res[name]
        med = lambda k: statistics.median(x[k] for x in r)
        print(f"  {name:16} {med('start_ms'):9.1f} {med('rss'):8.0f} "
              f"{med('pss'):8.0f} {med('uss'):8.0f} {med('anon'):9.0f} "
              f"{r[0]['tools']}")


def wait_port(p, log):
    for _ in range(1200):
        with open(log) as f:
            m = re.search(r"\(port (\d+)\)", f.read())
        if m:
            return int(m.group(1))
        if p.poll() is not None:
            raise RuntimeError(f"the HTTP host exited:\n{open(log).read()}")
        time.sleep(0.05)
    raise RuntimeError("the HTTP host did not start")


def sessions_run(build, conf, env, work, name):
    log = os.path.join(work, f"{name}.log")
    with open(log, "w") as err:
        p = subprocess.Popen(
            [os.path.join(build, "bin", "runloop-mcp"), "-c", conf],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
            env=env)
    try:
        port = wait_port(p, log)
        url = f"http://127.0.0.1:{port}/mcp"
        time.sleep(1.0)
        out = {"idle": smaps(p.pid), "rounds": []}
        for _ in range(ROUNDS_HTTP):
            r = subprocess.run(["node", os.path.join(HERE, "host_memory_sessions.mjs"),
                                url, str(SESSIONS)], capture_output=True,
                               text=True, timeout=600, check=True)
            got = json.loads(r.stdout)
            # Ended sessions are freed at once; the reaper's tick (1 s)
            # may trim after them.
            time.sleep(2.5)
            got.update(smaps(p.pid))
            out["rounds"].append(got)
        return out
    finally:
        p.terminate()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def print_sessions(builds, res):
    print(f"HTTP sessions: {ROUNDS_HTTP} rounds of {SESSIONS} opened at once "
          "and ended (RSS / USS, MiB)")
    hdr = "".join(f" {'round ' + str(i + 1):>13}" for i in range(ROUNDS_HTTP))
    print(f"  {'build':16} {'idle':>13}{hdr} {'last adds':>10} {'end/idle':>9} opened")
    for name in builds:
        r = res[name]
        mib = lambda k: f"{k['rss'] / 1024:5.1f} / {k['uss'] / 1024:5.1f}"
        cells = "".join(f" {mib(x):>13}" for x in r["rounds"])
        last = r["rounds"][-1]
        prev = r["rounds"][-2] if len(r["rounds"]) > 1 else r["idle"]
        adds = (last["rss"] - prev["rss"]) / 1024
        ratio = last["rss"] / r["idle"]["rss"]
        opened = "/".join(str(x["opened"]) for x in r["rounds"])
        print(f"  {name:16} {mib(r['idle']):>13}{cells} {adds:9.1f}M "
              f"{ratio:8.2f}x {opened}")


def source_conf(build):
    """The default deployment of the tree build was made from (a peer's
    conf may predate settings this tree's conf uses)."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    src = line.split("=", 1)[1].strip()
                    return os.path.join(src, "conf", "runloop-mcp.yaml")
    except OSError:
        pass
    return os.path.join(SRC, "conf", "runloop-mcp.yaml")


def main():
    builds = dict(a.split("=", 1) for a in sys.argv[1:])
    if not builds:
        sys.exit("usage: host_memory.py NAME=BUILD_DIR [NAME=BUILD_DIR ...]")
    first = next(iter(builds.values()))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeApi)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    work = tempfile.mkdtemp(prefix="rlmcp-mem-")
    state = os.path.join(work, "s")
    default_conf = os.path.join(SRC, "conf", "runloop-mcp.yaml")
    cloud_conf = os.path.join(work, "cloud.yaml")
    http_conf = os.path.join(work, "http.yaml")
    api = f"http://127.0.0.1:{srv.server_address[1]}"
    with open(cloud_conf, "w") as f:
        f.write("server:\n  name: mem-bench\n  transport: stdio\n"
                f"runloop:\n  backend: cloud\n  base_url: {api}\n"
                "  api_key: bench-key\nplugins:\n  - name: hello\n"
                "  - name: testtools\n  - name: lifecycle\n")
    with open(http_conf, "w") as f:
        f.write("server:\n  name: mem-bench\n  transport: http\n  http:\n"
                "    listen: 127.0.0.1:0\n    max_sessions: 1100\n"
                "    max_connections: 1100\n"
                f"runloop:\n  backend: cloud\n  base_url: {api}\n"
                "  api_key: bench-key\nplugins:\n  - name: testtools\n")
    engine_env = host_env(first, {"RLMCP_STATE_DIR": state})
    try:
        # One engine for every build: each host attaches to it.
        subprocess.run([os.path.join(first, "bin", "runloop-mcp"), "engine",
                        "start", "-c", default_conf], env=engine_env,
                       check=True, stdout=subprocess.DEVNULL, timeout=300)
        res = {n: [] for n in builds}
        cloud = {n: [] for n in builds}
        for _ in range(ROUNDS):  # interleaved: load changes hit all alike
            for name, build in builds.items():
                res[name].append(idle_stdio(
                    build, source_conf(build),
                    host_env(build, {"RLMCP_STATE_DIR": state})))
                cloud[name].append(idle_stdio(build, cloud_conf, host_env(build)))
        print_idle(f"default deployment (stdio, local engine), idle, median of {ROUNDS}:",
                   builds, res)
        print_idle(f"stdio on a cloud backend, idle before its first call, median of {ROUNDS}:",
                   builds, cloud)
        for name in builds:
            print(f"  {name} maps (default deployment): {' '.join(res[name][0]['libs'])}")
        sess = {}
        for name, build in builds.items():
            sess[name] = sessions_run(build, http_conf, host_env(build), work, name)
            arenas = f"{name}+arenas"
            sess[arenas] = sessions_run(build, http_conf,
                                        host_env(build, {"MALLOC_ARENA_MAX": "2"}),
                                        work, arenas)
        print_sessions(list(sess), sess)
    finally:
        subprocess.run([os.path.join(first, "bin", "runloop-mcp"), "engine",
                        "stop", "-c", default_conf], env=engine_env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=300)
        srv.shutdown()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
