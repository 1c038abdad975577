// log_stderr_full.test.mjs - a client that never reads the host's stderr
// must not stall it. The host's stderr is a FIFO this test holds open
// (read-write) and does not read, so it fills after 64 KiB like any pipe
// nobody drains. Over stdio (official MCP SDK client) 2,000 calls that each
// log two lines at debug level are all answered; once the pipe is drained,
// the host's next line is preceded by a warning counting the lines it
// dropped. Over HTTP, GET /metrics counts them in
// rlmcp_log_lines_dropped_total.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readSync, writeFileSync, rmSync, constants } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { hostBin, hostEnv, requireBuilt, stdioConf, waitFor } from './lib/host.mjs';

const CALLS = 2000;
const work = mkdtempSync(path.join(tmpdir(), 'rlmcp-logfull-'));
const fds = [];
const children = [];

after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const fd of fds) { try { closeSync(fd); } catch { /* closed */ } }
  rmSync(work, { recursive: true, force: true });
});

// A FIFO opened read-write: a pipe with a reader that never reads.
function unreadPipe(name) {
  const fifo = path.join(work, name);
  execFileSync('mkfifo', [fifo]);
  const fd = openSync(fifo, constants.O_RDWR);
  fds.push(fd);
  return { fifo, fd };
}

// Everything in the pipe now, without blocking.
function drain(fifo) {
  const fd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const buf = Buffer.alloc(65536);
  let text = '';
  try {
    for (;;) {
      let n = 0;
      try { n = readSync(fd, buf, 0, buf.length, null); } catch (e) {
        if (e.code === 'EAGAIN') break;
        throw e;
      }
      if (n === 0) break;
      text += buf.toString('utf8', 0, n);
    }
  } finally {
    closeSync(fd);
  }
  return text;
}

function withDeadline(p, ms, what) {
  let t;
  const timeout = new Promise((_, reject) => { t = setTimeout(() => reject(new Error(`${what}: not done in ${ms} ms`)), ms); });
  return Promise.race([p, timeout]).finally(() => clearTimeout(t));
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

test('stdio: 2,000 logging calls are answered while nobody reads stderr', async () => {
  requireBuilt();
  const { fifo, fd } = unreadPipe('stdio-err');
  const transport = new StdioClientTransport({
    command: hostBin, args: ['--config', stdioConf, '--log-level', 'debug'], env: hostEnv(), stderr: fd,
  });
  const client = new Client({ name: 'log-full-test', version: '1' });
  await client.connect(transport);
  try {
    let answered = 0;
    const run = async () => {
      for (let i = 0; i < CALLS; i += 50) {
        const batch = [];
        for (let j = i; j < Math.min(CALLS, i + 50); j++) {
          batch.push(client.callTool({ name: 'crash_free_internal', arguments: {} }).then((r) => {
            assert.equal(r.isError, true);
            answered++;
          }));
        }
        await Promise.all(batch);
      }
    };
    // A blocked log write stalls the calls for good; a loaded machine
    // answers 2,000 in a few seconds.
    await withDeadline(run(), 180000, `calls answered: ${answered} of ${CALLS}`);
    assert.equal(answered, CALLS);

    // The pipe is full of the lines that fit; the rest were dropped.
    const first = drain(fifo);
    assert.ok(first.length > 0, 'the pipe held the first lines');
    assert.match(first, /crash_free_internal/);
    for (const line of first.split('\n').filter(Boolean)) assert.match(line, /^runloop-mcp: /, 'whole lines only');

    // Once stderr takes lines again, the count comes first.
    await client.callTool({ name: 'crash_free_internal', arguments: {} });
    let later = '';
    await waitFor(() => { later += drain(fifo); return /crash_free_internal/.test(later); }, 30000, 'the next log lines');
    const m = /runloop-mcp: warning: (\d+) log line\(s\) dropped: stderr was full/.exec(later);
    assert.ok(m, later.slice(0, 2000));
    // Each call logs two lines; the pipe held at most 64 KiB of them.
    assert.ok(Number(m[1]) > CALLS, `dropped ${m[1]}`);
    assert.ok(later.indexOf(m[0]) < later.indexOf('crash_free_internal'), 'the count precedes the next line');
  } finally {
    // A host stuck writing its stderr never exits on the SDK's SIGTERM.
    await withDeadline(client.close(), 20000, 'closing the host').catch(() => {
      if (transport.pid) process.kill(transport.pid, 'SIGKILL');
    });
  }
});

test('http: /metrics counts the lines dropped while nobody reads stderr', async () => {
  requireBuilt();
  const { fd } = unreadPipe('http-err');
  const port = await freePort();
  const conf = path.join(work, 'http.yaml');
  writeFileSync(conf, [
    'server:', '  name: log-full-http', '  transport: http', '  http:', `    listen: 127.0.0.1:${port}`,
    '    metrics: public', 'host:', '  log_level: debug',
    'runloop:', '  backend: cloud', '  base_url: http://127.0.0.1:9', '  api_key: e2e-unused-key',
    'plugins:', '  - name: testtools', '',
  ].join('\n'));
  const child = spawn(hostBin, ['-c', conf], { env: hostEnv(), stdio: ['ignore', 'ignore', fd] });
  children.push(child);
  const url = `http://127.0.0.1:${port}/metrics`;
  const dropped = async () => {
    const r = await fetch(url).catch(() => null);
    if (r === null || r.status !== 200) return -1;
    const m = /^rlmcp_log_lines_dropped_total (\d+)$/m.exec(await r.text());
    assert.ok(m, 'rlmcp_log_lines_dropped_total is exported');
    return Number(m[1]);
  };
  await waitFor(async () => (await dropped()) >= 0, 60000, 'the HTTP host to serve /metrics', 100);
  // Every request logs a debug line: enough of them fill the pipe.
  await waitFor(async () => (await dropped()) > 0, 120000, 'a dropped line to be counted', 1);
  const gone = new Promise((r) => child.once('close', (code) => r(code)));
  child.kill('SIGTERM');
  assert.equal(await withDeadline(gone, 30000, 'the host to exit on SIGTERM'), 0);
});
