# The code contexts gateway's bookkeeping (plugins/exec/ctxgw.py) with fake
# kernels: restart, delete and interrupt racing each other and a running
# cell. No IPython needed; the real kernels are in the e2e test.
#
#   [CTXGW_PY=path/to/ctxgw.py] python3 test_ctxgw.py [-v]
import http.client
import importlib.util
import json
import os
import shutil
import sys
import threading
import time
import unittest
from http.server import ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get('CTXGW_PY') or os.path.join(HERE, '..', 'ctxgw.py')
spec = importlib.util.spec_from_file_location('ctxgw', SRC)
gw = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gw)


class FakeKm:
    def __init__(self):
        self.alive = True
        self.interrupts = 0

    def is_alive(self):
        return self.alive

    def interrupt_kernel(self):
        self.interrupts += 1

    def shutdown_kernel(self, now=True):
        self.alive = False


class FakeKc:
    def __init__(self):
        self.closed = False

    def stop_channels(self):
        self.closed = True


class FakeGateway(gw.Gateway):
    """take_kernel hands out fake kernels, each start held until `go` is
    set, and keeps them all to check none is left running unowned."""

    def __init__(self):
        super().__init__(0)
        self.started = []
        self.go = threading.Event()
        self.go.set()
        self.taking = threading.Semaphore(0)

    def take_kernel(self, cwd):
        got = (FakeKm(), FakeKc())
        self.started.append(got)
        self.taking.release()
        assert self.go.wait(30)
        return got


def thread(fn, *args):
    t = threading.Thread(target=fn, args=args, daemon=True)
    t.start()
    return t


class GatewayTest(unittest.TestCase):
    def setUp(self):
        self.g = FakeGateway()
        self.ctx = self.g.create('/')
        self.first = self.g.started[0]

    def alive(self):
        return [km for km, _ in self.g.started if km.alive]

    def test_two_restarts_leave_one_kernel(self):
        self.g.go.clear()
        t1 = thread(self.g.restart, self.ctx)
        t2 = thread(self.g.restart, self.ctx)
        self.assertTrue(self.g.taking.acquire(timeout=30))
        self.g.go.set()
        t1.join(30)
        t2.join(30)
        self.assertEqual(len(self.g.started), 3)
        self.assertEqual(self.alive(), [self.ctx.km])

    def test_restart_racing_delete_starts_no_kernel_for_it(self):
        self.g.go.clear()
        out = []
        t = thread(lambda: out.append(self.g.restart(self.ctx)))
        self.assertTrue(self.g.taking.acquire(timeout=30))
        # The delete waits for the restart's kernel start; let it go.
        d = thread(self.g.delete, self.ctx)
        deadline = time.monotonic() + 30
        while not self.ctx.deleted and time.monotonic() < deadline:
            time.sleep(0.01)
        self.g.go.set()
        t.join(30)
        d.join(30)
        self.assertEqual(out, [False])
        self.assertEqual(self.alive(), [])
        self.assertTrue(all(kc.closed for _, kc in self.g.started))
        self.assertIsNone(self.g.get(self.ctx.id))
        # A restart after the delete starts nothing.
        self.assertFalse(self.g.restart(self.ctx))
        self.assertEqual(len(self.g.started), 2)

    def test_delete_closes_sockets_only_under_the_cells_lock(self):
        km, kc = self.first
        self.ctx.lock.acquire()  # a cell's collect thread holds it
        d = thread(self.g.delete, self.ctx)
        deadline = time.monotonic() + 30
        while km.alive and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertFalse(km.alive, 'the kernel is killed at once')
        time.sleep(0.2)
        self.assertFalse(kc.closed, 'sockets closed under a running cell')
        self.ctx.lock.release()  # the cell ends
        d.join(30)
        self.assertTrue(kc.closed)


class InterruptTest(unittest.TestCase):
    def setUp(self):
        gw.GW = FakeGateway()
        self.ctx = gw.GW.create('/')
        self.ctx.run = gw.Run('ours')
        self.srv = ThreadingHTTPServer(('127.0.0.1', 0), gw.Handler)
        self.srv.daemon_threads = True
        thread(self.srv.serve_forever)

    def tearDown(self):
        self.srv.shutdown()
        self.srv.server_close()

    def post(self, path, body):
        c = http.client.HTTPConnection('127.0.0.1', self.srv.server_address[1], timeout=30)
        data = json.dumps(body).encode()
        c.request('POST', path, data, {'content-type': 'application/json'})
        r = c.getresponse()
        got = json.loads(r.read())
        c.close()
        return r.status, got

    def test_interrupt_acts_only_on_the_named_run(self):
        km = self.ctx.km
        path = f'/contexts/{self.ctx.id}/interrupt'
        self.assertEqual(self.post(path, {'run': 'theirs'})[0], 200)
        self.assertEqual(km.interrupts, 0)
        self.assertEqual(self.ctx.run.status, 'running')
        self.assertEqual(self.post(path, {'run': 'ours'})[0], 200)
        self.assertEqual(km.interrupts, 1)
        self.assertEqual(self.ctx.run.status, 'interrupted')

    def test_execute_refuses_a_bad_run_id(self):
        status, got = self.post(f'/contexts/{self.ctx.id}/execute', {'code': '1', 'run': 'A B'})
        self.assertEqual(status, 400)
        self.assertIn('run must be', got['message'])


def tearDownModule():
    shutil.rmtree(gw.RUNTIME, ignore_errors=True)  # made at the import


if __name__ == '__main__':
    unittest.main()
