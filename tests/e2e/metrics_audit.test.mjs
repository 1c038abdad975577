// metrics_audit.test.mjs - the operator's view of an HTTP deployment on a
// real local engine (devboxd in a temporary state dir), driven by the
// official MCP SDK client:
//  - GET /metrics: behind the endpoint token like /mcp (401 without it),
//    parsed by a Prometheus text-format parser (parse-prometheus-text-format):
//    per-tool call counts by outcome, latency histograms (cumulative, +Inf =
//    count), errors by code, calls in flight, sessions, backend requests by
//    status class and retries; "public" serves it without the token and
//    "off" not at all;
//  - the audit log: one JSON line per call with the caller's key fingerprint
//    (never the key), the session, the tool, the arguments' SHA-256, the
//    outcome and code, the duration and the devbox; rotation by size.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync, readFileSync, readdirSync, statSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startHttpHost, stopHttpHost } from './lib/host.mjs';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const SRC = process.env.RLMCP_SOURCE_DIR ?? path.resolve(import.meta.dirname, '../..');
const BUILD = process.env.RLMCP_BUILD_DIR ?? path.join(SRC, 'build');
const BIN = path.join(BUILD, 'bin', 'runloop-mcp');
const KEY = 'ak_metrics_SECRET_0123456789abcdef0123';
const TOKEN = 'endpoint-token-0123456789abcdef';
// Short: the engine's socket path must fit a unix socket address.
const work = mkdtempSync(path.join(tmpdir(), 'rlmcp-ma-'));
const state = path.join(work, 's');
const audit = path.join(work, 'audit.jsonl');
const AUDIT_MAX = 4000;
const servers = [];

function env() {
  const e = { ...process.env, RLMCP_PLUGIN_DIR: path.join(BUILD, 'plugins') };
  delete e.RUNLOOP_API_KEY;
  delete e.RUNLOOP_BASE_URL;
  return e;
}

function writeConf(name, { metrics, token = true, auditLog = false }) {
  const lines = [
    'server:', `  name: ${name}`, '  transport: http', '  http:', '    listen: 127.0.0.1:0',
  ];
  if (token) lines.push(`    auth_token: ${TOKEN}`);
  if (metrics) lines.push(`    metrics: ${metrics}`);
  lines.push('host:', '  log_level: notice');
  if (auditLog) lines.push(`  audit_log: ${audit}`, `  audit_max_bytes: ${AUDIT_MAX}`, '  audit_keep: 2');
  lines.push('runloop:', '  backend: local', `  state_dir: ${state}`, 'plugins:', '  - name: lifecycle', '');
  const file = path.join(work, `${name}.yaml`);
  writeFileSync(file, lines.join('\n'));
  return file;
}

function startServer(name, opts) {
  return startHttpHost(name, ['-c', writeConf(name, opts)], { env: env(), list: servers, ms: 90000 });
}

const stopServer = stopHttpHost;

async function getMetrics(srv, headers = {}) {
  const r = await fetch(`http://127.0.0.1:${srv.port}/metrics`, { headers });
  return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
}

// The value of one sample: family name, label subset.
function sample(families, name, labels = {}) {
  const fam = families.find((f) => f.name === name);
  assert.ok(fam, `no metric family ${name}`);
  const hit = fam.metrics.filter((m) => Object.entries(labels).every(([k, v]) => (m.labels ?? {})[k] === v));
  assert.equal(hit.length, 1, `${name}${JSON.stringify(labels)}: ${hit.length} samples`);
  return hit[0];
}

let main;
let client;
let transport;

