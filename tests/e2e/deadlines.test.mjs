// End-to-end: deadlines, clean-up and a dead backend, through the built
// host (official MCP SDK client over stdio) talking to a real devboxd via
// the fault proxy (tests/fixtures/faultproxy), which stalls, resets and
// answers 429/503 on request; devboxd itself is frozen with SIGSTOP.
//
// Bounds on how long a call may take are generous (the client's own
// request timeout); the figures themselves are in tests/bench/deadline_bench.mjs.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { buildDir, hostBin, pluginDir, sourceDir, waitFor } from './lib/host.mjs';
import { startFaultProxy } from '../fixtures/faultproxy/faultproxy.mjs';

const conf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'plugins-cloud.yaml');
const devboxdBin = path.join(buildDir, 'bin', 'devboxd');
const KEY = 'ak_deadline_test_key_1';
const LONG = { timeout: 240000 };

function toolError(r) {
  assert.equal(r.isError, true, JSON.stringify(r));
  return JSON.parse(r.content.find((c) => c.type === 'text').text).error;
}

function ok(r) {
  assert.notEqual(r.isError, true, JSON.stringify(r));
  return r.structuredContent;
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startHost(baseUrl, extraEnv = {}, config = conf) {
  const transport = new StdioClientTransport({
    command: hostBin,
    args: ['--config', config],
    env: { PATH: process.env.PATH, RLMCP_PLUGIN_DIR: pluginDir, RUNLOOP_BASE_URL: baseUrl, RUNLOOP_API_KEY: KEY, ...extraEnv },
    stderr: 'pipe',
  });
  let stderr = '';
  let ended = false;
  transport.stderr?.on('data', (d) => { stderr += d; });
  transport.stderr?.on('end', () => { ended = true; });
  const client = new Client({ name: 'deadlines-e2e', version: '1' });
  await client.connect(transport);
  return { client, stderr: () => stderr, ended: () => ended };
}

describe('deadlines, clean-up and a dead backend', () => {
  let tmp;
  let engine;
  let proxy;
  let host;
  let box;
  const hosts = [];

  // A call bounded by the client at `ms`: the host must answer before.
  const call = (name, args, ms = 60000, extra = {}) =>
    host.client.callTool({ name, arguments: args }, undefined, { timeout: ms, ...extra });

  before(async () => {
    for (const f of [hostBin, devboxdBin, path.join(pluginDir, 'rlmcp_exec.so')]) {
      if (!existsSync(f)) throw new Error(`${f} is missing: build first (RLMCP_BUILD_DIR=${buildDir})`);
    }
    tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-deadlines-'));
    const state = path.join(tmp, 'state');
    const keyFile = path.join(tmp, 'key');
    writeFileSync(keyFile, `${KEY}\n`, { mode: 0o600 });
    engine = spawn(devboxdBin, ['--state-dir', state, '--listen', `unix:${path.join(state, 'devboxd.sock')}`,
      '--listen', '127.0.0.1:0', '--api-key-file', keyFile], { stdio: ['ignore', 'ignore', 'pipe'] });
    let engErr = '';
    engine.stderr.on('data', (d) => { engErr += d; });
    const pidFile = path.join(state, 'devboxd.pid');
    const port = await waitFor(() => {
      if (engine.exitCode !== null) throw new Error(`devboxd exited: ${engErr}`);
      if (!existsSync(pidFile)) return null;
      const m = readFileSync(pidFile, 'utf8').match(/^port (\d+)$/m);
      return m ? Number(m[1]) : null;
    }, 60000, 'devboxd to write its port');
    proxy = await startFaultProxy({ target: `http://127.0.0.1:${port}` });
    host = await startHost(proxy.url);
    hosts.push(host);
    box = ok(await call('create_devbox', {}, 180000));
    assert.equal(box.status, 'running');
  });

  after(async () => {
    if (engine && engine.exitCode === null) engine.kill('SIGCONT');
    proxy?.thaw();
    for (const h of hosts) {
      try { await h.client.close(); } catch { /* gone */ }
    }
    for (const h of hosts) {
      await waitFor(() => h.ended(), 15000, 'a host to exit');
      assert.doesNotMatch(h.stderr(), /AddressSanitizer|LeakSanitizer|runtime error/, h.stderr());
    }
    await proxy?.close();
    if (engine && engine.exitCode === null) {
      const gone = new Promise((r) => engine.once('exit', r));
      engine.kill('SIGTERM');
      const t = setTimeout(() => engine.kill('SIGKILL'), 30000);
      await gone;
      clearTimeout(t);
    }
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('a timed-out command is killed, confirmed, never runs on, and its output so far is returned', LONG, async () => {
    const raw = await call('execute_command',
      { devbox_id: box.id, command: 'echo started; echo err-so-far >&2; sleep 20; touch /tmp/late-marker', timeout_seconds: 5 }, 30000);
    const e = toolError(raw);
    assert.equal(e.code, 'timeout');
    assert.match(e.message, /did not finish within its timeout of 5 s; execution \S+ on devbox \S+ was killed at \d+\.\d s \(its status reads completed\)/);
    assert.match(e.remedy, /output it printed so far/);
    const eid = e.message.match(/execution (\S+) on devbox/)[1];
    // The second block: what it printed before the kill, and how it ended.
    const texts = raw.content.filter((c) => c.type === 'text').map((c) => JSON.parse(c.text));
    const partial = texts.find((t) => t.result)?.result;
    assert.ok(partial, `no result block: ${JSON.stringify(raw.content)}`);
    assert.equal(partial.ended_by, 'timeout');
    assert.equal(partial.execution_id, eid);
    assert.equal(partial.status, 'completed');
    assert.equal(partial.stdout, 'started\n');
    assert.equal(partial.stderr, 'err-so-far\n');
    assert.equal(partial.stdout_bytes_dropped, 0);
    const st = ok(await call('get_execution', { devbox_id: box.id, execution_id: eid }));
    assert.equal(st.status, 'completed');
    const probe = ok(await call('execute_command', { devbox_id: box.id, command: 'test -e /tmp/late-marker; echo $?' }));
    assert.equal(probe.stdout.trim(), '1');
  });

  it('a kill answered 503 twice is retried until the status reads completed', LONG, async () => {
    proxy.add({ match: { method: 'POST', path: /\/kill$/ }, action: 'status', status: 503, times: 2 });
    const e = toolError(await call('execute_command',
      { devbox_id: box.id, command: 'sleep 20', timeout_seconds: 4 }, 30000));
    proxy.clear();
    assert.equal(e.code, 'timeout');
    assert.match(e.message, /was killed at \d+\.\d s \(its status reads completed\)/);
    assert.ok(proxy.log.filter((l) => /\/kill$/.test(l.path)).length >= 3);
  });

  it('a stalled start ends at the deadline and says the command may have started', LONG, async () => {
    // Every attempt stalls (one stalled attempt is retried while the call
    // has time, and the command then runs).
    proxy.add({ match: { method: 'POST', path: '/execute' }, action: 'stall' });
    const e = toolError(await call('execute_command',
      { devbox_id: box.id, command: 'echo hi', timeout_seconds: 3 }, 30000));
    proxy.clear();
    assert.equal(e.code, 'timeout');
    assert.match(e.message, /got no answer in \d+\.\d s \(the command's timeout: 3 s\); whether the command started is unknown/);
    assert.match(e.remedy, /list_executions/);
  });

  it('Retry-After beyond the budget ends the call with an error saying so', LONG, async () => {
    proxy.add({ match: { method: 'POST', path: '/execute' }, action: 'status', status: 429,
      headers: { 'retry-after': '30' }, times: 1 });
    const e = toolError(await call('execute_command',
      { devbox_id: box.id, command: 'echo hi', timeout_seconds: 5 }, 30000));
    proxy.clear();
    assert.equal(e.code, 'timeout');
    assert.match(e.message, /HTTP 429 and asked for a retry in 30000 ms, beyond the \d+ ms left/);
  });

  it('a lost answer is retried with the same x-request-id', LONG, async () => {
    const before = proxy.log.length;
    proxy.add({ match: { method: 'POST', path: '/execute' }, action: 'lose', times: 1 });
    await call('execute_command', { devbox_id: box.id, command: 'echo once', timeout_seconds: 20 }, 60000);
    proxy.clear();
    const posts = proxy.log.slice(before).filter((l) => l.method === 'POST' && l.path.includes('/execute'));
    assert.ok(posts.length >= 2, JSON.stringify(posts));
    assert.ok(posts[0].requestId, 'a mutating request carries x-request-id');
    assert.equal(posts[1].requestId, posts[0].requestId);
  });

  it('wait_for_execution survives a reset and keeps its bound on a stall', LONG, async () => {
    const r = ok(await call('execute_command_async', { devbox_id: box.id, command: 'sleep 1; echo done' }));
    proxy.add({ match: { method: 'POST', path: /wait_for_status/ }, action: 'reset', times: 1 });
    const w = ok(await call('wait_for_execution', { devbox_id: box.id, execution_id: r.execution_id, timeout_seconds: 20 }, 60000));
    proxy.clear();
    assert.equal(w.status, 'completed');
    assert.equal(w.stdout, 'done\n');

    const r2 = ok(await call('execute_command_async', { devbox_id: box.id, command: 'sleep 30' }));
    proxy.add({ match: { method: 'POST', path: /wait_for_status/ }, action: 'stall' });
    const w2 = await call('wait_for_execution', { devbox_id: box.id, execution_id: r2.execution_id, timeout_seconds: 3 }, 30000);
    proxy.clear();
    // Either the status read in the reserve ("running") or an honest timeout.
    if (w2.isError) assert.equal(toolError(w2).code, 'timeout');
    else assert.equal(w2.structuredContent.status, 'running');
    ok(await call('kill_execution', { devbox_id: box.id, execution_id: r2.execution_id }));
  });

  it('with devboxd frozen a command times out and says it could not confirm the kill', LONG, async () => {
    let eid = null;
    const progress = [];
    const p = call('execute_command', { devbox_id: box.id, command: 'sleep 25', timeout_seconds: 5 }, 30000,
      { onprogress: (n) => progress.push(n) });
    await waitFor(() => progress.find((n) => /^execution \S+ started/.test(n.message ?? '')), 20000, 'the first progress');
    eid = progress[0].message.match(/^execution (\S+) started/)[1];
    engine.kill('SIGSTOP');
    let e;
    try {
      e = toolError(await p);
    } finally {
      engine.kill('SIGCONT');
    }
    assert.equal(e.code, 'timeout');
    assert.match(e.message, new RegExp(`execution ${eid} on devbox ${box.id} could NOT be confirmed stopped`));
    assert.match(e.remedy, /kill_execution/);
    // The execution can be found again. (The kill sent while frozen may
    // still take effect once devboxd resumes: running or completed.)
    const list = ok(await call('list_executions', { devbox_id: box.id }));
    const found = list.executions.find((x) => x.execution_id === eid);
    assert.ok(found, JSON.stringify(list));
    assert.ok(['running', 'completed'].includes(found.status), JSON.stringify(found));
    assert.equal(found.command.includes('sleep 25'), true);
    ok(await call('kill_execution', { devbox_id: box.id, execution_id: eid }));
  });

  it('a command sent to a frozen devboxd never runs once its call has timed out', LONG, async () => {
    engine.kill('SIGSTOP');
    let r;
    try {
      r = await call('execute_command',
        { devbox_id: box.id, command: 'touch /tmp/frozen-marker', timeout_seconds: 5 }, 60000);
    } finally {
      engine.kill('SIGCONT');
    }
    const e = toolError(r);
    assert.ok(['timeout', 'unavailable'].includes(e.code), JSON.stringify(e));
    // Thawed, devboxd reads the queued request: its deadline (the
    // x-request-deadline the host sent) has passed, so the command never
    // starts. Watched for 10 s, twice the time it took to appear before.
    const end = Date.now() + 10000;
    do {
      const seen = ok(await call('execute_command',
        { devbox_id: box.id, command: 'test -e /tmp/frozen-marker && echo ran || echo absent' }));
      assert.equal(seen.stdout, 'absent\n', `the timed-out command ran after devboxd resumed (its call: ${JSON.stringify(e)})`);
      await new Promise((res) => setTimeout(res, 1000));
    } while (Date.now() < end);
  });

  // host.call_timeout_ms bounds every tool that declares no longer wait:
  // get_devbox against a frozen devboxd used to wait for the backend's own
  // request timeouts (minutes).
  it('with devboxd frozen, lifecycle tools answer within host.call_timeout_ms', LONG, async () => {
    const limit = 3000;
    const bounded = path.join(tmp, 'bounded.yaml');
    writeFileSync(bounded, readFileSync(conf, 'utf8').replace(/^host:\n/m, `host:\n  call_timeout_ms: ${limit}\n`));
    assert.match(readFileSync(bounded, 'utf8'), /call_timeout_ms: 3000/);
    const h = await startHost(proxy.url, {}, bounded);
    hosts.push(h);
    engine.kill('SIGSTOP');
    const took = {};
    try {
      for (const [name, args] of [['get_devbox', { devbox_id: box.id }], ['list_devboxes', {}],
        ['list_executions', { devbox_id: box.id }]]) {
        const t0 = Date.now();
        const r = await h.client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
        took[name] = Date.now() - t0;
        // An answer the host could give without devboxd is fine too.
        if (r.isError) {
          const e = toolError(r);
          assert.ok(['timeout', 'unavailable'].includes(e.code), `${name}: ${JSON.stringify(e)}`);
        }
      }
    } finally {
      engine.kill('SIGCONT');
    }
    for (const [name, ms] of Object.entries(took))
      assert.ok(ms <= limit + 2500, `${name} took ${ms} ms with host.call_timeout_ms ${limit}`);
    assert.equal(ok(await h.client.callTool({ name: 'get_devbox', arguments: { devbox_id: box.id } })).status,
      'running', 'thawed, the same host answers again');
  });

  it('an unreachable backend fails fast, and later calls at once (circuit breaker)', LONG, async () => {
    const port = await freePort();
    const h = await startHost(`http://127.0.0.1:${port}`);
    hosts.push(h);
    const first = toolError(await h.client.callTool({ name: 'get_devbox', arguments: { devbox_id: 'dbx_1' } }, undefined, { timeout: 20000 }));
    assert.equal(first.code, 'unavailable');
    assert.match(first.message, /could not be reached/);
    const later = toolError(await h.client.callTool({ name: 'list_devboxes', arguments: {} }, undefined, { timeout: 20000 }));
    assert.equal(later.code, 'unavailable');
    assert.match(later.message, /unreachable for \d+ ms/);
    assert.ok(!JSON.stringify(later).includes(KEY));
  });
});
