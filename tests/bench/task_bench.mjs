// task_bench.mjs - execute_command and create_snapshot as MCP tasks beside
// their plain calls, in the same run, against one runloop-mcp (HTTP,
// 2025-11-25, official SDK client) on a real devboxd: the round trip of a
// short command, and of a disk snapshot of the same devbox
//   plain:        tools/call
//   task+result:  tools/call with params.task, then tasks/result (blocks)
//   task+poll:    tools/call with params.task, tasks/get every 20 ms until
//                 terminal, then tasks/result
// p50 and mean over N runs of each (interleaved; each snapshot is deleted
// after it is timed). No assertions on time.
//
//   node tests/bench/task_bench.mjs  (RLMCP_BUILD_DIR, TASK_BENCH_N=30,
//                                     TASK_BENCH_SNAP_N=10)
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

const SRC = process.env.RLMCP_SOURCE_DIR ?? path.resolve(import.meta.dirname, '../..');
const BUILD = process.env.RLMCP_BUILD_DIR ?? path.join(SRC, 'build');
const N = Number(process.env.TASK_BENCH_N ?? 30);
const SNAP_N = Number(process.env.TASK_BENCH_SNAP_N ?? 10);
const work = mkdtempSync(path.join(tmpdir(), 'rlmcp-taskbench-'));
const state = path.join(work, 'state');
const procs = [];

function start(name, bin, args, env = process.env) {
  const child = spawn(bin, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const p = { name, child, log: '', exited: false };
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => { p.log += d; });
  p.gone = new Promise((r) => child.on('close', () => { p.exited = true; r(); }));
  procs.push(p);
  return p;
}

async function waitFor(cond, ms, what) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function stats(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return { p50: s[Math.floor(s.length / 2)], mean };
}

async function main() {
  const engine = start('devboxd', path.join(BUILD, 'bin', 'devboxd'), ['--state-dir', state]);
  await waitFor(() => engine.exited ? Promise.reject(new Error(engine.log)) : existsSync(path.join(state, 'devboxd.sock')), 30000, 'devboxd');
  const conf = path.join(work, 'bench.yaml');
  writeFileSync(conf, ['server:', '  http:', '    listen: 127.0.0.1:0', 'host:', '  log_level: warning',
    'runloop:', '  backend: local', `  state_dir: ${JSON.stringify(state)}`,
    'plugins:', '  - name: lifecycle', '  - name: exec',
    '  - name: snapshots', '    config: {poll_interval_ms: 100}', ''].join('\n'));
  const env = { ...process.env, RLMCP_PLUGIN_DIR: path.join(BUILD, 'plugins') };
  delete env.RUNLOOP_API_KEY;
  const host = start('host', path.join(BUILD, 'bin', 'runloop-mcp'), ['-c', conf, '--transport', 'http', '--log-level', 'info'], env);
  await waitFor(() => host.exited ? Promise.reject(new Error(host.log)) : /\(port \d+\)/.test(host.log), 60000, 'the host');
  const port = Number(/\(port (\d+)\)/.exec(host.log)[1]);
  const client = new Client({ name: 'task-bench', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  const box = (await client.callTool({ name: 'create_devbox', arguments: { name: 'task-bench' } }, undefined, { timeout: 200000 })).structuredContent.id;
  const opts = { timeout: 200000 };
  // The three ways to run one tool call; check(result) after each run.
  const ways = (name, args) => {
    const taskCall = () => client.request({ method: 'tools/call', params: { name, arguments: args, task: {} } }, CreateTaskResultSchema, opts);
    return {
      plain: async () => client.callTool({ name, arguments: args }, undefined, opts),
      'task+result': async () => {
        const { task } = await taskCall();
        return client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, opts);
      },
      'task+poll': async () => {
        const { task } = await taskCall();
        for (;;) {
          const t = await client.experimental.tasks.getTask(task.taskId);
          if (t.status !== 'working') break;
          await new Promise((r) => setTimeout(r, 20));
        }
        return client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, opts);
      },
    };
  };
  const measure = async (title, n, runs, check) => {
    const times = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
    for (const [k, fn] of Object.entries(runs)) await check(k, await fn()); // warm-up
    for (let i = 0; i < n; i++) {
      for (const [k, fn] of Object.entries(runs)) {
        const t0 = performance.now();
        const r = await fn();
        times[k].push(performance.now() - t0);
        await check(k, r);
      }
    }
    const base = stats(times.plain);
    console.log(`${title}, ${n} runs each, same host and devbox (ms):`);
    for (const [k, xs] of Object.entries(times)) {
      const s = stats(xs);
      console.log(`  ${k.padEnd(12)} p50 ${s.p50.toFixed(1).padStart(7)}  mean ${s.mean.toFixed(1).padStart(7)}  (${(s.p50 / base.p50).toFixed(2)}x plain p50)`);
    }
  };
  await measure('execute_command round trip', N, ways('execute_command', { devbox_id: box, command: 'echo bench' }), (k, r) => {
    if (r.structuredContent?.stdout !== 'bench\n') throw new Error(`${k}: unexpected result ${JSON.stringify(r)}`);
  });
  await client.callTool({ name: 'execute_command', arguments: { devbox_id: box, command: 'head -c 1048576 /dev/urandom > ~/bench.bin' } });
  await measure('create_snapshot round trip (1 MiB written)', SNAP_N, ways('create_snapshot', { devbox_id: box, name: 'bench' }), async (k, r) => {
    if (r.structuredContent?.status !== 'complete') throw new Error(`${k}: unexpected result ${JSON.stringify(r)}`);
    await client.callTool({ name: 'delete_snapshot', arguments: { snapshot_id: r.structuredContent.id } }, undefined, opts);
  });
  await client.callTool({ name: 'shutdown_devbox', arguments: { devbox_id: box } });
  await client.close();
}

try {
  await main();
} finally {
  for (const p of [...procs].reverse()) {
    if (!p.exited) p.child.kill('SIGTERM');
    const t = setTimeout(() => p.child.kill('SIGKILL'), 20000);
    await p.gone;
    clearTimeout(t);
  }
  rmSync(work, { recursive: true, force: true });
}
