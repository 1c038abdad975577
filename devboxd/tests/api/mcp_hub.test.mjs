// MCP configs through the official Runloop SDK (create, list, retrieve,
// update, delete, bad input), and the MCP Hub itself: a devbox created with
// `mcp` reaches the reference MCP server (@modelcontextprotocol/server-everything
// over Streamable HTTP on loopback) through $RL_MCP_URL with its token; the
// upstream sees the real credential, the devbox never does; only allowed
// tools are listed and callable; other devboxes and other tokens get nothing;
// a flood from inside the devbox is refused on its headers and devboxd's
// memory and threads stay bounded.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Devboxd, filesContaining, rejectsWith, sourceDir, waitFor } from './devboxd.mjs';
import { startEverything } from '../../../tests/e2e/lib/everything.mjs';

// A sanitizer build's allocator keeps 256 MiB of freed memory in quarantine
// by default: a small one lets the flood test read devboxd's own growth.
const asan = [process.env.ASAN_OPTIONS, 'quarantine_size_mb=8'].filter(Boolean).join(':');
const engine = new Devboxd({ env: { ASAN_OPTIONS: asan } });
let client;
let upstream = null;
let seenHeaders = [];
let upstreamURL = '';
const CREDENTIAL = 'upstream-credential-9f8e7d';
const APP_KEY = 'app-key-5c4b3a';

before(async () => {
  await engine.start();
  client = engine.client();
  upstream = await startEverything();
  upstreamURL = upstream.url;
  seenHeaders = upstream.seen;
});

after(async () => {
  await upstream?.stop();
  await engine.cleanup();
});

