// Code contexts: what a cell costs through MCP in a live context, beside a
// fresh run_python (a new python3 process per call, the tool's path without
// a context), in one run. No pass/fail: figures for the report.
//
//   node tests/bench/code_contexts_bench.mjs [BUILD_DIR]   (default
//        $RLMCP_BUILD_DIR, else build/)
//   BENCH_N   cells per figure (default 50)
//
// One devboxd on a fresh state dir and one host (official MCP SDK client
// over stdio, tests/e2e/conf/contexts-local.yaml); the universal image must
// be built (devboxd/images/devboxd-image universal). Figures:
//  - first context: create_code_context on an engine with no contexts
//    devbox (create the devbox, start the gateway and its first kernel),
//    then its first cell `1+1`;
//  - second context: create_code_context with the devbox up (a spare
//    kernel the gateway started ahead);
//  - warm cell `1+1` in a context, p50/p90 over BENCH_N calls;
//  - run_python `print(1+1)` (its devbox already up), p50/p90 over
//    BENCH_N calls, taking turns with the context cells.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
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

const N = Number(process.env.BENCH_N ?? 50);
const devboxd = path.join(build, 'bin', 'devboxd');
const host = path.join(build, 'bin', 'runloop-mcp');
const conf = path.join(src, 'tests', 'e2e', 'conf', 'contexts-local.yaml');
for (const f of [devboxd, host]) {
  if (!existsSync(f)) { console.error(`${f} is missing: build first`); process.exit(2); }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const ms = (v) => `${v.toFixed(1)} ms`;

function ping(sock) {
  return new Promise((resolve) => {
    const req = http.request({ socketPath: sock, method: 'GET', path: '/v1/devboxes?limit=1' }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-ctx-bench-'));
const state = path.join(tmp, 'state');
const env = { ...process.env };
delete env.RLMCP_DEVBOX_IMAGE;
delete env.RLMCP_DEVBOX_RUNTIME;
const engine = spawn(devboxd, ['--state-dir', state], { stdio: ['ignore', 'ignore', 'inherit'], env });
const engineExit = new Promise((r) => engine.on('exit', r));
let client;
try {
  for (let i = 0; !(await ping(path.join(state, 'devboxd.sock'))); i++) {
    if (i > 3000) throw new Error('devboxd did not answer');
    await sleep(10);
  }
  client = new Client({ name: 'contexts-bench', version: '1' });
  await client.connect(new StdioClientTransport({
    command: host,
    args: ['--config', conf],
    env: { PATH: process.env.PATH, HOME: tmp, RLMCP_PLUGIN_DIR: path.join(build, 'plugins'), RLMCP_TEST_STATE_DIR: state },
    stderr: 'inherit',
  }));
  const call = async (name, args) => {
    const t0 = performance.now();
    const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 600000 });
    const dt = performance.now() - t0;
    if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content).slice(0, 600)}`);
    return [dt, r];
  };

  // run_python's devbox first (not timed), so that the first context is
  // measured on a machine where the universal image is already in use.
  await call('run_python', { code: 'print(1+1)' });
  const [firstCreate, first] = await call('create_code_context', {});
  const ctx = first.structuredContent.context_id;
  const [firstCell] = await call('run_python', { context: ctx, code: '1+1' });
  await sleep(3000); // the gateway's next spare kernel
  const [secondCreate, second] = await call('create_code_context', {});

  const warm = [];
  const fresh = [];
  for (let i = 0; i < N; i++) {
    const [a, r] = await call('run_python', { context: ctx, code: '1+1' });
    if (r.structuredContent.results[0]?.text !== '2') throw new Error('wrong answer');
    warm.push(a);
    const [b, f] = await call('run_python', { code: 'print(1+1)' });
    if (f.structuredContent.stdout !== '2\n') throw new Error('wrong answer');
    fresh.push(b);
  }
  await call('delete_code_context', { context_id: second.structuredContent.context_id });

  console.log(`code contexts, ${N} cells each, build ${build}`);
  console.log('| Figure | code context | fresh run_python | Target |');
  console.log('|---|---|---|---|');
  console.log(`| first context: create_code_context (new devbox) / + first cell | ${ms(firstCreate)} / ${ms(firstCreate + firstCell)} | — | ≤ 1.5 s |`);
  console.log(`| second context: create_code_context (devbox up) | ${ms(secondCreate)} | — | — |`);
  console.log(`| cell \`1+1\` p50 / p90 | ${ms(pct(warm, 0.5))} / ${ms(pct(warm, 0.9))} | ${ms(pct(fresh, 0.5))} / ${ms(pct(fresh, 0.9))} | ≤ 20 ms p50 |`);
} finally {
  try { await client?.close(); } catch { /* gone */ }
  engine.kill('SIGTERM');
  const t = setTimeout(() => engine.kill('SIGKILL'), 30000);
  await engineExit;
  clearTimeout(t);
  rmSync(tmp, { recursive: true, force: true });
}
