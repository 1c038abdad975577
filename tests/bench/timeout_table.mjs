// Timeout table: for each command tool and asked timeout, when the command
// was really killed (measured inside the devbox) and when the call
// answered, for our build beside a peer build, in one run. No pass/fail:
// figures for the report.
//
//   node tests/bench/timeout_table.mjs PEER_BUILD_DIR [OUR_BUILD_DIR]
//        (OUR_BUILD_DIR default: $RLMCP_BUILD_DIR, else build/)
//
// Each build runs its own devboxd and host (MCP SDK client over stdio) on a
// fresh state dir with the same small deployment. Per tool and asked time
// T (BENCH_ASKED, default "2,3,5"):
//  - overrun: a loop that stamps the time into a file every 50 ms; "ran
//    for" is its last stamp less its first (it was killed within about
//    50 ms after that), "answered" the call's duration at the client, with
//    the error code;
//  - fits: `sleep T-0.5; echo done` — "ok" when it completed, else the
//    error code.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const src = path.resolve(here, '../..');
if (!process.argv[2]) {
  console.error('usage: node tests/bench/timeout_table.mjs PEER_BUILD_DIR [OUR_BUILD_DIR]');
  process.exit(2);
}
const peer = path.resolve(process.argv[2]);
const ours = path.resolve(process.argv[3] ?? process.env.RLMCP_BUILD_DIR ?? path.join(src, 'build'));
const sdk = path.join(src, 'tests', 'node_modules', '@modelcontextprotocol', 'sdk', 'dist', 'esm', 'client');
const { Client } = await import(path.join(sdk, 'index.js'));
const { StdioClientTransport } = await import(path.join(sdk, 'stdio.js'));

const ASKED = (process.env.BENCH_ASKED ?? '2,3,5').split(',').map(Number);
const TOOLS = ['execute_command', 'run_shell', 'run_code'];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// One build: its devboxd, its host, a devbox; call(name, args) and stop().
async function start(build, tmp) {
  for (const f of ['bin/devboxd', 'bin/runloop-mcp', 'plugins/rlmcp_exec.so']) {
    if (!existsSync(path.join(build, f))) throw new Error(`${build}: no ${f} (build it first)`);
  }
  const state = path.join(tmp, 'state');
  const conf = path.join(tmp, 'bench.yaml');
  writeFileSync(conf, [
    'server:', '  name: timeout-table', '  transport: stdio',
    'host:', '  log_level: error',
    'runloop:', '  backend: local', `  state_dir: ${JSON.stringify(state)}`,
    'plugins:',
    '  - name: lifecycle', '    config: {create_wait_seconds: 120}',
    '  - name: exec',
    '    config: {default_timeout_seconds: 120, max_timeout_seconds: 900, create_wait_seconds: 120,',
    '             run_code: {purpose: code-testing, keep_alive_seconds: 900}}', '',
  ].join('\n'));
  const sock = path.join(state, 'devboxd.sock');
  const engine = spawn(path.join(build, 'bin', 'devboxd'), ['--state-dir', state], { stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 600 && !existsSync(sock); i++) await sleep(50);
  const transport = new StdioClientTransport({
    command: path.join(build, 'bin', 'runloop-mcp'),
    args: ['--config', conf],
    env: { PATH: process.env.PATH, HOME: tmp, RLMCP_PLUGIN_DIR: path.join(build, 'plugins') },
    stderr: 'inherit',
  });
  const client = new Client({ name: 'timeout-table', version: '1' });
  await client.connect(transport);
  const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 600000 });
  const created = await call('create_devbox', {});
  if (created.isError) throw new Error(`create_devbox: ${JSON.stringify(created.content)}`);
  const box = created.structuredContent.id;
  return {
    box,
    call,
    async stop() {
      try { await client.close(); } catch { /* gone */ }
      if (engine.exitCode === null) {
        const gone = new Promise((r) => engine.once('exit', r));
        engine.kill('SIGTERM');
        await gone;
      }
    },
  };
}

function codeOf(r) {
  try {
    return JSON.parse(r.content.find((c) => c.type === 'text').text).error?.code ?? 'error';
  } catch {
    return 'error';
  }
}

// One tool's arguments for a command line.
const argsFor = (b, tool, command) => (tool === 'run_code' ? { command } : { devbox_id: b.box, command });

async function measure(b, tool, asked) {
  const tag = `/tmp/tt_${tool}_${asked}_${Date.now()}`;
  const loop = `date +%s.%N > ${tag}.first; while :; do date +%s.%N > ${tag}.last; sleep 0.05; done`;
  const t0 = Date.now();
  const r = await b.call(tool, { ...argsFor(b, tool, loop), timeout_seconds: asked });
  const answered = (Date.now() - t0) / 1000;
  await sleep(1500); // a loop left running would stamp on
  const read = await b.call(tool, argsFor(b, tool, `cat ${tag}.first ${tag}.last; rm -f ${tag}.*`));
  const [first, last] = (read.structuredContent?.stdout ?? '').trim().split('\n').map(Number);
  const ranFor = last - first;
  const stillRunning = ranFor > answered + 0.5;
  const fits = await b.call(tool, { ...argsFor(b, tool, `sleep ${asked - 0.5}; echo done`), timeout_seconds: asked });
  return {
    killedAt: Number.isFinite(ranFor) ? `${ranFor.toFixed(2)} s${stillRunning ? ' (ran on)' : ''}` : '?',
    answered: `${answered.toFixed(2)} s (${r.isError ? codeOf(r) : 'no error'})`,
    fits: !fits.isError && fits.structuredContent?.stdout === 'done\n' ? 'ok' : codeOf(fits),
  };
}

const rows = [];
for (const [label, build] of [['ours', ours], ['peer', peer]]) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-timeout-table-'));
  let b;
  try {
    b = await start(build, tmp);
    await b.call('run_code', { command: 'true' }); // run_code's sandbox exists before timing
    for (const tool of TOOLS) {
      for (const asked of ASKED) rows.push({ label, tool, asked, ...(await measure(b, tool, asked)) });
    }
  } finally {
    await b?.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

console.log(`timeout table (ours: ${ours}; peer: ${peer})`);
console.log('"ran for": an overrunning command\'s last 50-ms stamp less its first; "T-0.5 s": a command ending 0.5 s early');
console.log('tool             asked | ours: ran for    answered              T-0.5 s | peer: ran for    answered              T-0.5 s');
for (const tool of TOOLS) {
  for (const asked of ASKED) {
    const o = rows.find((r) => r.label === 'ours' && r.tool === tool && r.asked === asked);
    const p = rows.find((r) => r.label === 'peer' && r.tool === tool && r.asked === asked);
    const cell = (x) => `${x.killedAt.padEnd(15)}  ${x.answered.padEnd(20)}  ${x.fits.padEnd(7)}`;
    console.log(`${tool.padEnd(16)} ${String(asked).padStart(3)} s | ${cell(o)} | ${cell(p)}`);
  }
}
