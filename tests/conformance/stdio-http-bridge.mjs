#!/usr/bin/env node
// stdio-http-bridge.mjs - put a Streamable HTTP endpoint (127.0.0.1 only) in
// front of an MCP server that speaks stdio, so that HTTP-only clients such as
// `conformance server --url` can test the stdio transport.
//
//   node stdio-http-bridge.mjs PORT -- <server command> [args...]
//
// PORT 0 picks a free port; the bridge prints "bridge listening on PORT" on
// stderr once it accepts connections. One child process per HTTP session;
// JSON-RPC messages pass through unchanged both ways. A progress
// notification goes to the POST stream of the request that carried its
// progressToken; every other server-initiated message goes to the session's
// GET stream. Sessions idle for BRIDGE_IDLE_MS (default 30000) are closed
// and their child stopped, because the conformance suite never sends DELETE.
// Built on the official SDK only (@modelcontextprotocol/sdk 1.x).
import { randomUUID } from 'node:crypto';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

const dashes = process.argv.indexOf('--');
const port = Number(process.argv[2]);
const command = dashes > 0 ? process.argv.slice(dashes + 1) : [];
if (!Number.isInteger(port) || port < 0 || command.length === 0) {
  console.error('usage: stdio-http-bridge.mjs PORT -- <command> [args...]');
  process.exit(2);
}
const idleMs = Number(process.env.BRIDGE_IDLE_MS ?? 30000);

const rpcError = (res, status, code, message) =>
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });

const sessions = new Map(); // id -> { http, child, progressOwner, lastUsed }
const closing = new Set(); // children being stopped: awaited before exit

function closeChild(s) {
  const p = s.child.close().catch(() => {});
  closing.add(p);
  p.finally(() => closing.delete(p));
}

// The child inherits our environment (PATH, RLMCP_*), not just the SDK's
// safe default subset, so that it finds its plugins and state dir.
async function openSession() {
  const s = { progressOwner: new Map(), lastUsed: Date.now() };
  s.child = new StdioClientTransport({
    command: command[0],
    args: command.slice(1),
    env: { ...process.env },
    stderr: 'inherit',
  });
  s.http = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, s),
  });
  s.http.onmessage = (msg) => {
    const token = msg?.params?._meta?.progressToken;
    if (token !== undefined && msg.id !== undefined) s.progressOwner.set(String(token), msg.id);
    s.child.send(msg).catch((e) => console.error('[bridge] to child:', e.message));
  };
  s.child.onmessage = (msg) => {
    let relatedRequestId;
    if (msg.method === 'notifications/progress') {
      relatedRequestId = s.progressOwner.get(String(msg.params?.progressToken));
    }
    if (msg.method === undefined && msg.id !== undefined) {
      for (const [token, id] of s.progressOwner) if (id === msg.id) s.progressOwner.delete(token);
    }
    s.http
      .send(msg, relatedRequestId !== undefined ? { relatedRequestId } : undefined)
      .catch((e) => console.error('[bridge] to http:', e.message));
  };
  s.http.onclose = () => {
    if (s.http.sessionId) sessions.delete(s.http.sessionId);
    closeChild(s);
  };
  s.child.onclose = () => {
    s.http.close().catch(() => {});
  };
  await s.child.start();
  await s.http.start();
  return s;
}

const app = createMcpExpressApp({ host: '127.0.0.1' }); // JSON body + Host check
app.all('/mcp', async (req, res) => {
  const sid = req.headers['mcp-session-id'];
  let s = sid ? sessions.get(sid) : undefined;
  if (!s) {
    if (sid) return rpcError(res, 404, -32001, 'Session not found');
    if (req.method !== 'POST' || !isInitializeRequest(req.body)) {
      return rpcError(res, 400, -32000, 'Bad Request: no session; send initialize first');
    }
    try {
      s = await openSession();
    } catch (e) {
      return rpcError(res, 500, -32603, `cannot start the stdio server: ${e.message}`);
    }
  }
  s.lastUsed = Date.now();
  try {
    await s.http.handleRequest(req, res, req.body);
  } catch (e) {
    console.error('[bridge] handleRequest:', e);
    if (!res.headersSent) rpcError(res, 500, -32603, 'Internal error');
  }
});

const reaper = setInterval(() => {
  for (const s of sessions.values()) {
    if (Date.now() - s.lastUsed > idleMs) s.http.close().catch(() => {});
  }
}, Math.min(idleMs, 5000));
reaper.unref();

const server = app.listen(port, '127.0.0.1', () => {
  console.error(`bridge listening on ${server.address().port}`);
});

// Children get the SDK's close sequence (stdin end, then SIGTERM, SIGKILL);
// the bridge exits once every one of them has exited.
async function shutdown() {
  clearInterval(reaper);
  server.close();
  await Promise.all([...sessions.values()].map((s) => s.http.close().catch(() => {})));
  while (closing.size > 0) await Promise.all([...closing]);
  process.exit(0);
}
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
