// Snapshot wait benchmark: how long after the engine finished a snapshot
// does create_snapshot answer through MCP, with the snapshots plugin's
// default poll_interval_ms (1000), for this build's host beside a peer
// build's (e.g. main built in /tmp). Both talk to this build's devboxd; the
// engine's own time is the sync snapshot_disk call on the same devbox.
// No assertions: figures only.
//   RLMCP_BUILD_DIR=build node tests/bench/snapshot_wait_bench.mjs [PEER_BUILD_DIR] [--quick]
// PEER_BUILD_DIR defaults to /tmp/rlmcp-peer-244ee15/build when it exists.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { buildDir } from '../e2e/lib/host.mjs';
import { engineRequest, startEngine } from '../e2e/lib/engine.mjs';

const quick = process.argv.includes('--quick');
const N = quick ? 5 : 15;
const defaultPeer = '/tmp/rlmcp-peer-244ee15/build';
const peerArg = process.argv.slice(2).find((a) => !a.startsWith('--'));
const peerDir = peerArg ?? (existsSync(defaultPeer) ? defaultPeer : null);

const CONF = `server:
  name: snapshot-wait-bench
  transport: stdio
host:
  log_level: warning
runloop:
  backend: local
  state_dir: \${RLMCP_TEST_STATE_DIR}
plugins:
  - name: snapshots
`;

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const ms = (x) => `${x.toFixed(1)} ms`;
const row = (what, ours, peer, target) =>
  console.log(`${what.padEnd(44)} ${String(ours).padEnd(14)} ${String(peer).padEnd(14)} ${target}`);

const request = engineRequest; // rejects on a status >= 300

// create_snapshot through the host in dir, N times; each answer's time.
async function mcpTimes(dir, conf, state, tmp, devboxId) {
  const client = new Client({ name: 'snapshot-wait-bench', version: '1' });
  const transport = new StdioClientTransport({ command: path.join(dir, 'bin', 'runloop-mcp'),
    args: ['--config', conf], stderr: 'ignore',
    env: { PATH: process.env.PATH, HOME: tmp, RLMCP_PLUGIN_DIR: path.join(dir, 'plugins'),
      RLMCP_TEST_STATE_DIR: state } });
  await client.connect(transport);
  const times = [];
  try {
    for (let i = 0; i < N; i++) {
      const t0 = performance.now();
      const r = await client.callTool({ name: 'create_snapshot', arguments: { devbox_id: devboxId } },
        undefined, { timeout: 120000 });
      times.push(performance.now() - t0);
      if (r.isError || r.structuredContent?.status !== 'complete')
        throw new Error(`create_snapshot: ${JSON.stringify(r.content)}`);
    }
  } finally {
    await client.close();
  }
  return times;
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-snapwait-'));
const state = path.join(tmp, 'state');
const conf = path.join(tmp, 'conf.yaml');
writeFileSync(conf, CONF);
const engine = await startEngine(state);
try {
  const sock = engine.sock;
  const box = await request(sock, 'POST', '/v1/devboxes', {});
  for (let i = 0; i < 600; i++) {
    const b = await request(sock, 'GET', `/v1/devboxes/${box.id}`);
    if (b.status === 'running') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await request(sock, 'POST', `/v1/devboxes/${box.id}/write_file_contents`,
    { file_path: 'a.txt', contents: 'x'.repeat(65536) });
  const engineT = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    await request(sock, 'POST', `/v1/devboxes/${box.id}/snapshot_disk`, {});
    engineT.push(performance.now() - t0);
  }
  const ours = await mcpTimes(buildDir, conf, state, tmp, box.id);
  const peer = peerDir ? await mcpTimes(peerDir, conf, state, tmp, box.id) : null;
  console.log(`snapshot wait benchmark (${quick ? 'quick' : 'full'}, n=${N}), official MCP client over stdio; peer: ${peerDir ?? 'none'}`);
  row('figure (p50)', 'this build', 'peer', 'target');
  row('engine: sync snapshot_disk of a small devbox', ms(pct(engineT, 0.5)), ms(pct(engineT, 0.5)), '');
  row('create_snapshot answered after', ms(pct(ours, 0.5)), peer ? ms(pct(peer, 0.5)) : '-', 'engine + <= 50 ms');
  row('  minus the engine (difference of p50s)', ms(pct(ours, 0.5) - pct(engineT, 0.5)),
    peer ? ms(pct(peer, 0.5) - pct(engineT, 0.5)) : '-', '<= 50 ms');
} finally {
  await engine.stop();
  rmSync(tmp, { recursive: true, force: true });
}
