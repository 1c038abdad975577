// devboxd's command line and listeners: unix socket (0600, no key),
// --api-key-file, loopback-only TCP, bad options.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { Devboxd, devboxdBin, waitFor } from './devboxd.mjs';

const dirs = [];
const engines = [];
after(async () => {
  for (const e of engines) await e.cleanup();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => { const d = mkdtempSync(path.join(tmpdir(), 'devboxd-cli-')); dirs.push(d); return d; };

function unixGet(socketPath, p, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, path: p, method: 'GET', headers }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('unix socket: created 0600, no key needed; TCP still needs the key from --api-key-file', async () => {
  const dir = tempDir();
  const keyFile = path.join(dir, 'given-key');
  writeFileSync(keyFile, 'ak_given_key_123\n');
  const sock = path.join(dir, 'd.sock');
  const e = new Devboxd({ extraArgs: ['--listen', `unix:${sock}`, '--api-key-file', keyFile] });
  engines.push(e);
  await e.start();
  assert.equal(statSync(sock).mode & 0o777, 0o600);
  const r = await unixGet(sock, '/v1/devboxes');
  assert.equal(r.status, 200);
  assert.deepEqual(JSON.parse(r.body).devboxes, []);
  // The TCP listener takes the given key, not a generated one.
  const ok = await fetch(`${e.baseURL}/v1/devboxes`, { headers: { authorization: 'Bearer ak_given_key_123' } });
  assert.equal(ok.status, 200);
  const bad = await fetch(`${e.baseURL}/v1/devboxes`);
  assert.equal(bad.status, 401);
  assert.ok(!e.stderr.includes('ak_given_key_123'), 'the key appeared in the log');
});

test('the generated key file is 0600 and stable across restarts', async () => {
  const e = new Devboxd();
  engines.push(e);
  await e.start();
  const key = e.key;
  assert.match(key, /^ak_local_[0-9a-f]{48}$/);
  assert.equal(statSync(path.join(e.stateDir, 'api-key')).mode & 0o777, 0o600);
  assert.equal(statSync(e.stateDir).mode & 0o777, 0o700);
  await e.stop();
  await e.start();
  assert.equal(e.key, key);
});

test('non-loopback listen addresses are refused unless allowed; bad options explain themselves', () => {
  const dir = tempDir();
  const run = (args) => spawnSync(devboxdBin, args, { encoding: 'utf8', timeout: 30000 });
  let r = run(['--state-dir', dir, '--listen', '0.0.0.0:0']);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /not a loopback address.*--allow-non-loopback/);
  r = run(['--listen', '127.0.0.1:0']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--state-dir DIR is required/);
  r = run(['--state-dir', dir, '--listen', 'nonsense']);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /expected unix:PATH or HOST:PORT/);
  for (const bad of ['127.0.0.1:http', '[::1]:', ':8080']) {
    r = run(['--state-dir', dir, '--listen', bad]);
    assert.notEqual(r.status, 0, `--listen ${bad} was accepted`);
    assert.match(r.stderr, /expected unix:PATH or HOST:PORT/);
  }
  r = run(['--state-dir', dir, '--listen', `${'h'.repeat(300)}:0`]);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /host name too long/);
  r = run(['--state-dir', dir, '--api-key-file', path.join(dir, 'missing')]);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /cannot read an API key/);
  r = run(['--state-dir', dir, '--bogus']);
  assert.equal(r.status, 2);
});

// Settings are read once at start (devboxd/config.c): --help lists each
// variable with its default and range, and a bad one stops devboxd before
// it touches the state dir, naming the variable, the value and the range.
test('--help lists every setting; a bad one is refused at start, naming it, its value and its range', () => {
  const dir = tempDir();
  const state = path.join(dir, 'state');
  const clean = Object.fromEntries(Object.entries(process.env)
    .filter(([k]) => !/^(RLMCP_|DEVBOXD_PTY_)/.test(k) || /^RLMCP_(BUILD|SOURCE)_DIR$/.test(k)));
  const run = (env, args = ['--state-dir', state]) =>
    spawnSync(devboxdBin, args, { env: { ...clean, ...env }, encoding: 'utf8', timeout: 30000 });
  const help = run({ RLMCP_WARM_POOL: 'many' }, ['--help']);
  assert.equal(help.status, 0, help.stderr); // --help whatever the environment holds
  const names = [...help.stdout.matchAll(/^ {2}((?:RLMCP|DEVBOXD)_[A-Z_]+)\n/gm)].map((m) => m[1]);
  for (const n of ['RLMCP_WARM_POOL', 'RLMCP_RECORD_RETENTION_DAYS', 'RLMCP_MAX_DEVBOXES', 'RLMCP_EVICTION_NOTICE_S',
    'RLMCP_CODE_MOUNT_TIMEOUT_S', 'DEVBOXD_PTY_IDLE_TTL', 'RLMCP_UID_CLAIMS_DIR', 'RLMCP_DEVBOX_DISK']) {
    assert.ok(names.includes(n), `--help does not list ${n}`);
  }
  assert.ok(names.length >= 26, `--help lists ${names.length} variables`);
  assert.match(help.stdout, /RLMCP_WARM_POOL\n.*\n {6}default 1; a whole number from 0 to 8\n/);
  for (const [env, re] of [
    [{ RLMCP_WARM_POOL: '9' }, /^devboxd: RLMCP_WARM_POOL="9" is not a whole number from 0 to 8: set one, or unset it for the default \(1\)$/m],
    [{ RLMCP_EVICTION_NOTICE_S: 'soon' }, /RLMCP_EVICTION_NOTICE_S="soon" is not a whole number from 0 to 172800/],
    [{ DEVBOXD_PTY_PING_TIMEOUT: '0' }, /DEVBOXD_PTY_PING_TIMEOUT="0" is not a whole number from 1 to 3600/],
    [{ RLMCP_CODE_MOUNT_TIMEOUT_S: '5s' }, /RLMCP_CODE_MOUNT_TIMEOUT_S="5s" is not a whole number from 1 to 86400/],
    [{ RLMCP_UID_CLAIMS_DIR: 'uids' }, /RLMCP_UID_CLAIMS_DIR="uids" is not an absolute path: .*default \(\/var\/lib\/devboxd\/uids\)/],
    [{ RLMCP_DEVBOX_DISK: 'zfs' }, /RLMCP_DEVBOX_DISK="zfs" is not one of loop, off/],
  ]) {
    const r = run(env);
    assert.equal(r.status, 2, `${JSON.stringify(env)} was accepted: ${r.stderr}`);
    assert.match(r.stderr, re);
    assert.throws(() => statSync(state), /ENOENT/, 'the state dir was created before the settings were checked');
  }
});

test('the default listener is DIR/devboxd.sock', async () => {
  const dir = tempDir();
  const { spawn } = await import('node:child_process');
  const p = spawn(devboxdBin, ['--state-dir', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((r) => p.once('exit', r));
  try {
    await waitFor(() => /listening on unix:/.test(err), { what: 'the default unix listener' });
    const r = await unixGet(path.join(dir, 'devboxd.sock'), '/v1/devboxes');
    assert.equal(r.status, 200);
  } finally {
    p.kill('SIGTERM');
    assert.equal(await exited, 0);
  }
});
