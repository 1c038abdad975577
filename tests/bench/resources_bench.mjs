// Resources benchmark: resources/read of a devbox file and of an
// execution's stdout beside the equivalent tool call (read_file,
// get_execution_logs) in the same run, through the official MCP SDK client
// over stdio against a real devboxd. Calls alternate so both see the same
// machine load. No assertions: figures only.
//   RLMCP_BUILD_DIR=build node tests/bench/resources_bench.mjs [--quick]
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { hostBin, pluginDir, sourceDir } from '../e2e/lib/host.mjs';
import { startEngine } from '../e2e/lib/engine.mjs';

const quick = process.argv.includes('--quick');
const N = quick ? 20 : 100;
const conf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'plugins-local.yaml');

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const ms = (x) => `${x.toFixed(2)} ms`;
const row = (what, ours, peer, ratio) =>
  console.log(`${what.padEnd(44)} ${String(ours).padEnd(20)} ${String(peer).padEnd(20)} ${ratio}`);

async function timed(fn) {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/** Alternate a and b n times; p50 and p90 of each. */
async function pair(a, b) {
  const ta = [];
  const tb = [];
  for (let i = 0; i < 3; i++) { await a(); await b(); } // warm-up
  for (let i = 0; i < N; i++) {
    ta.push(await timed(a));
    tb.push(await timed(b));
  }
  return { a50: pct(ta, 0.5), a90: pct(ta, 0.9), b50: pct(tb, 0.5), b90: pct(tb, 0.9) };
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-resbench-'));
const engine = await startEngine(path.join(tmp, 'state'));
const client = new Client({ name: 'resources-bench', version: '1' });
try {
  await client.connect(new StdioClientTransport({
    command: hostBin,
    args: ['--config', conf],
    env: { PATH: process.env.PATH, HOME: tmp, RLMCP_PLUGIN_DIR: pluginDir, RLMCP_TEST_STATE_DIR: path.join(tmp, 'state') },
  }));
  const call = async (name, args) => {
    const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
    if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content)}`);
    return r.structuredContent;
  };
  const box = await call('create_devbox', { name: 'resources-bench' });
  await call('write_file', { devbox_id: box.id, file_path: '/home/user/bench.txt', contents: 'x'.repeat(4096) });
  const ex = await call('execute_command', { devbox_id: box.id, command: 'seq 1 500' });
  const eid = ex.execution_id;

  console.log(`resources benchmark (${quick ? 'quick' : 'full'}, n=${N} each, alternating), MCP SDK client over stdio, local devboxd`);
  row('figure', 'ours p50 (p90)', 'tool call p50 (p90)', 'ratio p50');
  const f = await pair(
    () => client.readResource({ uri: `devbox://${box.id}/home/user/bench.txt` }),
    () => call('read_file', { devbox_id: box.id, file_path: '/home/user/bench.txt' }));
  row('resources/read 4 KB file vs read_file', `${ms(f.a50)} (${ms(f.a90)})`, `${ms(f.b50)} (${ms(f.b90)})`, (f.a50 / f.b50).toFixed(2));
  if (eid) {
    const o = await pair(
      () => client.readResource({ uri: `devbox://${box.id}/executions/${eid}/stdout` }),
      () => call('get_execution_logs', { devbox_id: box.id, execution_id: eid, stream: 'stdout' }));
    row('execution stdout vs get_execution_logs', `${ms(o.a50)} (${ms(o.a90)})`, `${ms(o.b50)} (${ms(o.b90)})`, (o.a50 / o.b50).toFixed(2));
  }
  await call('shutdown_devbox', { devbox_id: box.id });
} finally {
  await client.close().catch(() => {});
  await engine.stop();
  rmSync(tmp, { recursive: true, force: true });
}
