// run_browser benchmark: the time of a session's first action (cold: devbox
// create from the browser image, driver start, Chromium launch, navigate)
// and of later actions on the live page, through the built host (official
// MCP SDK client over stdio) and a real devboxd. Beside them, a peer from
// the same run: the same navigate + get_text done by a fresh `node` process
// with playwright-core and a fresh Chromium each time, inside the same
// devbox, started through execute_command (so it pays the same host and
// exec path plus its own start-up). No assertions: figures only.
//   RLMCP_BUILD_DIR=build node tests/bench/browser_bench.mjs [--quick]
// Needs the browser image (devboxd/images/devboxd-image browser).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { buildDir, hostBin, pluginDir, sourceDir, waitFor } from '../e2e/lib/host.mjs';

const quick = process.argv.includes('--quick');
const SESSIONS = quick ? 2 : 3;
const LATER = quick ? 5 : 10;
const devboxdBin = path.join(buildDir, 'bin', 'devboxd');
const conf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'browser-local.yaml');
const url = 'data:text/html,<title>Bench</title><p id="x">bench page</p>';
const peer = `const { chromium } = require('/usr/local/lib/node_modules/playwright-core');
(async () => {
  const b = await chromium.launch({ executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
  const p = await (await b.newContext()).newPage();
  await p.goto(process.argv[2]);
  console.log(await p.locator('#x').first().innerText());
  await b.close();
})().catch((e) => { console.error(e.message); process.exit(1); });
`;

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const ms = (x) => `${x.toFixed(0)} ms`;
const row = (what, ours, beside, ratio) =>
  console.log(`${what.padEnd(44)} ${String(ours).padEnd(10)} ${String(beside).padEnd(40)} ${ratio}`);

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

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-browser-bench-'));
const state = path.join(tmp, 'state');
const engine = spawn(devboxdBin, ['--state-dir', state], { stdio: ['ignore', 'ignore', 'inherit'] });
const engineExit = new Promise((r) => engine.on('exit', r));
let client;
try {
  await waitFor(() => ping(path.join(state, 'devboxd.sock')), 30000, 'devboxd to answer');
  client = new Client({ name: 'browser-bench', version: '1' });
  await client.connect(new StdioClientTransport({
    command: hostBin,
    args: ['--config', conf],
    env: { PATH: process.env.PATH, HOME: tmp, RLMCP_PLUGIN_DIR: pluginDir, RLMCP_TEST_STATE_DIR: state },
  }));
  const call = async (name, args) => {
    const t0 = performance.now();
    const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 600000 });
    const t = performance.now() - t0;
    if (r.isError) throw new Error(`${name}: ${r.content[0].text}`);
    return [r.structuredContent, t];
  };

  console.log(`run_browser benchmark (${quick ? 'quick' : 'full'}: ${SESSIONS} sessions, ${LATER} later actions each), ` +
    `load average ${os.loadavg()[0].toFixed(1)}, ${os.cpus().length} CPUs`);
  row('figure', 'p50', 'peer: fresh node + Chromium per action, p50', 'ratio');
  const first = [];
  const laterText = [];
  const laterNav = [];
  const peers = [];
  for (let s = 0; s < SESSIONS; s++) {
    const [start, t] = await call('run_browser', { action: 'navigate', value: url });
    first.push(t);
    const id = start.session_id;
    for (let i = 0; i < LATER; i++) {
      laterText.push((await call('run_browser', { session_id: id, action: 'get_text', selector: '#x' }))[1]);
      laterNav.push((await call('run_browser', { session_id: id, action: 'navigate', value: url }))[1]);
    }
    await call('write_file', { devbox_id: id, file_path: '/home/user/peer.cjs', contents: peer });
    for (let i = 0; i < Math.max(3, Math.floor(LATER / 2)); i++) {
      const [r, tp] = await call('execute_command', { devbox_id: id, command: `node /home/user/peer.cjs '${url}'` });
      if (r.exit_code !== 0 || r.stdout.trim() !== 'bench page') throw new Error(`peer failed: ${r.stderr}`);
      peers.push(tp);
    }
    await call('run_browser', { session_id: id, action: 'close' });
  }
  const p = pct(peers, 0.5);
  row('first action (create + launch + navigate)', ms(pct(first, 0.5)), ms(p), (pct(first, 0.5) / p).toFixed(2));
  row('later get_text', ms(pct(laterText, 0.5)), ms(p), (pct(laterText, 0.5) / p).toFixed(2));
  row('later navigate (data: URL)', ms(pct(laterNav, 0.5)), ms(p), (pct(laterNav, 0.5) / p).toFixed(2));
  row('later navigate + get_text (two calls)', ms(pct(laterNav, 0.5) + pct(laterText, 0.5)), ms(p),
    ((pct(laterNav, 0.5) + pct(laterText, 0.5)) / p).toFixed(2));
  row('first action, min / max', `${ms(Math.min(...first))} / ${ms(Math.max(...first))}`, '', '');
  row('later get_text p90', ms(pct(laterText, 0.9)), `${ms(pct(peers, 0.9))} (p90)`, '');
} finally {
  try { await client?.close(); } catch { /* gone */ }
  if (engine.exitCode === null) {
    engine.kill('SIGTERM');
    const t = setTimeout(() => engine.kill('SIGKILL'), 30000);
    await engineExit;
    clearTimeout(t);
  }
  rmSync(tmp, { recursive: true, force: true });
}
