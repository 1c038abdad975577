// The isolation contract through devboxd's REST API with the official
// Runloop SDK: what a hostile command can reach when it arrives over HTTP.
// Needs root (devboxd does). Cleans up devboxd, its state dir and the
// planted secret in every case.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Devboxd, waitFor } from '../api/devboxd.mjs';

const engine = new Devboxd();
const secretPath = `/root/.rlmcp-secret-${randomBytes(6).toString('hex')}`;
const secret = `HOSTSECRET-${randomBytes(8).toString('hex')}`;
let client;
let boxA;

before(async () => {
  writeFileSync(secretPath, secret, { mode: 0o644 });
  await engine.start();
  client = engine.client();
  boxA = (await client.devboxes.createAndAwaitRunning({ name: 'iso-a' })).id;
});
after(async () => {
  rmSync(secretPath, { force: true });
  await engine.cleanup();
});

const run = async (id, command) =>
  client.devboxes.executeAndAwaitCompletion(id, { command });

test("devboxd's own port and the host loopback are unreachable from inside", async () => {
  // Sanity: the port answers from the host.
  const ping = await engine.raw('GET', '/v1/devboxes');
  assert.equal(ping.status, 200);
  const r = await run(boxA,
    `for h in 127.0.0.1 10.0.2.2 10.0.2.3 localhost; do ` +
    `timeout 5 bash -c "exec 3<>/dev/tcp/$h/${engine.port}" 2>/dev/null && echo CONNECTED-$h; done; ` +
    `ls -la ${engine.stateDir} 2>&1; echo DONE`);
  assert.match(r.stdout, /DONE/);
  assert.doesNotMatch(r.stdout, /CONNECTED/);
  assert.doesNotMatch(r.stdout, /api-key/);
});

// devboxd listens on its tunnel port inside every devbox (so tunnel URLs
// work there): that socket, and nothing else of the host's loopback, is
// reachable, and it forwards only what a tunnel key routes.
test('inside, the tunnel port is devboxd\'s tunnel logic only; other host loopback services stay out', async () => {
  const pid = readFileSync(path.join(engine.stateDir, 'devboxd.pid'), 'utf8');
  const tunnelPort = Number(/^tunnel_port (\d+)$/m.exec(pid)[1]);
  const svc = http.createServer((req, res) => res.end('HOST-LOOPBACK-SERVICE'));
  await new Promise((r) => svc.listen(0, '127.0.0.1', r));
  try {
    const port = svc.address().port;
    const r = await run(boxA,
      `for h in 127.0.0.1 10.0.2.2 10.0.2.3 localhost; do for p in ${port} ${engine.port}; do ` +
      `curl -s --max-time 5 http://$h:$p/ && echo CONNECTED-$h-$p; done; ` +
      `timeout 5 bash -c "exec 3<>/dev/tcp/$h/${tunnelPort}" 2>/dev/null && echo TUNNEL-$h; done; ` +
      `curl -s --max-time 5 http://127.0.0.1:${tunnelPort}/v1/devboxes; echo; ` +
      `curl -s --max-time 5 -H 'Host: 127.0.0.1:${port}' http://127.0.0.1:${tunnelPort}/; echo; echo DONE`);
    assert.match(r.stdout, /DONE/);
    assert.doesNotMatch(r.stdout, /CONNECTED|HOST-LOOPBACK-SERVICE/);
    // 127.0.0.1 and localhost reach devboxd's socket inside the devbox; the
    // host side of slirp (10.0.2.2) does not reach the host's listener.
    assert.match(r.stdout, /TUNNEL-127\.0\.0\.1/);
    assert.doesNotMatch(r.stdout, /TUNNEL-10\.0\.2/);
    // What it answers without a tunnel key: its own 400, nothing forwarded.
    assert.equal((r.stdout.match(/"code":"bad_request"/g) ?? []).length, 2, r.stdout);
  } finally {
    svc.close();
  }
});

test('a secret planted in the host home is not readable', async () => {
  const r = await run(boxA, `cat ${secretPath}; ls -a /root; grep -rs ${secret} /etc /home /tmp; echo DONE`);
  assert.match(r.stdout, /DONE/);
  assert.ok(!r.stdout.includes(secret) && !r.stderr.includes(secret));
  let text = null;
  try {
    text = await client.devboxes.readFileContents(boxA, { file_path: `../../../..${secretPath}` });
  } catch (e) {
    assert.ok([400, 403, 404].includes(e.status), `unexpected ${e.status}`);
  }
  assert.ok(text === null || !text.includes(secret));
});

test('a deny-all network policy leaves only lo', async () => {
  const b = await client.devboxes.createAndAwaitRunning({
    name: 'iso-nonet', launch_parameters: { network_policy_id: 'npol_local_deny_all' } });
  try {
    const r = await run(b.id, "ip -o link | awk '{print $2}'");
    assert.equal(r.stdout, 'lo:\n');
    // Nor devboxd's tunnel socket: no way to other devboxes' services.
    const pid = readFileSync(path.join(engine.stateDir, 'devboxd.pid'), 'utf8');
    const tunnelPort = Number(/^tunnel_port (\d+)$/m.exec(pid)[1]);
    const t = await run(b.id, `timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/${tunnelPort}" 2>/dev/null && echo TUNNEL; echo DONE`);
    assert.equal(t.stdout, 'DONE\n');
  } finally {
    await client.devboxes.shutdown(b.id);
  }
});

test('a memory bomb is OOM-killed alone: its devbox keeps running, the engine and others keep serving', async () => {
  const b = await client.devboxes.createAndAwaitRunning({
    name: 'iso-membomb', launch_parameters: { resource_size_request: 'X_SMALL' } });
  try {
    const r = await client.devboxes.executeAndAwaitCompletion(b.id, {
      command: "python3 -c 'a=[]\nwhile True: a.append(bytearray(16<<20))'" });
    assert.equal(r.exit_status, 137);
    assert.equal(r.ended_by, 'out_of_memory', JSON.stringify(r));
    // Longer than the engine's health tick (250 ms): a devbox failed by the
    // OOM would read failure by now.
    await new Promise((res) => setTimeout(res, 1500));
    const after = await run(b.id, 'echo survived');
    assert.equal(after.stdout, 'survived\n');
    const view = await client.devboxes.retrieve(b.id);
    assert.equal(view.status, 'running', JSON.stringify(view));
    const ok = await run(boxA, 'echo still-here');
    assert.equal(ok.stdout, 'still-here\n');
  } finally {
    await client.devboxes.shutdown(b.id);
  }
});
