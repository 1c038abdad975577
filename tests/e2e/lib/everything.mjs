// The reference MCP server (@modelcontextprotocol/server-everything) over
// Streamable HTTP on loopback, behind a recording pass-through so a test
// sees exactly the headers each request reached the upstream with. Used as
// the upstream of devboxd's MCP Hub by the hub tests.
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const sourceDir = process.env.RLMCP_SOURCE_DIR ?? path.resolve(here, '../../..');

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

async function waitUntil(cond, ms, what) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts server-everything and the pass-through; returns {url, seen, stop}. */
export async function startEverything() {
  const port = await freePort();
  const entry = path.join(sourceDir, 'tests', 'node_modules', '@modelcontextprotocol',
    'server-everything', 'dist', 'index.js');
  const child = spawn(process.execPath, [entry, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const gone = new Promise((r) => child.once('exit', r));
  await waitUntil(() => /listening on port/i.test(stderr) || child.exitCode !== null, 60000,
    'server-everything to listen');
  if (child.exitCode !== null) throw new Error(`server-everything exited: ${stderr}`);
  const seen = [];
  const proxy = http.createServer((req, res) => {
    seen.push({ method: req.method, headers: req.headers });
    const up = http.request({ host: '127.0.0.1', port, path: req.url, method: req.method,
      headers: { ...req.headers, host: `127.0.0.1:${port}` } }, (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    });
    up.on('error', () => { res.writeHead(502); res.end(); });
    req.pipe(up);
  });
  await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${proxy.address().port}/mcp`,
    seen,
    stderr: () => stderr,
    async stop() {
      proxy.closeAllConnections();
      await new Promise((r) => proxy.close(r));
      if (child.exitCode === null) child.kill('SIGTERM');
      await gone;
    },
  };
}
