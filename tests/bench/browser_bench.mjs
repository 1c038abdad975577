// run_browser benchmark: the time of a session's first action (cold: devbox
// create from the browser image, driver start, Chromium launch, navigate)
// and of later actions on the live page (get_text, navigate), p50, through
// the built host (official MCP SDK client over stdio) and a real devboxd —
// this build beside a peer build, measured in the same run with their
// sessions interleaved (each build has its own devboxd and state dir).
// Targets: first action p50 <= 3000 ms, later actions p50 <= 300 ms.
// A second peer row, this build only: the same navigate + get_text done by a
// fresh `node` process with playwright-core and a fresh Chromium each time,
// inside the same devbox through execute_command. No assertions: figures
// only. After the run it checks that no session's devbox was left behind
// (closed sessions are shut down) and says so.
//
//   node tests/bench/browser_bench.mjs [--quick] [--peer BUILD_DIR | --peer-rev REV | --no-peer]
//
// BUILD_DIR is RLMCP_BUILD_DIR (default build/). The peer is --peer (a
// built tree), else revision REV (default 342b851) checked out and built
// (host, devboxd and the plugins used) in ${TMPDIR:-/tmp}/rlmcp-peer-REV,
// once. Needs the browser image (devboxd/images/devboxd-image browser).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { buildDir, sourceDir, waitFor } from '../e2e/lib/host.mjs';

const argv = process.argv.slice(2);
const opt = (name) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : undefined; };
const quick = argv.includes('--quick');
const SESSIONS = quick ? 2 : 3;
const LATER = quick ? 5 : 10;
const conf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'browser-local.yaml');
const url = 'data:text/html,<title>Bench</title><p id="x">bench page</p>';
const fresh = `const { chromium } = require('/usr/local/lib/node_modules/playwright-core');
(async () => {
  const b = await chromium.launch({ executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
  const p = await (await b.newContext()).newPage();
  await p.goto(process.argv[2]);
  console.log(await p.locator('#x').first().innerText());
  await b.close();
})().catch((e) => { console.error(e.message); process.exit(1); });
`;

const pct = (xs, p) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};
const ms = (x) => (Number.isNaN(x) ? '-' : `${x.toFixed(0)} ms`);
const row = (what, ours, peer, target) =>
  console.log(`${what.padEnd(44)} ${String(ours).padEnd(12)} ${String(peer).padEnd(22)} ${target}`);

// A peer tree: --peer as given, else REV built once in a temp dir.
function peerBuild() {
  if (argv.includes('--no-peer')) return null;
  if (opt('--peer')) return { name: path.basename(path.resolve(opt('--peer'), '..')), dir: path.resolve(opt('--peer')) };
  const rev = opt('--peer-rev') ?? '342b851';
  const top = path.join(process.env.TMPDIR ?? '/tmp', `rlmcp-peer-${rev}`);
  const dir = path.join(top, 'build');
  const need = ['bin/runloop-mcp', 'bin/devboxd', 'bin/devboxd-agent', 'plugins/rlmcp_browser.so'];
  if (!need.every((f) => existsSync(path.join(dir, f)))) {
    console.log(`building the peer ${rev} in ${top} (once)...`);
    rmSync(top, { recursive: true, force: true });
    execFileSync('git', ['clone', '-q', '--no-checkout', sourceDir, top]);
    execFileSync('git', ['-C', top, 'checkout', '-q', rev]);
    execFileSync('cmake', ['-S', top, '-B', dir, '-DCMAKE_BUILD_TYPE=RelWithDebInfo'], { stdio: 'ignore' });
    const help = execFileSync('cmake', ['--build', dir, '--target', 'help'], { encoding: 'utf8' });
    const wanted = /^(runloop-mcp|devboxd|devboxd-agent|devboxd-ptyd|devboxd-image|rlmcp_runtime|rlmcp_(browser|lifecycle|exec|files))$/;
    const targets = help.split('\n').map((l) => l.replace(/^\.\.\. /, '').split(' ')[0]).filter((t) => wanted.test(t));
    execFileSync('cmake', ['--build', dir, '-j2', '--target', ...targets], { stdio: 'ignore' });
  }
  return { name: rev, dir };
}

function ping(sock) {
  return new Promise((resolve) => {
    const req = http.request({ socketPath: sock, method: 'GET', path: '/v1/devboxes?limit=100' }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve(res.statusCode === 200 ? JSON.parse(body) : null));
    });
    req.on('error', () => resolve(null));
    req.end();
  });
}