before(async () => {
  main = await startServer('metrics-main', { auditLog: true });
  transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${main.port}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}`, 'X-Runloop-Api-Key': KEY } },
  });
  client = new Client({ name: 'metrics-test', version: '1' });
  await client.connect(transport);
});

after(async () => {
  try { await client?.close(); } catch { /* already closed */ }
  for (const s of servers) await stopServer(s);
  // The engine the first server started outlives it by design: stop it.
  spawnSync(BIN, ['engine', 'stop'], { env: { ...env(), RLMCP_STATE_DIR: state }, stdio: 'ignore', timeout: 90000 });
  rmSync(work, { recursive: true, force: true });
});

test('calls are counted, timed and audited', async () => {
  for (let i = 0; i < 3; i++) {
    const r = await client.callTool({ name: 'list_devboxes', arguments: { limit: 5 } });
    assert.ok(!r.isError, JSON.stringify(r));
  }
  const bad = await client.callTool({ name: 'get_devbox', arguments: { devbox_id: 'dbx_nope' } });
  assert.equal(bad.isError, true);
  const code = JSON.parse(bad.content[0].text).error.code;

  // Without the endpoint token: refused like /mcp.
  const denied = await getMetrics(main);
  assert.equal(denied.status, 401);
  const m = await getMetrics(main, { Authorization: `Bearer ${TOKEN}` });
  assert.equal(m.status, 200);
  assert.match(m.type, /^text\/plain; version=0\.0\.4/);
  assert.ok(!m.text.includes(KEY) && !m.text.includes(TOKEN));
  const fam = parsePrometheusTextFormat(m.text);

  assert.equal(sample(fam, 'rlmcp_tool_calls_total', { tool: 'list_devboxes', outcome: 'ok' }).value, '3');
  assert.equal(sample(fam, 'rlmcp_tool_calls_total', { tool: 'get_devbox', outcome: 'error' }).value, '1');
  assert.equal(sample(fam, 'rlmcp_tool_errors_total', { code }).value, '1');
  assert.equal(sample(fam, 'rlmcp_calls_in_flight').value, '0');
  assert.equal(sample(fam, 'rlmcp_http_sessions').value, '1');
  assert.equal(fam.find((f) => f.name === 'rlmcp_calls_in_flight').type, 'GAUGE');

  assert.equal(fam.find((f) => f.name === 'rlmcp_tool_call_duration_seconds').type, 'HISTOGRAM');
  // This parser reads a histogram's series by le alone (labelled _sum and
  // _count are dropped), so one tool's series are parsed on their own,
  // without their tool label.
  const one = m.text.split('\n').filter((l) => l.startsWith('# TYPE rlmcp_tool_call_duration_seconds ') ||
    (l.startsWith('rlmcp_tool_call_duration_seconds_') && l.includes('tool="list_devboxes"')))
    .map((l) => l.replace('{tool="list_devboxes"}', '').replace('tool="list_devboxes",', '')).join('\n');
  const h = parsePrometheusTextFormat(`${one}\n`)[0].metrics[0];
  assert.equal(h.count, '3');
  assert.ok(Number(h.sum) > 0);
  const les = Object.keys(h.buckets).sort((a, b) => Number(a.replace('+Inf', 'Infinity')) - Number(b.replace('+Inf', 'Infinity')));
  assert.ok(les.includes('+Inf'));
  assert.equal(h.buckets['+Inf'], '3');
  let prev = 0;
  for (const le of les) {
    assert.ok(Number(h.buckets[le]) >= prev, `bucket ${le} is cumulative`);
    prev = Number(h.buckets[le]);
  }

  // Every call above reached the engine: at least one 2xx each (the
  // not-found one answered 404).
  assert.ok(Number(sample(fam, 'rlmcp_backend_requests_total', { status: '2xx' }).value) >= 3);
  assert.ok(Number(sample(fam, 'rlmcp_backend_requests_total', { status: '4xx' }).value) >= 1);
  assert.equal(fam.find((f) => f.name === 'rlmcp_backend_retries_total').type, 'COUNTER');
  assert.equal(fam.find((f) => f.name === 'rlmcp_build_info').metrics[0].value, '1');
  assert.equal(sample(fam, 'rlmcp_backend_circuit_state').value, '0');

  // The audit log: one line per call, no key.
  const lines = readFileSync(audit, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(lines.length, 4);
  const fp = `sha256:${createHash('sha256').update(KEY).digest('hex').slice(0, 12)}`;
  for (const l of lines) {
    assert.match(l.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(l.caller, fp);
    assert.equal(l.session, transport.sessionId.slice(0, 8));
    assert.ok(Number.isInteger(l.duration_ms) && l.duration_ms >= 0);
  }
  assert.deepEqual(lines.map((l) => l.tool), ['list_devboxes', 'list_devboxes', 'list_devboxes', 'get_devbox']);
  assert.equal(lines[0].outcome, 'ok');
  assert.equal(lines[0].devbox_id, null);
  assert.equal(lines[0].args_sha256, createHash('sha256').update('{"limit":5}').digest('hex'));
  assert.equal(lines[3].outcome, 'error');
  assert.equal(lines[3].code, code);
  assert.equal(lines[3].devbox_id, 'dbx_nope');
  assert.equal(lines[3].args_sha256, createHash('sha256').update('{"devbox_id":"dbx_nope"}').digest('hex'));
  assert.ok(!readFileSync(audit, 'utf8').includes(KEY));
  assert.ok(!main.log.includes(KEY));
});

test('the audit log rotates by size and keeps audit_keep files', async () => {
  for (let i = 0; i < 40; i++) await client.callTool({ name: 'list_devboxes', arguments: { limit: 1 } });
  const files = readdirSync(work).filter((f) => f.startsWith('audit.jsonl')).sort();
  assert.deepEqual(files, ['audit.jsonl', 'audit.jsonl.1', 'audit.jsonl.2']);
  for (const f of files) {
    assert.ok(statSync(path.join(work, f)).size <= AUDIT_MAX, `${f} is within audit_max_bytes`);
    for (const l of readFileSync(path.join(work, f), 'utf8').trim().split('\n')) JSON.parse(l);
  }
});

test('metrics: public serves without the token, off not at all', async () => {
  const pub = await startServer('metrics-public', { metrics: 'public' });
  const r = await getMetrics(pub);
  assert.equal(r.status, 200);
  assert.ok(parsePrometheusTextFormat(r.text).some((f) => f.name === 'rlmcp_calls_in_flight'));
  // /mcp still wants the token.
  const mcp = await fetch(`http://127.0.0.1:${pub.port}/mcp`, { method: 'POST', body: '{}',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' } });
  assert.equal(mcp.status, 401);
  const off = await startServer('metrics-off', { metrics: 'off' });
  assert.equal((await getMetrics(off, { Authorization: `Bearer ${TOKEN}` })).status, 404);
  assert.ok(existsSync(audit));
});

