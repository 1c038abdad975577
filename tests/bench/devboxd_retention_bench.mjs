// Retention of ended devboxes' records: creates and shuts down N devboxes
// (default 10000) on this build's devboxd, keeping the newest --max records
// (RLMCP_RECORD_RETENTION_MAX, default N/10 here so the limit is reached),
// beside a peer devboxd that keeps every record: a --peer BIN build (e.g. an
// older devboxd that had no retention), else this build with retention
// turned up past N. Both run at once and take turns. Prints devboxd's RSS
// and the records' disk use before, at every fifth, and after. Figures only.
//   RLMCP_BUILD_DIR=build node tests/bench/devboxd_retention_bench.mjs [N] [--max M] [--peer BIN]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Devboxd } from '../../devboxd/tests/api/devboxd.mjs';

const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const N = Number(args.find((a, i) => /^\d+$/.test(a) && !['--max', '--peer'].includes(args[i - 1])) ?? 10000);
const MAX = Number(opt('--max') ?? Math.max(1, Math.floor(N / 10)));
const peerBin = opt('--peer');
if (!(N > 0) || !(MAX >= 0)) throw new Error('usage: devboxd_retention_bench.mjs [N] [--max M] [--peer BIN]');

const rssMiB = (e) => {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${e.proc.pid}/status`, 'utf8'));
  return Number(m[1]) / 1024;
};
const diskMiB = (e) => Number(execFileSync('du', ['-s', '-B1', path.join(e.stateDir, 'devboxes')])
  .toString().split('\t')[0]) / (1 << 20);
const row = (what, ours, peer) => console.log(`${what.padEnd(34)} ${String(ours).padEnd(30)} ${peer}`);
const fig = (e) => `${rssMiB(e).toFixed(1)} MiB RSS, ${diskMiB(e).toFixed(1)} MiB`;

const ours = { name: `this build (max ${MAX})`,
  engine: new Devboxd({ env: { RLMCP_RECORD_RETENTION_MAX: String(MAX) } }) };
const peer = { name: peerBin ? `peer ${peerBin}` : 'this build, keeping all',
  engine: new Devboxd({ env: { RLMCP_RECORD_RETENTION_MAX: '10000000', RLMCP_RECORD_RETENTION_DAYS: '36500' } }) };
if (peerBin) peer.engine.bin = peerBin;
const sides = [ours, peer];
for (const s of sides) {
  await s.engine.start();
  s.client = s.engine.client();
}
try {
  row(`devboxes created+shut down`, ours.name, peer.name);
  // A devbox first, so both start from a loaded engine.
  for (const s of sides) await s.client.devboxes.shutdown((await s.client.devboxes.createAndAwaitRunning({})).id);
  row('0', fig(ours.engine), fig(peer.engine));
  const step = Math.max(1, Math.floor(N / 5));
  for (let i = 1; i <= N; i++) {
    for (const s of i % 2 ? sides : [...sides].reverse()) {
      const b = await s.client.devboxes.createAndAwaitRunning({}, { timeout: 600000 });
      await s.client.devboxes.executeAndAwaitCompletion(b.id, { command: 'echo hello' });
      await s.client.devboxes.shutdown(b.id);
    }
    if (i % step === 0 || i === N) {
      // The sweep runs every second; ended devboxes are kept 2 s at least.
      await new Promise((r) => setTimeout(r, 3500));
      row(String(i), fig(ours.engine), fig(peer.engine));
    }
  }
  const count = async (s) => (await s.client.devboxes.list({ status: 'shutdown', limit: 1, include_total_count: true })).total_count;
  row('records kept (shutdown)', await count(ours), await count(peer));
} finally {
  for (const s of sides) await s.engine.cleanup();
}
