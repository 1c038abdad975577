// session_bench.mjs - client side of tests/bench/session_bench.sh. Raw
// node:http, one connection per request (as independent clients would).
//
//   node session_bench.mjs URL IDLE FRESH
//     opens IDLE sessions with initialize only (no credentials, never used),
//     25 at a time, timing each initialize; then a fresh client tries FRESH
//     more. Prints {"idle_ok":…,"idle_refused":…,"init_p50_ms":…,
//     "init_p99_ms":…,"fresh_ok":…,"fresh_tried":…,"fresh_status":…}
import http from 'node:http';

const [url, idleArg, freshArg] = process.argv.slice(2);
const target = new URL(url);
const IDLE = Number(idleArg ?? 1000);
const FRESH = Number(freshArg ?? 10);
const INIT = JSON.stringify({
  jsonrpc: '2.0', id: 0, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'session-bench', version: '1' } },
});

function init() {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = http.request({
      host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent: false,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, ms: Number(process.hrtime.bigint() - t0) / 1e6 }));
    });
    req.on('error', reject);
    req.end(INIT);
  });
}

const pct = (xs, p) => xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

const idle = [];
for (let i = 0; i < IDLE; i += 25) {
  const batch = [];
  for (let j = i; j < Math.min(IDLE, i + 25); j++) batch.push(init());
  idle.push(...await Promise.all(batch));
}
const fresh = [];
for (let i = 0; i < FRESH; i++) fresh.push(await init());
const times = idle.map((r) => r.ms).sort((a, b) => a - b);
const statuses = {};
for (const r of fresh) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
console.log(JSON.stringify({
  idle_ok: idle.filter((r) => r.status === 200).length,
  idle_refused: idle.filter((r) => r.status !== 200).length,
  init_p50_ms: Number(pct(times, 50).toFixed(3)),
  init_p99_ms: Number(pct(times, 99).toFixed(3)),
  fresh_ok: fresh.filter((r) => r.status === 200).length,
  fresh_tried: FRESH,
  fresh_status: statuses,
}));
