# run_code / run_python's code contexts: one long-lived gateway inside the
# contexts devbox, its entrypoint. It keeps one IPython kernel (Debian's
# python3-ipykernel; its messages signed with python3-jupyter-client's
# Session) per context, plus one spare kernel started ahead, and
# answers small JSON requests on 127.0.0.1:PORT, which the plugin reaches
# through the devbox's tunnel: a warm cell costs one HTTP round trip and no
# process start. State lives here, so a context outlives the MCP host and
# ends with the devbox (the gateway's exit ends the devbox).
#
#   python3 ctxgw.py --port PORT [--spare 1]
#
# GET  /health                        {"ok": true} once listening
# GET  /contexts                      {"contexts": [view, ...]}
# POST /contexts {"cwd"?}             view of a new context
# POST /contexts/ID/restart           a fresh kernel, same id
# POST /contexts/ID/delete            kernel shut down
# POST /contexts/ID/interrupt {"run"?} SIGINT to the running cell, only if
#                                     it is run "run" when one is named
# POST /contexts/ID/execute {"code", "timeout_ms", "wait_ms", "run"?}
#   "run": the caller's id for the cell (a new one when absent)
# POST /contexts/ID/poll {"run", "after", "wait_ms"}
#   both answer {"run", "done", "events": [...], "next", "status",
#   "execution_count", "error"} with the events from index "after" on.
# Errors: {"code": "not_found"|"busy"|"bad_request"|"unsupported"|"failed",
# "message"} with HTTP 404, 409, 400, 501, 500.
import importlib.util
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from queue import Empty

MAX_EVENTS_BYTES = 8 << 20  # a cell's kept output; the rest is dropped
ID_RE = re.compile(r'^[a-z0-9]{1,32}$')
ANSI_RE = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')
STREAM_WAIT_S = 0.25
# The kernel without debugpy: contexts speak no debug protocol, and its
# import (vendored pydevd) is a third of a kernel's start.
LAUNCHER = ("import sys\nsys.modules['debugpy'] = None\n"
            "from ipykernel import kernelapp\nkernelapp.launch_new_instance()\n")
RUNTIME = tempfile.mkdtemp(prefix='ctxgw-')


def now_ms():
    return int(time.time() * 1000)