describe('MCP configs API', () => {
  test('create, list, retrieve, update, delete', async () => {
    await client.secrets.create({ name: 'HDR_SECRET', value: 'hv' });
    const c = await client.mcpConfigs.create({
      name: 'docs-readonly', endpoint: 'https://mcp.example.com/mcp', allowed_tools: ['search_*'],
      description: 'docs', custom_headers: [{ name: 'X-Team', value: 'qa' }, { name: 'X-Key', secret: 'HDR_SECRET' }],
    });
    assert.match(c.id, /^mcp_/);
    assert.equal(c.name, 'docs-readonly');
    assert.deepEqual(c.auth_mechanism, { type: 'bearer' });
    assert.deepEqual(c.allowed_tools, ['search_*']);
    assert.equal(c.custom_headers[0].value, 'qa');
    assert.match(c.custom_headers[1].secret, /^sec_/, 'reads return the secret id');
    assert.equal(c.custom_headers[1].value, undefined);

    const other = await client.mcpConfigs.create({ name: 'other', endpoint: 'http://127.0.0.1:1/x',
      allowed_tools: ['*'], auth_mechanism: { type: 'header', key: 'X-Api-Key' } });
    const page = await client.mcpConfigs.list();
    assert.deepEqual(page.mcp_configs.map((x) => x.name).sort(), ['docs-readonly', 'other']);
    const byName = await client.mcpConfigs.list({ name: 'docs' });
    assert.deepEqual(byName.mcp_configs.map((x) => x.id), [c.id]);
    const p1 = await client.mcpConfigs.list({ limit: 1 });
    assert.equal(p1.has_more, true);
    const p2 = await client.mcpConfigs.list({ limit: 1, starting_after: p1.mcp_configs[0].id });
    assert.deepEqual([...p1.mcp_configs, ...p2.mcp_configs].map((x) => x.id).sort(), [c.id, other.id].sort());
    assert.equal(p2.has_more, false);

    assert.equal((await client.mcpConfigs.retrieve(c.id)).endpoint, 'https://mcp.example.com/mcp');
    const u = await client.mcpConfigs.update(c.id, { allowed_tools: ['search_*', 'get_*'], description: 'more' });
    assert.deepEqual(u.allowed_tools, ['search_*', 'get_*']);
    assert.equal(u.description, 'more');
    assert.equal(u.name, 'docs-readonly');
    assert.equal(u.custom_headers.length, 2, 'omitted custom_headers are kept');
    const cleared = await client.mcpConfigs.update(c.id, { custom_headers: [] });
    assert.deepEqual(cleared.custom_headers, []);
    assert.equal((await client.mcpConfigs.delete(other.id)).id, other.id);
    await rejectsWith(assert, client.mcpConfigs.retrieve(other.id), 404, /not found/);
    await rejectsWith(assert, client.mcpConfigs.delete(other.id), 404, /not found/);
  });

  test('bad input', async () => {
    const base = { name: 'bad', endpoint: 'https://x.example/mcp', allowed_tools: ['*'] };
    const cases = [
      [{ ...base, endpoint: 'ftp://x.example/mcp' }, /must be an http:\/\/ or https:\/\/ URL/],
      [{ ...base, endpoint: 'file:///etc/passwd' }, /http:\/\/ or https:\/\//],
      [{ ...base, endpoint: 'not a url' }, /http:\/\/ or https:\/\//],
      [{ name: 'bad', endpoint: 'https://x.example/mcp' }, /needs 'name', 'endpoint' and 'allowed_tools'/],
      [{ ...base, allowed_tools: [] }, /1 to 100 glob patterns/],
      [{ ...base, allowed_tools: [''] }, /non-empty strings/],
      [{ ...base, name: 'has space' }, /'name' "has space" is not valid/],
      [{ ...base, auth_mechanism: { type: 'oauth' } }, /bearer.*header.*basic/],
      [{ ...base, auth_mechanism: { type: 'header' } }, /needs 'key'/],
      [{ ...base, auth_mechanism: { type: 'bearer', key: 'X' } }, /only for type "header"/],
      [{ ...base, custom_headers: Array.from({ length: 9 }, (_, i) => ({ name: `X-${i}`, value: 'v' })) },
        /at most 8/],
      [{ ...base, custom_headers: [{ name: 'Authorization', value: 'v' }] }, /reserved/],
      [{ ...base, custom_headers: [{ name: 'Mcp-Session-Id', value: 'v' }] }, /reserved/],
      [{ ...base, custom_headers: [{ name: 'X-A', value: 'v', secret: 'HDR_SECRET' }] }, /exactly one of/],
      [{ ...base, custom_headers: [{ name: 'X-A', value: 'v' }, { name: 'x-a', value: 'w' }] }, /unique/],
      [{ ...base, custom_headers: [{ name: 'X-A', value: 'a\r\nInjected: 1' }] }, /one line/],
      [{ ...base, custom_headers: [{ name: 'X-A', secret: 'NO_SUCH' }] }, /not an account secret/],
      [{ ...base, custom_headers: [{ name: 'Bad Name', value: 'v' }] }, /not a valid HTTP header name/],
      [{ ...base, auth_mechanism: { type: 'header', key: 'X-K' }, custom_headers: [{ name: 'x-k', value: 'v' }] },
        /collides with auth_mechanism.key/],
    ];
    for (const [body, re] of cases) await rejectsWith(assert, client.mcpConfigs.create(body), 400, re);
    await rejectsWith(assert, client.mcpConfigs.create({ ...base, name: 'docs-readonly' }), 409, /already exists/);
    await rejectsWith(assert, client.mcpConfigs.retrieve('mcp_nope'), 404, /not found/);
    await rejectsWith(assert, client.mcpConfigs.update('mcp_nope', { description: 'x' }), 404, /not found/);
    // A path outside the API: not served (501), and never a file.
    const t = await engine.raw('GET', '/v1/mcp-configs/..%2F..%2Fapi-key');
    assert.ok(t.status === 404 || t.status === 501, `${t.status}`);
    assert.doesNotMatch(t.text, new RegExp(engine.key));
  });
});

// Runs inside a devbox: a raw Streamable HTTP client (python3, no packages).
const CLIENT_PY = readFileSync(path.join(sourceDir, 'tests', 'fixtures', 'mcp_hub_client.py'), 'utf8');
const FLOOD_PY = readFileSync(path.join(sourceDir, 'tests', 'fixtures', 'mcp_hub_flood.py'), 'utf8');

describe('MCP Hub inside a devbox', () => {
  let cfg;
  let box;
  const runClient = async (id, token = '') => {
    const r = await client.devboxes.executeAndAwaitCompletion(id, {
      command: `python3 /home/user/hub_client.py ${token}`,
    });
    assert.equal(r.exit_status, 0, r.stderr);
    return JSON.parse(r.stdout);
  };
  const writeClient = (id) => client.devboxes.writeFileContents(id,
    { file_path: '/home/user/hub_client.py', contents: CLIENT_PY });

  test('only allowed tools are listed and callable, with the real credential upstream', async () => {
    await client.secrets.create({ name: 'EVERY_TOKEN', value: CREDENTIAL });
    await client.secrets.create({ name: 'EVERY_APP_KEY', value: APP_KEY });
    cfg = await client.mcpConfigs.create({
      name: 'everything', endpoint: upstreamURL, allowed_tools: ['echo', 'get-s*'],
      custom_headers: [{ name: 'X-Team', value: 'qa' }, { name: 'X-App-Key', secret: 'EVERY_APP_KEY' }],
    });
    const before = (await client.devboxes.list()).devboxes.length;
    await rejectsWith(assert, client.devboxes.create({
      mcp: { EVERY_MCP: { mcp_config: cfg.id, secret: 'NO_SUCH_SECRET' } },
    }), 400, /mcp.EVERY_MCP.secret "NO_SUCH_SECRET" is not an account secret/);
    await rejectsWith(assert, client.devboxes.create({
      mcp: { EVERY_MCP: { mcp_config: 'mcp_missing', secret: 'EVERY_TOKEN' } },
    }), 400, /is not an MCP config id or name/);
    await rejectsWith(assert, client.devboxes.create({ mcp: { RL_MCP_URL: { mcp_config: cfg.id, secret: 'EVERY_TOKEN' } } }),
      400, /not RL_MCP_URL/);
    assert.equal((await client.devboxes.list()).devboxes.length, before, 'nothing was created');

    // By name, as the multi-tenant form of the docs.
    box = await client.devboxes.createAndAwaitRunning({
      mcp: { EVERY_MCP: { mcp_config: 'everything', secret: 'EVERY_TOKEN' } },
    });
    const env = await client.devboxes.executeAndAwaitCompletion(box.id, {
      command: 'echo "$RL_MCP_URL"; printf %s "$EVERY_MCP" | wc -c; env | grep -c -e upstream-credential -e app-key- || true',
    });
    assert.equal(env.stdout, 'http://127.0.0.1:14/mcp\n64\n0\n', 'URL, a 64-char token, no credential in the devbox');
    await writeClient(box.id);
    const out = await runClient(box.id);

    assert.equal(out.init.status, 200, JSON.stringify(out.init));
    assert.equal(out.init.msgs[0].result.serverInfo.name.length > 0, true);
    assert.equal(out.initialized.status, 202);
    const names = out.list.msgs.find((m) => m.id === 2).result.tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['echo', 'get-structured-content', 'get-sum']);
    const echo = out.echo.msgs.find((m) => m.id === 3);
    assert.match(JSON.stringify(echo.result.content), /hi hub/);
    const denied = out.denied.msgs.find((m) => m.id === 4);
    assert.equal(denied.error.code, -32602);
    assert.match(denied.error.message, /tool "get-env" is not allowed by MCP config everything/);

    // Upstream saw the credential and the custom headers, never the hub token.
    assert.ok(seenHeaders.length >= 4, `${seenHeaders.length} upstream requests`);
    for (const { headers } of seenHeaders) {
      assert.equal(headers.authorization, `Bearer ${CREDENTIAL}`);
      assert.equal(headers['x-team'], 'qa');
      assert.equal(headers['x-app-key'], APP_KEY);
    }
    assert.ok(!seenHeaders.some((s) => s.method === 'POST' && JSON.stringify(s).includes('get-env')),
      'the refused call never reached the upstream');
    assert.doesNotMatch(engine.stderr, new RegExp(`${CREDENTIAL}|${APP_KEY}`));
  });

  test('wrong or missing token, other devboxes and the host get nothing', async () => {
    let out = await runClient(box.id, 'not-the-token');
    assert.equal(out.init.status, 401);
    assert.match(out.init.body, /unknown MCP Hub token/);
    out = await runClient(box.id, '""');
    assert.equal(out.init.status, 401);

    const token = (await client.devboxes.executeAndAwaitCompletion(box.id, { command: 'printf %s "$EVERY_MCP"' })).stdout;
    const plain = await client.devboxes.createAndAwaitRunning({ name: 'no-mcp' });
    await writeClient(plain.id);
    out = await runClient(plain.id, token);
    assert.equal(out.init.status, 0, 'no listener in a devbox without MCP servers');
    assert.match(out.init.error, /refused/i);

    const second = await client.devboxes.createAndAwaitRunning({
      mcp: { EVERY_MCP: { mcp_config: cfg.id, secret: 'EVERY_TOKEN' } },
    });
    await writeClient(second.id);
    out = await runClient(second.id, token);
    assert.equal(out.init.status, 401, 'a token works only in its own devbox');
    out = await runClient(second.id);
    assert.equal(out.init.status, 200, 'its own token works');

    // Nothing listens on the host side for the hub.
    const hostTry = await fetch('http://127.0.0.1:14/mcp', { method: 'POST' }).then(() => 'answered', (e) => 'refused');
    assert.equal(hostTry, 'refused');
    await client.devboxes.shutdown(plain.id);
    await client.devboxes.shutdown(second.id);
  });

  // Port 14 used to be reachable through app tunnels like any other port:
  // anyone given a preview URL (and a token that leaked from the devbox)
  // could use the hub, which adds the real upstream credential. No tunnel
  // reaches it now, whatever its auth mode and token.
  test('no tunnel reaches the hub on port 14', async () => {
    const token = (await client.devboxes.executeAndAwaitCompletion(box.id, { command: 'printf %s "$EVERY_MCP"' })).stdout;
    const pid = readFileSync(path.join(engine.stateDir, 'devboxd.pid'), 'utf8');
    const tport = Number(/^tunnel_port (\d+)$/m.exec(pid)[1]);
    const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
      protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'tunnel', version: '1' } } });
    const viaTunnel = (port, key, headers) => new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: tport, method: 'POST', path: '/mcp', agent: false,
        headers: { host: `${port}-${key}.localhost:${tport}`, 'content-type': 'application/json',
          accept: 'application/json, text/event-stream', ...headers } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => { text += d; });
        res.on('end', () => {
          let json = null;
          try { json = JSON.parse(text); } catch { /* not JSON */ }
          resolve({ status: res.statusCode, text, json });
        });
      });
      req.setTimeout(30000, () => req.destroy(new Error('no answer from the tunnel listener')));
      req.on('error', reject);
      req.end(init);
    });

    const open = await client.devboxes.enableTunnel(box.id, { auth_mode: 'open' });
    try {
      const r = await viaTunnel(14, open.tunnel_key, { authorization: `Bearer ${token}` });
      assert.equal(r.status, 404, r.text.slice(0, 300));
      assert.match(r.json.message, /port 14 is the devbox's MCP Hub/);
      // The same key still routes other ports (nothing listens on 8080: 502).
      const other = await viaTunnel(8080, open.tunnel_key, {});
      assert.equal(other.status, 502, other.text);
    } finally {
      await client.devboxes.removeTunnel(box.id);
    }
    const authd = await client.devboxes.enableTunnel(box.id, { auth_mode: 'authenticated' });
    try {
      const r = await viaTunnel(14, authd.tunnel_key, {
        'x-runloop-tunnel-authorization': `Bearer ${authd.auth_token}`, authorization: `Bearer ${token}` });
      assert.equal(r.status, 404, r.text.slice(0, 300));
      assert.match(r.json.message, /port 14 is the devbox's MCP Hub/);
      const bare = await viaTunnel(14, authd.tunnel_key, { authorization: `Bearer ${authd.auth_token}` });
      assert.equal(bare.status, 404, bare.text.slice(0, 300));
    } finally {
      await client.devboxes.removeTunnel(box.id);
    }
  });

  // Any process in a devbox reaches the hub. It used to buffer a 4 MiB body
  // before it looked at the token, on a thread per connection, charged to
  // no devbox: a tokenless flood grew devboxd by hundreds of MiB and
  // threads. Now the token and the devbox's share are checked on the
  // headers, before any body byte is read.
  test('a flood from inside the devbox is refused at once and devboxd stays bounded', async () => {
    const status = (pid) => {
      const t = readFileSync(`/proc/${pid}/status`, 'utf8');
      return { rss: Number(/^VmRSS:\s+(\d+)/m.exec(t)[1]), threads: Number(/^Threads:\s+(\d+)/m.exec(t)[1]) };
    };
    const pid = engine.proc.pid;
    await client.devboxes.writeFileContents(box.id, { file_path: '/home/user/hub_flood.py', contents: FLOOD_PY });
    const base = status(pid);
    let peak = { ...base };
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const s = status(pid);
        peak = { rss: Math.max(peak.rss, s.rss), threads: Math.max(peak.threads, s.threads) };
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    let r;
    try {
      r = await client.devboxes.executeAndAwaitCompletion(box.id,
        { command: 'python3 /home/user/hub_flood.py' });
    } finally {
      sampling = false;
      await sampler;
    }
    assert.equal(r.exit_status, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    if (process.env.HUB_FLOOD_DEBUG) console.log(JSON.stringify({ base, peak, flood: out.flood.slice(0, 3), seconds: out.flood_seconds }));
    assert.equal(out.held_answered_early, 0, 'requests with the token wait for their bodies');
    // The token holder's share: 8 requests at once.
    for (const x of out.token_over) assert.match(x, /^status:429 .*serves 8 requests at once/);
    assert.match(out.too_large, /^status:413 .*request body over 4 MiB/);
    // No token: answered 401 before any body byte (or, past the devbox's
    // 16 connections, closed at once); never waiting for the body.
    assert.equal(out.flood.length, 192);
    assert.deepEqual(out.flood.filter((x) => !/^status:401 |^closed$/.test(x)), [], 'every tokenless request is refused at once');
    assert.ok(out.flood.filter((x) => x.startsWith('status:401 ')).length >= 96,
      `most are answered: ${JSON.stringify(out.flood.slice(0, 5))}`);
    assert.match(out.flood.find((x) => x.startsWith('status:401')), /unknown MCP Hub token/);
    assert.deepEqual(out.held, Array(8).fill(400), 'the held requests were read and answered');
    // Generous bounds: the 8 held bodies (32 MiB) and 16 connection threads.
    const grewMiB = (peak.rss - base.rss) / 1024;
    assert.ok(grewMiB < 80, `devboxd RSS grew ${grewMiB.toFixed(0)} MiB (from ${base.rss} kB)`);
    assert.ok(peak.threads - base.threads <= 24, `devboxd threads ${base.threads} -> ${peak.threads}`);
    // The token still works.
    const ok = await runClient(box.id);
    assert.equal(ok.init.status, 200, JSON.stringify(ok.init));
  });

  test('deleting the config and secret keeps a created devbox working, across suspend/resume', async () => {
    await client.mcpConfigs.delete(cfg.id);
    await client.secrets.delete('EVERY_TOKEN');
    await client.devboxes.suspend(box.id);
    await client.devboxes.awaitSuspended(box.id);
    await client.devboxes.resume(box.id);
    await client.devboxes.awaitRunning(box.id);
    const out = await runClient(box.id);
    assert.equal(out.init.status, 200, JSON.stringify(out.init));
    const names = out.list.msgs.find((m) => m.id === 2).result.tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['echo', 'get-structured-content', 'get-sum']);
    // The suspended-and-resumed devbox's record still holds its hub token and
    // the upstream credential (a resume needs them)...
    const record = path.join(engine.stateDir, 'devboxes', box.id, 'devbox.json');
    const token = JSON.parse(readFileSync(record, 'utf8')).spec._secret_env.EVERY_MCP;
    assert.match(token, /^[0-9a-f]{64}$/i);
    assert.ok(readFileSync(record, 'utf8').includes(CREDENTIAL));
    await client.devboxes.shutdown(box.id);
    await waitFor(async () => (await client.devboxes.retrieve(box.id)).status === 'shutdown',
      { timeoutMs: 60000, what: 'shutdown' });
    // ...and once every devbox ended, no record holds a token and no file
    // of devboxd's a credential (EVERY_APP_KEY is still an account secret).
    const boxes = (await client.devboxes.list({ limit: 100 })).devboxes;
    assert.ok(boxes.every((b) => b.status === 'shutdown'), boxes.map((b) => b.status).join());
    assert.deepEqual(filesContaining(engine.stateDir, [CREDENTIAL, APP_KEY], { skip: ['secrets'] }), []);
    assert.deepEqual(filesContaining(engine.stateDir, [CREDENTIAL]), []);
    assert.deepEqual(filesContaining(path.join(engine.stateDir, 'devboxes'), [token])
      .filter((f) => f.endsWith('devbox.json')), []);
  });
});