test('bad operator settings are refused with what to fix', () => {
  const cases = [
    ['server:\n  http:\n    metrics: maybe\n', /server\.http\.metrics.*private.*public.*off/s],
    ['host:\n  audit_keep: 1000\n', /host\.audit_keep/],
    ['host:\n  audit_max_bytes: -1\n', /host\.audit_max_bytes/],
  ];
  for (const [yaml, re] of cases) {
    const f = path.join(work, 'bad.yaml');
    writeFileSync(f, `${yaml}plugins: [{name: lifecycle}]\n`);
    const r = spawnSync(BIN, ['-c', f, '--check-config'], { env: env(), encoding: 'utf8' });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /bad\.yaml:\d+:\d+: /);
    assert.match(r.stderr, re);
  }
  const f = path.join(work, 'noaudit.yaml');
  writeFileSync(f, `host:\n  audit_log: ${work}/no/such/dir/audit.jsonl\nrunloop: {backend: cloud, base_url: "http://127.0.0.1:9", api_key: ak_test_unused_0123}\nplugins: [{name: lifecycle}]\n`);
  const ok = spawnSync(BIN, ['-c', f, '--check-config'], { env: env(), encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /audit log: +.*audit\.jsonl \(rotated at 67108864 bytes, 5 kept\)/);
  const run = spawnSync(BIN, ['-c', f], { env: env(), encoding: 'utf8', input: '' });
  assert.equal(run.status, 1);
  assert.match(run.stderr, /cannot open the audit log .*audit\.jsonl: No such file or directory; fix host\.audit_log or create its directory/);
});