def free_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(('127.0.0.1', 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Kernel:
    """An IPython kernel process the gateway started itself (not through
    jupyter_client's KernelManager), so the first one starts before
    jupyter_client is imported: the two overlap on a devbox's first use."""

    def __init__(self, cwd):
        ports = free_ports(5)
        self.info = {'transport': 'tcp', 'ip': '127.0.0.1', 'shell_port': ports[0],
                     'iopub_port': ports[1], 'stdin_port': ports[2],
                     'control_port': ports[3], 'hb_port': ports[4],
                     'key': secrets.token_hex(16), 'signature_scheme': 'hmac-sha256',
                     'kernel_name': 'python3'}
        fd, self.file = tempfile.mkstemp(prefix='kernel-', suffix='.json', dir=RUNTIME)
        with os.fdopen(fd, 'w') as f:
            json.dump(self.info, f)
        # Figures come back as PNG display data (ipykernel's inline backend).
        env = dict(os.environ, MPLBACKEND='module://matplotlib_inline.backend_inline')
        self.proc = subprocess.Popen([sys.executable, '-c', LAUNCHER, '-f', self.file],
                                     cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                     start_new_session=True)

    def interrupt_kernel(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)

    def is_alive(self):
        return self.proc.poll() is None

    def shutdown_kernel(self, now=True):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        try:
            os.unlink(self.file)
        except OSError:
            pass


class KernelClient:
    """The kernel's shell and iopub channels as plain blocking zmq sockets,
    messages signed by jupyter_client's Session. Not jupyter_client's
    BlockingKernelClient: that one runs an asyncio loop per call on zmq's
    asyncio sockets, which cells (a thread each) would share across
    threads and loops."""

    def __init__(self, info):
        import zmq
        from jupyter_client.session import Session
        self.session = Session(key=info['key'].encode(), signature_scheme=info['signature_scheme'])
        ctx = zmq.Context.instance()
        self.shell = ctx.socket(zmq.DEALER)
        self.iopub = ctx.socket(zmq.SUB)
        self.iopub.setsockopt(zmq.SUBSCRIBE, b'')
        for sock in (self.shell, self.iopub):
            sock.setsockopt(zmq.LINGER, 0)
        self.shell.connect(f"tcp://{info['ip']}:{info['shell_port']}")
        self.iopub.connect(f"tcp://{info['ip']}:{info['iopub_port']}")

    def _send(self, msg_type, content):
        msg = self.session.msg(msg_type, content)
        self.session.send(self.shell, msg)
        return msg['header']['msg_id']

    def execute(self, code, store_history=True, allow_stdin=False):
        return self._send('execute_request', {
            'code': code, 'silent': False, 'store_history': store_history,
            'user_expressions': {}, 'allow_stdin': allow_stdin, 'stop_on_error': True})

    def kernel_info(self):
        return self._send('kernel_info_request', {})

    def _recv(self, sock, timeout):
        if not sock.poll(int(timeout * 1000)):
            raise Empty
        _, parts = self.session.feed_identities(sock.recv_multipart())
        return self.session.deserialize(parts)

    def get_iopub_msg(self, timeout):
        return self._recv(self.iopub, timeout)

    def get_shell_msg(self, timeout):
        return self._recv(self.shell, timeout)

    def stop_channels(self):
        self.shell.close()
        self.iopub.close()


def connect(km):
    kc = KernelClient(km.info)
    # Ready means an iopub message came back: the subscription is live
    # (zmq drops what a kernel publishes before it is), so no output of a
    # first cell is lost; a kernel may take seconds on a loaded machine.
    deadline = time.monotonic() + 120
    try:
        while True:
            kc.kernel_info()
            try:
                kc.get_iopub_msg(timeout=1)
                return kc
            except Empty:
                pass
            if not km.is_alive():
                raise RuntimeError(f'the kernel exited while starting (status {km.proc.returncode})')
            if time.monotonic() > deadline:
                raise RuntimeError('the kernel did not start within 120 s')
    except Exception:
        kc.stop_channels()
        km.shutdown_kernel()
        raise


def start_kernel(cwd, km=None):
    if km is None:
        km = Kernel(cwd)
    return km, connect(km)


class Run:
    """One cell: its events as they arrive, then its end."""

    def __init__(self, rid):
        self.id = rid
        self.events = []
        self.bytes = 0
        self.dropped = 0
        self.done = False
        self.status = 'running'  # ok, error, interrupted, timeout, died
        self.error = None
        self.execution_count = None
        self.cond = threading.Condition()

    def add(self, ev):
        with self.cond:
            n = len(json.dumps(ev))
            if self.bytes + n > MAX_EVENTS_BYTES:
                self.dropped += n
            else:
                self.bytes += n
                self.events.append(ev)
            self.cond.notify_all()

    def finish(self, status):
        with self.cond:
            if self.status in ('running', 'ok', 'error'):
                self.status = status
            self.done = True
            self.cond.notify_all()

    def answer(self, after, wait_ms):
        start = time.monotonic()
        end = start + wait_ms / 1000.0
        with self.cond:
            while not self.done:
                # New output waits a little for the cell's end, so a short
                # cell answers in one round trip and a long one streams.
                limit = end
                if len(self.events) > after:
                    limit = min(end, start + STREAM_WAIT_S)
                left = limit - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(left)
            return {'run': self.id, 'done': self.done,
                    'events': self.events[after:], 'next': len(self.events),
                    'status': self.status, 'error': self.error,
                    'execution_count': self.execution_count,
                    'dropped_bytes': self.dropped}


class Context:
    def __init__(self, cid, cwd, km, kc):
        self.id = cid
        self.cwd = cwd
        self.km = km
        self.kc = kc
        self.created_ms = now_ms()
        self.last_used_ms = self.created_ms
        self.run = None
        self.lock = threading.Lock()  # one cell at a time; restart waits
        # One restart at a time: two at once would each start a kernel and
        # leak one.
        self.admin = threading.Lock()
        self.deleted = False  # set under the gateway's lock

    def view(self):
        run = self.run
        return {'id': self.id, 'cwd': self.cwd, 'created_ms': self.created_ms,
                'last_used_ms': self.last_used_ms,
                'busy': run is not None and not run.done,
                'alive': self.km.is_alive()}


class Gateway:
    def __init__(self, spare, first=None):
        self.first = first  # a kernel started before the imports
        self.contexts = {}
        self.lock = threading.Lock()
        self.spare_wanted = spare
        self.spares = []  # (km, kc) started ahead for /home/user
        self.spare_cond = threading.Condition(self.lock)
        self.spare_starting = 0
        self.fill_spares()

    def fill_spares(self):
        with self.lock:
            need = self.spare_wanted - len(self.spares) - self.spare_starting
            self.spare_starting += max(need, 0)
        for _ in range(max(need, 0)):
            threading.Thread(target=self._spare, daemon=True).start()

    def _spare(self):
        got = None
        with self.lock:
            first, self.first = self.first, None
        try:
            got = start_kernel(HOME, first)
        except Exception as e:  # noqa: BLE001 - logged, a create starts its own
            sys.stderr.write(f'ctxgw: spare kernel failed: {e}\n')
        with self.lock:
            self.spare_starting -= 1
            if got is not None:
                self.spares.append(got)
            self.spare_cond.notify_all()

    def take_kernel(self, cwd):
        if cwd == HOME:
            with self.lock:
                # A spare on its way is quicker than a new start.
                while not self.spares and self.spare_starting > 0:
                    self.spare_cond.wait(30)
                got = self.spares.pop() if self.spares else None
            if got is not None:
                self.fill_spares()
                return got
        return start_kernel(cwd)

    def create(self, cwd):
        km, kc = self.take_kernel(cwd)
        cid = secrets.token_hex(4)
        ctx = Context(cid, cwd, km, kc)
        with self.lock:
            self.contexts[cid] = ctx
        return ctx

    def get(self, cid):
        with self.lock:
            return self.contexts.get(cid)

    def delete(self, ctx):
        with self.lock:
            ctx.deleted = True
            self.contexts.pop(ctx.id, None)
            km = ctx.km
        # Kill first, then close the sockets under the context's lock: a
        # cell's collect thread may be blocked on them, and zmq sockets
        # closed under another thread can abort the gateway (and with it
        # every context).
        try:
            km.shutdown_kernel(now=True)
        except Exception:  # noqa: BLE001 - the kernel may be gone already
            pass
        with ctx.lock:
            try:
                ctx.kc.stop_channels()
                # A restart may have swapped in a kernel after our read.
                ctx.km.shutdown_kernel(now=True)
            except Exception:  # noqa: BLE001 - closing what is gone
                pass

    def restart(self, ctx):
        """False when the context was deleted before or during it."""
        with ctx.admin:
            with self.lock:
                if ctx.deleted:
                    return False
                km = ctx.km
            # Kill first: a running cell (even one deaf to SIGINT) then
            # ends as "died" within half a second and frees the context.
            km.shutdown_kernel(now=True)
            with ctx.lock:
                try:
                    ctx.kc.stop_channels()
                except Exception:  # noqa: BLE001 - closing what is gone
                    pass
                new_km, new_kc = self.take_kernel(ctx.cwd)
                with self.lock:
                    gone = ctx.deleted
                    if not gone:
                        ctx.km, ctx.kc = new_km, new_kc
                if gone:
                    # Deleted while the kernel started: nobody owns it.
                    new_kc.stop_channels()
                    new_km.shutdown_kernel(now=True)
                    return False
                # ctx.run stays: the call of the cell the restart ended may
                # still poll for its end ("died").
                ctx.last_used_ms = now_ms()
            return True


def collect(ctx, run, code, timeout_ms):
    """Send the cell and file its messages until the kernel is idle again."""
    kc = ctx.kc
    try:
        msg_id = kc.execute(code, store_history=True, allow_stdin=False)
        deadline = time.monotonic() + timeout_ms / 1000.0
        timed_out = False
        idle = False
        reply_at = None
        while not idle:
            left = deadline - time.monotonic()
            if left <= 0 and not timed_out:
                # The call's time is up: stop the cell, keep the kernel.
                timed_out = True
                run.status = 'timeout'
                ctx.km.interrupt_kernel()
                deadline = time.monotonic() + 10
                continue
            if left <= 0:
                run.status = 'died'
                break
            try:
                msg = kc.get_iopub_msg(timeout=min(left, 0.5))
            except Empty:
                if not ctx.km.is_alive():
                    run.status = 'died'
                    break
                # The cell's reply without its idle status: a lost iopub
                # message must not hold the context until its timeout.
                while reply_at is None:
                    try:
                        rep = kc.get_shell_msg(timeout=0)
                    except Empty:
                        break
                    if rep.get('parent_header', {}).get('msg_id') == msg_id:
                        reply_at = time.monotonic()
                        c = rep['content']
                        if c.get('status') == 'error' and run.error is None:
                            run.error = {'ename': c.get('ename', ''), 'evalue': c.get('evalue', ''),
                                         'traceback': [ANSI_RE.sub('', t) for t in c.get('traceback', [])]}
                            run.status = 'error'
                if reply_at is not None and time.monotonic() - reply_at > 1.0:
                    break
                continue
            if msg.get('parent_header', {}).get('msg_id') != msg_id:
                continue
            t = msg['msg_type']
            c = msg['content']
            if t == 'stream':
                run.add({'type': 'stream', 'name': c.get('name'), 'text': c.get('text', '')})
            elif t in ('display_data', 'execute_result', 'update_display_data'):
                if t == 'execute_result':
                    run.execution_count = c.get('execution_count')
                run.add({'type': 'result' if t == 'execute_result' else 'display',
                         'data': c.get('data', {})})
            elif t == 'error':
                run.error = {'ename': c.get('ename', ''), 'evalue': c.get('evalue', ''),
                             'traceback': [ANSI_RE.sub('', t) for t in c.get('traceback', [])]}
                if run.status == 'running':
                    run.status = 'interrupted' if c.get('ename') == 'KeyboardInterrupt' else 'error'
            elif t == 'execute_input':
                run.execution_count = c.get('execution_count')
            elif t == 'status' and c.get('execution_state') == 'idle':
                idle = True
        if run.status == 'running':
            run.status = 'ok'
    except Exception as e:  # noqa: BLE001 - reported as the cell's end
        run.status = 'died'
        run.error = {'ename': type(e).__name__, 'evalue': str(e), 'traceback': []}
    finally:
        ctx.last_used_ms = now_ms()
        run.finish(run.status)
        ctx.lock.release()


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, fmt, *args):  # quiet: the devbox's log stays small
        pass

    def reply(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header('content-type', 'application/json')
        self.send_header('content-length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def fail(self, status, code, message):
        self.reply(status, {'code': code, 'message': message})

    def body(self):
        n = int(self.headers.get('content-length') or 0)
        if n == 0:
            return {}
        got = json.loads(self.rfile.read(n))
        if not isinstance(got, dict):
            raise ValueError('the body must be a JSON object')
        return got

    def do_GET(self):
        if self.path == '/contexts':
            with GW.lock:
                views = [c.view() for c in GW.contexts.values()]
            views.sort(key=lambda v: v['created_ms'])
            return self.reply(200, {'contexts': views})
        if self.path == '/health':
            return self.reply(200, {'ok': True})
        return self.fail(404, 'not_found', f'no route {self.path}')

    def do_POST(self):
        try:
            req = self.body()
        except ValueError as e:
            return self.fail(400, 'bad_request', f'body: {e}')
        parts = self.path.strip('/').split('/')
        try:
            if parts == ['contexts']:
                if MISSING:
                    return self.fail(501, 'unsupported',
                                     'this devbox has no Python module ' + ', '.join(MISSING) +
                                     ': code contexts need python3-ipykernel and '
                                     'python3-jupyter-client in its image')
                cwd = req.get('cwd') or HOME
                if not isinstance(cwd, str) or not os.path.isdir(cwd):
                    return self.fail(400, 'bad_request',
                                     f'cwd {cwd!r} is not a directory in the devbox')
                return self.reply(200, GW.create(cwd).view())
            if len(parts) != 3 or parts[0] != 'contexts' or not ID_RE.match(parts[1]):
                return self.fail(404, 'not_found', f'no route {self.path}')
            ctx = GW.get(parts[1])
            if ctx is None:
                return self.fail(404, 'not_found', f'no context {parts[1]}')
            return self.action(ctx, parts[2], req)
        except Exception as e:  # noqa: BLE001 - the plugin reports it
            return self.fail(500, 'failed', f'{type(e).__name__}: {e}')

    def action(self, ctx, what, req):
        if what == 'delete':
            GW.delete(ctx)
            return self.reply(200, {'id': ctx.id, 'deleted': True})
        if what == 'restart':
            if not GW.restart(ctx):
                return self.fail(404, 'not_found', f'no context {ctx.id} (deleted)')
            return self.reply(200, ctx.view())
        if what == 'interrupt':
            run = ctx.run
            want = req.get('run')
            # A named run that is not the current one (it never started,
            # or it ended): another call's cell is left alone.
            if run is not None and not run.done and (want is None or want == run.id):
                if run.status == 'running':
                    run.status = 'interrupted'
                ctx.km.interrupt_kernel()
            return self.reply(200, ctx.view())
        if what == 'execute':
            code = req.get('code')
            timeout_ms = int(req.get('timeout_ms') or 600000)
            rid = req.get('run')
            if not isinstance(code, str):
                return self.fail(400, 'bad_request', 'code must be a string')
            if rid is not None and (not isinstance(rid, str) or not ID_RE.match(rid)):
                return self.fail(400, 'bad_request', 'run must be 1 to 32 of a-z and 0-9')
            if not ctx.lock.acquire(blocking=False):
                return self.fail(409, 'busy', f'context {ctx.id} is running another cell')
            if ctx.deleted:
                ctx.lock.release()
                return self.fail(404, 'not_found', f'no context {ctx.id} (deleted)')
            run = Run(rid or secrets.token_hex(4))
            ctx.run = run
            ctx.last_used_ms = now_ms()
            threading.Thread(target=collect, args=(ctx, run, code, timeout_ms),
                             daemon=True).start()
            return self.reply(200, run.answer(0, int(req.get('wait_ms') or 0)))
        if what == 'poll':
            run = ctx.run
            if run is None or run.id != req.get('run'):
                return self.fail(404, 'not_found', f'no run {req.get("run")} in context {ctx.id}')
            return self.reply(200, run.answer(int(req.get('after') or 0),
                                              int(req.get('wait_ms') or 0)))
        return self.fail(404, 'not_found', f'no action {what}')


def option(name, default):
    if f'--{name}' in sys.argv:
        return sys.argv[sys.argv.index(f'--{name}') + 1]
    return default


# What the image lacks, if anything: said at the first create instead of
# a kernel that cannot start.
MISSING = [m for m in ('ipykernel', 'jupyter_client', 'zmq')
           if importlib.util.find_spec(m) is None]
HOME = os.path.expanduser('~') if os.path.isdir(os.path.expanduser('~')) else '/'
GW = None

if __name__ == '__main__':
    port = int(option('port', '49999'))
    spare = int(option('spare', '1')) if not MISSING else 0
    FIRST = Kernel(HOME) if spare > 0 else None
    GW = Gateway(spare, FIRST)
    srv = ThreadingHTTPServer(('127.0.0.1', port), Handler)
    srv.daemon_threads = True
    sys.stderr.write(f'ctxgw: listening on 127.0.0.1:{port}\n')
    srv.serve_forever()
