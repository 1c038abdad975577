// revision_bench.mjs - client side of tests/bench/revision_bench.sh. Raw
// node:http with keep-alive; one request at a time.
//
//   node revision_bench.mjs latency URL N REV METHOD  -> {"p50_ms":…,"p99_ms":…,"bytes":…}
//   node revision_bench.mjs session URL               -> a new 2025-11-25 session id
//   node revision_bench.mjs body REV METHOD           -> the request body, for wrk
//   node revision_bench.mjs headers REV METHOD [SID]  -> its headers, "Name: value" lines
// REV is 2025-11-25 (a session) or 2026-07-28 (stateless, _meta per
// request); METHOD is tools/list or tools/call (test_simple_text).
import http from 'node:http';

const [mode, a1, a2, a3, a4] = process.argv.slice(2);
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

function post(url, body, headers) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent,
      headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

function request(rev, method, sid) {
  const params = method === 'tools/call' ? { name: 'test_simple_text', arguments: {} } : {};
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': rev };
  if (rev === '2026-07-28') {
    params._meta = { 'io.modelcontextprotocol/protocolVersion': rev, 'io.modelcontextprotocol/clientCapabilities': {} };
    headers['mcp-method'] = method;
    if (method === 'tools/call') headers['mcp-name'] = params.name;
  } else {
    headers['mcp-session-id'] = sid;
  }
  return { body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }), headers };
}

async function session(url) {
  const hdrs = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const r = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }), hdrs);
  if (r.status !== 200) throw new Error(`initialize: ${r.status} ${r.body}`);
  const sid = r.headers['mcp-session-id'];
  await post(url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    { ...hdrs, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' });
  return sid;
}

async function latency(url, n, rev, method) {
  const sid = rev === '2026-07-28' ? undefined : await session(url);
  const { body, headers } = request(rev, method, sid);
  for (let i = 0; i < 200; i++) await post(url, body, headers); // warm-up
  const t = [];
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    const r = await post(url, body, headers);
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (i === 0) {
      if (r.status !== 200 || !/"result"/.test(r.body) || /"error"/.test(r.body.slice(0, 60))) throw new Error(`${method}: ${r.status} ${r.body.slice(0, 300)}`);
      bytes = r.body.length;
    }
  }
  t.sort((x, y) => x - y);
  const q = (p) => t[Math.min(t.length - 1, Math.floor(p * t.length))];
  return { p50_ms: +q(0.5).toFixed(3), p99_ms: +q(0.99).toFixed(3), bytes, n };
}

try {
  if (mode === 'latency') console.log(JSON.stringify(await latency(a1, Number(a2), a3, a4)));
  else if (mode === 'session') console.log(await session(a1));
  else if (mode === 'body') console.log(request(a1, a2).body);
  else if (mode === 'headers') console.log(Object.entries(request(a1, a2, a3).headers).map(([k, v]) => `${k}: ${v}`).join('\n'));
  else throw new Error(`unknown mode ${mode}`);
} catch (e) {
  console.error(`revision_bench.mjs: ${e.message}`);
  process.exitCode = 1;
} finally {
  agent.destroy();
}
