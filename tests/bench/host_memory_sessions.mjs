// host_memory_sessions.mjs - client side of tests/bench/host_memory.py: one
// round of N MCP sessions over Streamable HTTP, opened at once and ended.
// Raw node:http, one connection per request, as independent clients.
//
//   node host_memory_sessions.mjs URL N
//     N initialize requests at once; each session then sends
//     notifications/initialized and tools/list, and is ended with DELETE.
//     Prints {"opened":…,"listed":…,"deleted":…,"failed":…,"ms":…}
import http from 'node:http';

const [url, nArg] = process.argv.slice(2);
const target = new URL(url);
const N = Number(nArg ?? 1000);
const VERSION = '2025-11-25';

function post(body, headers = {}, method = 'POST') {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: target.hostname, port: target.port, path: target.pathname, method, agent: false,
      headers: {
        'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers,
      },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body === null ? undefined : JSON.stringify(body));
  });
}

async function session(i) {
  const init = await post({
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: `mem-${i}`, version: '1' } },
  });
  const sid = init.headers['mcp-session-id'];
  if (init.status !== 200 || !sid) return { opened: false };
  const h = { 'mcp-session-id': sid, 'mcp-protocol-version': VERSION };
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, h);
  const list = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, h);
  const del = await post(null, h, 'DELETE');
  return { opened: true, listed: list.status === 200 && /"tools"/.test(list.text), deleted: del.status < 300 };
}

const t0 = Date.now();
const rs = await Promise.all(Array.from({ length: N }, (_, i) => session(i).catch(() => ({ opened: false }))));
console.log(JSON.stringify({
  opened: rs.filter((r) => r.opened).length,
  listed: rs.filter((r) => r.listed).length,
  deleted: rs.filter((r) => r.deleted).length,
  failed: rs.filter((r) => !r.opened).length,
  ms: Date.now() - t0,
}));
