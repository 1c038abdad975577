// http_bench.mjs - client side of tests/bench/http_bench.sh. Raw node:http
// with a keep-alive agent (not the SDK), so that client cost stays low.
//
//   node http_bench.mjs latency  URL N          -> {"p50_ms":…,"p90_ms":…,"p99_ms":…,"bytes":…}
//   node http_bench.mjs session  URL            -> prints a new session id
//   node http_bench.mjs sessions URL N PID      -> {"sessions":N,"rss_before_kib":…,"rss_after_kib":…}
import http from 'node:http';
import { readFileSync } from 'node:fs';

const [mode, url, nArg, pidArg] = process.argv.slice(2);
const target = new URL(url);
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const HDRS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

function post(body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent,
      headers: { ...HDRS, ...headers, 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

// The JSON-RPC message with this id in a JSON or SSE body.
function message(body, id) {
  const t = body.trimStart();
  if (t.startsWith('{')) return JSON.parse(t);
  for (const block of body.split('\n\n')) {
    const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('');
    if (!data) continue;
    const m = JSON.parse(data);
    if (m.id === id) return m;
  }
  throw new Error(`no message ${id} in ${body.slice(0, 200)}`);
}

async function session() {
  const r = await post(JSON.stringify({
    jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
  }));
  if (r.status !== 200) throw new Error(`initialize: ${r.status} ${r.body}`);
  message(r.body, 0);
  const sid = r.headers['mcp-session-id'];
  const h = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  const n = await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), h);
  if (n.status !== 202) throw new Error(`initialized: ${n.status}`);
  return sid;
}

function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}

async function latency(n) {
  const sid = await session();
  const h = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  let bytes = 0;
  for (let i = 0; i < 200; i++) await post(body, h); // warm-up
  const t = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    const r = await post(body, h);
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (i === 0) {
      const m = message(r.body, 1);
      if (!m.result?.tools?.length) throw new Error('tools/list returned no tools');
      bytes = r.body.length;
    }
  }
  t.sort((a, b) => a - b);
  const q = (p) => t[Math.min(t.length - 1, Math.floor(p * t.length))];
  return { p50_ms: +q(0.5).toFixed(3), p90_ms: +q(0.9).toFixed(3), p99_ms: +q(0.99).toFixed(3), bytes, n };
}

async function sessions(n, pid) {
  const before = rssKiB(pid);
  const ids = [];
  for (let i = 0; i < n; i += 50) {
    const batch = [];
    for (let j = i; j < Math.min(n, i + 50); j++) batch.push(session());
    ids.push(...(await Promise.all(batch)));
  }
  // Held: every one of them still answers.
  let alive = 0;
  for (let i = 0; i < ids.length; i += 50) {
    const rs = await Promise.all(ids.slice(i, i + 50).map((sid) => post(
      JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
      { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' })));
    alive += rs.filter((r) => r.status === 200).length;
  }
  const after = rssKiB(pid);
  return { sessions: n, alive, rss_before_kib: before, rss_after_kib: after };
}

try {
  if (mode === 'latency') console.log(JSON.stringify(await latency(Number(nArg ?? 2000))));
  else if (mode === 'session') console.log(await session());
  else if (mode === 'sessions') console.log(JSON.stringify(await sessions(Number(nArg ?? 1000), Number(pidArg))));
  else throw new Error(`unknown mode ${mode}`);
} catch (e) {
  console.error(`http_bench.mjs: ${e.message}`);
  process.exitCode = 1;
} finally {
  agent.destroy();
}