// One build's devboxd and host; call() times a tool call.
async function startSide(name, dir) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), `rlmcp-browser-bench-${name}-`));
  const state = path.join(tmp, 'state');
  const sock = path.join(state, 'devboxd.sock');
  const engine = spawn(path.join(dir, 'bin', 'devboxd'), ['--state-dir', state], { stdio: ['ignore', 'ignore', 'inherit'] });
  const engineExit = new Promise((r) => engine.on('exit', r));
  const side = { name, tmp, sock, engine, engineExit, first: [], laterText: [], laterNav: [], sessions: [] };
  await waitFor(() => ping(sock), 30000, `${name}'s devboxd to answer`);
  side.client = new Client({ name: 'browser-bench', version: '1' });
  await side.client.connect(new StdioClientTransport({
    command: path.join(dir, 'bin', 'runloop-mcp'),
    args: ['--config', conf],
    env: { PATH: process.env.PATH, HOME: tmp, RLMCP_PLUGIN_DIR: path.join(dir, 'plugins'), RLMCP_TEST_STATE_DIR: state },
  }));
  side.call = async (tool, args) => {
    const t0 = performance.now();
    const r = await side.client.callTool({ name: tool, arguments: args }, undefined, { timeout: 600000 });
    const t = performance.now() - t0;
    if (r.isError) throw new Error(`${name} ${tool}: ${r.content[0].text}`);
    return [r.structuredContent, t];
  };
  return side;
}

async function stopSide(side) {
  if (!side) return;
  try { await side.client?.close(); } catch { /* gone */ }
  if (side.engine.exitCode === null) {
    side.engine.kill('SIGTERM');
    const t = setTimeout(() => side.engine.kill('SIGKILL'), 30000);
    await side.engineExit;
    clearTimeout(t);
  }
  rmSync(side.tmp, { recursive: true, force: true });
}

// One session: its first action, LATER get_text + navigate, then close.
async function session(side, freshTimes) {
  const [start, t] = await side.call('run_browser', { action: 'navigate', value: url });
  side.first.push(t);
  const id = start.session_id;
  side.sessions.push(id);
  for (let i = 0; i < LATER; i++) {
    side.laterText.push((await side.call('run_browser', { session_id: id, action: 'get_text', selector: '#x' }))[1]);
    side.laterNav.push((await side.call('run_browser', { session_id: id, action: 'navigate', value: url }))[1]);
  }
  if (freshTimes) {
    await side.call('write_file', { devbox_id: id, file_path: '/home/user/fresh.cjs', contents: fresh });
    for (let i = 0; i < Math.max(3, Math.floor(LATER / 2)); i++) {
      const [r, tp] = await side.call('execute_command', { devbox_id: id, command: `node /home/user/fresh.cjs '${url}'` });
      if (r.exit_code !== 0 || r.stdout.trim() !== 'bench page') throw new Error(`fresh Chromium failed: ${r.stderr}`);
      freshTimes.push(tp);
    }
  }
  await side.call('run_browser', { session_id: id, action: 'close' });
}

// What the engine says of the sessions' devboxes after close.
async function leftovers(side) {
  const list = await ping(side.sock);
  const mine = (list?.devboxes ?? []).filter((d) => side.sessions.includes(d.id));
  const counts = {};
  for (const d of mine) counts[d.status] = (counts[d.status] ?? 0) + 1;
  return Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(', ') || 'none listed';
}

const peerTree = peerBuild();
let ours;
let peer;
try {
  ours = await startSide('ours', buildDir);
  if (peerTree) peer = await startSide(peerTree.name, peerTree.dir);
  console.log(`run_browser benchmark (${quick ? 'quick' : 'full'}: ${SESSIONS} sessions, ${LATER} later get_text + ` +
    `navigate each), load average ${os.loadavg()[0].toFixed(1)}, ${os.cpus().length} CPUs`);
  const freshTimes = [];
  for (let s = 0; s < SESSIONS; s++) {
    await session(ours, freshTimes);
    if (peer) await session(peer, null);
  }
  const later = (x) => [...x.laterText, ...x.laterNav];
  const p = peer ?? { first: [], laterText: [], laterNav: [] };
  row('figure (p50)', 'ours', `peer ${peerTree?.name ?? '(none)'}`, 'target');
  row('first action (create + launch + navigate)', ms(pct(ours.first, 0.5)), ms(pct(p.first, 0.5)), '<= 3000 ms');
  row('later actions (get_text and navigate)', ms(pct(later(ours), 0.5)), ms(pct(later(p), 0.5)), '<= 300 ms');
  row('later get_text', ms(pct(ours.laterText, 0.5)), ms(pct(p.laterText, 0.5)), '');
  row('later navigate (data: URL)', ms(pct(ours.laterNav, 0.5)), ms(pct(p.laterNav, 0.5)), '');
  row('first action, min / max', `${ms(Math.min(...ours.first))} / ${ms(Math.max(...ours.first))}`,
    peer ? `${ms(Math.min(...p.first))} / ${ms(Math.max(...p.first))}` : '-', '');
  row('later actions p90', ms(pct(later(ours), 0.9)), ms(pct(later(p), 0.9)), '');
  row('fresh node + Chromium per action (ours)', ms(pct(freshTimes, 0.5)), '', 'for scale');
  console.log(`closed sessions' devboxes: ours ${await leftovers(ours)}` +
    (peer ? `; peer ${await leftovers(peer)}` : ''));
} finally {
  await stopSide(ours);
  await stopSide(peer);
}
