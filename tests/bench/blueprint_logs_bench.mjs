// Blueprint build logs of a ~40 MB build fetched by 8 clients at once,
// with devboxd's memory: builds whose RUN prints ~4 MB and ~40 MB of
// output lines, then GET /v1/blueprints/{id}/logs through the official SDK
// by 1 client and by 8 clients at once, each round R times. Printed per
// log size and client count: the wall time of a round, devboxd's CPU time
// in it, and devboxd's RSS before the fetch beside its peak during it
// (VmHWM, reset through /proc/<pid>/clear_refs before each round; needs
// root or the same user). The 4 MB log is the peer: memory that grows
// with the log would show 10x between the two. Figures only.
//   RLMCP_BUILD_DIR=build node tests/bench/blueprint_logs_bench.mjs [R] [MB]
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Devboxd, waitFor } from '../../devboxd/tests/api/devboxd.mjs';

const R = Number(process.argv[2] ?? 3);
const MB = Number(process.argv[3] ?? 40);
const LINE = 2000; // bytes of output per line
// The engine keeps at most 20000 lines of one build's output.
const linesFor = (mb) => Math.min(19900, Math.ceil((mb << 20) / LINE));

const engine = new Devboxd(process.env.RLMCP_BUILDER ? { env: { RLMCP_BUILDER: process.env.RLMCP_BUILDER } } : {});
const kib = (field) => {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${engine.proc.pid}/status`, 'utf8'));
  return Number(m[1]);
};
const cpuMs = () => {
  const f = readFileSync(`/proc/${engine.proc.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10; // utime + stime, 100 ticks/s
};
const mib = (k) => (k / 1024).toFixed(1);
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };

async function round(client, id, clients, lines) {
  writeFileSync(`/proc/${engine.proc.pid}/clear_refs`, '5'); // VmHWM := VmRSS
  const before = kib('VmRSS');
  const cpu0 = cpuMs();
  const t0 = performance.now();
  const got = await Promise.all(Array.from({ length: clients }, () => client.blueprints.logs(id)));
  const ms = performance.now() - t0;
  for (const g of got) {
    if (g.logs.length < lines) throw new Error(`a client got ${g.logs.length} log entries, want ≥ ${lines}`);
  }
  return { ms, cpu: cpuMs() - cpu0, before, peak: kib('VmHWM') };
}

async function build(client, mb) {
  const lines = linesFor(mb);
  const b = await client.blueprints.create({ name: `logs-bench-${mb}`, dockerfile: [
    'FROM runloop:runloop/starter-x86_64',
    `RUN yes "$(head -c ${LINE - 8} /dev/zero | tr '\\0' x)" | head -n ${lines} | cat -n`,
  ].join('\n') });
  const done = await waitFor(async () => {
    const r = await client.blueprints.retrieve(b.id);
    return ['build_complete', 'failed'].includes(r.status) ? r : null;
  }, { timeoutMs: 1800000, stepMs: 500, what: 'the build' });
  if (done.status !== 'build_complete') throw new Error(`the build failed: ${done.status}`);
  const size = statSync(path.join(engine.stateDir, 'blueprints', b.id, 'logs.jsonl')).size;
  return { id: b.id, lines, size };
}

try {
  await engine.start();
  const client = engine.client({ timeout: 600000 });
  const logs = [await build(client, Math.max(1, Math.round(MB / 10))), await build(client, MB)];
  console.log(`devboxd after the builds: VmRSS ${mib(kib('VmRSS'))} MiB`);
  const rows = [];
  for (const lg of logs) {
    const sides = { 1: [], 8: [] };
    for (let i = 0; i < R; i++) {
      sides[1].push(await round(client, lg.id, 1, lg.lines));
      sides[8].push(await round(client, lg.id, 8, lg.lines));
    }
    for (const [n, rs] of Object.entries(sides)) {
      const ms = rs.map((r) => r.ms);
      const growth = rs.map((r) => r.peak - r.before);
      rows.push(`log ${(lg.size / 1048576).toFixed(1).padStart(5)} MiB, ${n} client${n === '1' ? ' ' : 's'}: ` +
        `wall p50 ${pct(ms, 0.5).toFixed(0)} ms (min ${Math.min(...ms).toFixed(0)}, max ${Math.max(...ms).toFixed(0)}), ` +
        `devboxd CPU p50 ${pct(rs.map((r) => r.cpu), 0.5)} ms; RSS before p50 ${mib(pct(rs.map((r) => r.before), 0.5))} MiB, ` +
        `peak max ${mib(Math.max(...rs.map((r) => r.peak)))} MiB (growth p50 ${mib(pct(growth, 0.5))}, max ${mib(Math.max(...growth))} MiB)`);
    }
    await client.blueprints.delete(lg.id);
  }
  for (const r of rows) console.log(r);
} finally {
  await engine.cleanup();
}
