// http_memory.test.mjs - the HTTP host gives memory back after sessions
// end. Two rounds of SESSIONS sessions, opened at once by official MCP SDK
// clients (initialize, tools/list) and ended (DELETE): once they are gone
// the host's RSS comes back under twice its idle RSS, and the second round
// leaves no more than the first (glibc keeps freed pages in its arenas
// unless they are trimmed: without it 1,000 sessions left several times
// the idle size). A third round is of 2026-07-28 stateless requests on
// keep-alive connections, which neither leave the session table nor close
// a connection: their private sessions' ends must trigger a trim too.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import http from 'node:http';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { hostBin, hostEnv, requireBuilt, waitFor } from './lib/host.mjs';

const SESSIONS = 600;
// A sanitizer build (ASan, TSan) allocates with the sanitizer's own
// allocator, which keeps freed memory: glibc's arenas are not in play.
const hostImage = readFileSync(hostBin);
const sanitizer = hostImage.includes('__asan_init') ? 'AddressSanitizer'
  : hostImage.includes('__tsan_init') ? 'ThreadSanitizer' : null;
const sanitized = sanitizer !== null;
const work = mkdtempSync(path.join(tmpdir(), 'rlmcp-httpmem-'));
let child = null;

after(() => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

function rssKiB(pid) {
  const m = /^Rss:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  return Number(m[1]);
}

async function session(url) {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name: 'http-memory-test', version: '1' });
  await client.connect(transport);
  const { tools } = await client.listTools();
  assert.ok(tools.length > 0);
  await transport.terminateSession();
  await client.close();
}

async function round(url) {
  const results = await Promise.allSettled(Array.from({ length: SESSIONS }, () => session(url)));
  const failed = results.filter((r) => r.status === 'rejected');
  assert.equal(failed.length, 0, `${failed.length} sessions failed: ${failed[0]?.reason}`);
}

// One 2026-07-28 (stateless) tools/list over agent's keep-alive sockets.
function statelessList(url, agent, id) {
  const body = JSON.stringify({
    jsonrpc: '2.0', id, method: 'tools/list', params: { _meta: {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'http-memory-test', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    } },
  });
  const headers = {
    'content-type': 'application/json', accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list',
  };
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers, agent }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; });
      res.on('end', () => {
        if (res.statusCode === 200 && data.includes('"tools"')) resolve();
        else reject(new Error(`status ${res.statusCode}: ${data.slice(0, 300)}`));
      });
    });
    req.on('error', reject);
    req.setTimeout(60000, () => req.destroy(new Error('request timed out')));
    req.end(body);
  });
}

test('memory of ended sessions goes back to the system', {
  skip: sanitized && `${sanitizer} build: its allocator, not glibc's, holds freed memory`,
}, async () => {
  requireBuilt();
  const conf = path.join(work, 'http.yaml');
  writeFileSync(conf, [
    'server:', '  name: http-memory', '  transport: http', '  http:', '    listen: 127.0.0.1:0',
    `    max_sessions: ${SESSIONS + 100}`, `    max_connections: ${SESSIONS * 4}`,
    'runloop:', '  backend: cloud', '  base_url: http://127.0.0.1:9', '  api_key: e2e-unused-key',
    'plugins:', '  - name: testtools', '',
  ].join('\n'));
  let log = '';
  child = spawn(hostBin, ['-c', conf, '--log-level', 'debug'], { env: hostEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => { log += d; });
  const port = await waitFor(() => /\(port (\d+)\)/.exec(log)?.[1], 60000, `the host to listen:\n${log}`);
  const url = `http://127.0.0.1:${port}/mcp`;
  // Idle after a first session, so that start-up allocations are done.
  await session(url);
  await new Promise((r) => setTimeout(r, 1500));
  const idle = rssKiB(child.pid);

  await round(url);
  const peak = rssKiB(child.pid);
  let first = 0;
  await waitFor(() => { first = rssKiB(child.pid); return first <= 2 * idle; }, 30000,
    `RSS under twice idle (${idle} KiB) after round 1`, 250);
  const round2 = log.length;
  await round(url);
  let second = 0;
  await waitFor(() => { second = rssKiB(child.pid); return second <= first + 2048; }, 30000,
    `round 2 to leave at most 2 MiB more than round 1 (${first} KiB)`, 250);
  assert.ok(second <= 2 * idle, `RSS ${second} KiB after round 2, idle ${idle} KiB`);
  assert.ok(peak > idle, `the sessions used memory (${peak} KiB at the end of round 1, idle ${idle} KiB)`);

  // Stateless requests on a few keep-alive connections that stay open:
  // nothing but the private sessions' ends can trigger the trim.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  const trimmed = /handed back to the system/;
  // Round 2's own trim (its connections closing) comes first, then quiet.
  await waitFor(() => trimmed.test(log.slice(round2)), 30000, 'the trim after round 2', 250);
  await new Promise((r) => setTimeout(r, 3000));
  const mark = log.length;
  const results = await Promise.allSettled(Array.from({ length: SESSIONS }, (_, i) => statelessList(url, agent, i + 1)));
  const failed = results.filter((r) => r.status === 'rejected');
  assert.equal(failed.length, 0, `${failed.length} stateless requests failed: ${failed[0]?.reason}`);
  await waitFor(() => trimmed.test(log.slice(mark)), 30000,
    `a trim after the stateless round (keep-alive connections still open):\n${log.slice(-1500)}`, 250);
  let third = 0;
  await waitFor(() => { third = rssKiB(child.pid); return third <= 2 * idle; }, 30000,
    `RSS under twice idle (${idle} KiB) after the stateless round`, 250);
  agent.destroy();

  const gone = new Promise((r) => child.once('close', (code) => r(code)));
  child.kill('SIGTERM');
  assert.equal(await gone, 0, log.slice(-2000));
  assert.doesNotMatch(log, /AddressSanitizer|LeakSanitizer|runtime error:/);
});
