// exec benchmark: prints our figures beside a peer's, measured in the same
// run. No pass/fail: these are figures for the report.
//
//   node tests/bench/exec_bench.mjs [BUILD_DIR]   (default: build/)
//
// 1. execute_command "true" through the host (MCP SDK client over stdio ->
//    runloop-mcp -> exec plugin -> devboxd) vs the same POST /execute sent
//    by the same Node process straight to devboxd's socket: p50/p90 and the
//    p50 the host adds.
// 2. 100 MB of stdout through execute_command (output capped to head+tail):
//    peak RSS (VmHWM) of the host beside devboxd's, and the time beside a
//    direct read of the same output from devboxd's SSE stream.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const src = path.resolve(here, '../..');
const build = path.resolve(process.argv[2] ?? process.env.RLMCP_BUILD_DIR ?? path.join(src, 'build'));
const sdk = path.join(src, 'tests', 'node_modules', '@modelcontextprotocol', 'sdk', 'dist', 'esm', 'client');
const { Client } = await import(path.join(sdk, 'index.js'));
const { StdioClientTransport } = await import(path.join(sdk, 'stdio.js'));

const N = Number(process.env.BENCH_N ?? 300);
const tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-exec-bench-'));
const state = path.join(tmp, 'state');
const sock = path.join(state, 'devboxd.sock');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
let engine;
let client;

function req(method, p, body, raw = false) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const r = http.request({ socketPath: sock, agent, method, path: p,
      headers: data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {} }, (res) => {
      const chunks = [];
      let n = 0;
      res.on('data', (d) => { n += d.length; if (!raw) chunks.push(d); });
      res.on('end', () => {
        if (res.statusCode >= 300) return reject(new Error(`${method} ${p}: ${res.statusCode}`));
        resolve(raw ? n : JSON.parse(Buffer.concat(chunks).toString() || 'null'));
      });
    });
    r.on('error', reject);
    if (data) r.write(data);
    r.end();
  });
}

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
}

function hwm(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmHWM:\s+(\d+) kB/);
  return m ? Number(m[1]) / 1024 : NaN;
}

const fmt = (x) => x.toFixed(3);

try {
  engine = spawn(path.join(build, 'bin', 'devboxd'), ['--state-dir', state], { stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 300 && !existsSync(sock); i++) await new Promise((r) => setTimeout(r, 50));
  const box = await req('POST', '/v1/devboxes', {});
  let st = box.status;
  while (st !== 'running') st = (await req('POST', `/v1/devboxes/${box.id}/wait_for_status`, { statuses: ['running', 'failure', 'shutdown'] })).status;

  const transport = new StdioClientTransport({
    command: path.join(build, 'bin', 'runloop-mcp'),
    args: ['--config', path.join(src, 'tests', 'e2e', 'conf', 'plugins-local.yaml')],
    env: { PATH: process.env.PATH, HOME: tmp, RLMCP_PLUGIN_DIR: path.join(build, 'plugins'), RLMCP_TEST_STATE_DIR: state },
    stderr: 'inherit',
  });
  client = new Client({ name: 'exec-bench', version: '1' });
  await client.connect(transport);
  const hostPid = transport.pid;

  const direct = [];
  const viaHost = [];
  const once = async (label) => {
    let t = process.hrtime.bigint();
    const v = await req('POST', `/v1/devboxes/${box.id}/execute?last_n=1000`, { command: 'true', command_id: randomUUID(), optimistic_timeout: 2 });
    if (v.status !== 'completed') throw new Error('direct execute did not complete in-request');
    if (label) direct.push(Number(process.hrtime.bigint() - t) / 1e6);
    t = process.hrtime.bigint();
    const r = await client.callTool({ name: 'execute_command', arguments: { devbox_id: box.id, command: 'true' } });
    if (r.isError || r.structuredContent.exit_code !== 0) throw new Error(JSON.stringify(r));
    if (label) viaHost.push(Number(process.hrtime.bigint() - t) / 1e6);
  };
  for (let i = 0; i < 20; i++) await once(false); // warm up both paths
  for (let i = 0; i < N; i++) await once(true);
  const d50 = pct(direct, 0.5);
  const h50 = pct(viaHost, 0.5);
  console.log(`execute_command "true", ${N} calls, interleaved:`);
  console.log(`  direct POST /execute to devboxd : p50 ${fmt(d50)} ms  p90 ${fmt(pct(direct, 0.9))} ms`);
  console.log(`  through runloop-mcp (MCP stdio) : p50 ${fmt(h50)} ms  p90 ${fmt(pct(viaHost, 0.9))} ms`);
  console.log(`  added by the host at p50        : ${fmt(h50 - d50)} ms  (ratio ${(h50 / d50).toFixed(2)}x)`);
  const paired = viaHost.map((v, i) => v - direct[i]);
  console.log(`  median of paired differences    : ${fmt(pct(paired, 0.5))} ms`);

  const cmd = "head -c 100000000 /dev/zero | tr '\\0' a";
  const hostBefore = hwm(hostPid);
  let t = process.hrtime.bigint();
  const big = await client.callTool({ name: 'execute_command', arguments: { devbox_id: box.id, command: cmd } }, undefined, { timeout: 600000 });
  const hostMs = Number(process.hrtime.bigint() - t) / 1e6;
  if (big.isError) throw new Error(JSON.stringify(big));
  const sc = big.structuredContent;
  const hostAfter = hwm(hostPid);
  t = process.hrtime.bigint();
  const bytes = await req('GET', `/v1/devboxes/${box.id}/executions/${sc.execution_id}/stream_stdout_updates?offset=0`, undefined, true);
  const sseMs = Number(process.hrtime.bigint() - t) / 1e6;
  console.log('100 MB of stdout through execute_command:');
  console.log(`  result: exit ${sc.exit_code}, stdout ${sc.stdout.length} chars kept, truncated=${sc.stdout_truncated}`);
  console.log(`  runloop-mcp peak RSS (VmHWM)     : ${hostAfter.toFixed(1)} MiB (before the call ${hostBefore.toFixed(1)} MiB)`);
  console.log(`  devboxd peak RSS (VmHWM)         : ${hwm(engine.pid).toFixed(1)} MiB`);
  console.log(`  time through the host            : ${(hostMs / 1000).toFixed(2)} s (command + full SSE re-read)`);
  console.log(`  direct SSE read of the same output: ${(sseMs / 1000).toFixed(2)} s (${(bytes / 1e6).toFixed(1)} MB on the wire)`);
} finally {
  try { await client?.close(); } catch { /* gone */ }
  if (engine && engine.exitCode === null) {
    const gone = new Promise((r) => engine.once('exit', r));
    engine.kill('SIGTERM');
    await gone;
  }
  agent.destroy();
  rmSync(tmp, { recursive: true, force: true });
}
