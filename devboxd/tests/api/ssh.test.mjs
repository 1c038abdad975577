// SSH into a devbox: create_ssh_key with the official SDK, then Debian's
// OpenSSH client through `runloop-mcp ssh --proxy URL` (the SSH route of the
// tunnel listener, an sshd -i that devboxd starts inside the devbox per
// connection) and `runloop-mcp ssh DEVBOX -- COMMAND` end to end.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync, existsSync, statSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Devboxd, buildDir, waitFor } from './devboxd.mjs';

const runloopMcp = path.join(buildDir, 'bin', 'runloop-mcp');
const tmp = mkdtempSync(path.join(tmpdir(), 'devboxd-ssh-'));
// Also on the state dir's socket, where `runloop-mcp ssh` finds a local engine.
const engine = new Devboxd({ stateDir: path.join(tmp, 'state') });
let client;
let boxId;
let key; // DevboxCreateSSHKeyResponse

before(async () => {
  mkdirSync(engine.stateDir, { mode: 0o700 });
  engine.extraArgs = ['--listen', `unix:${path.join(engine.stateDir, 'devboxd.sock')}`];
  await engine.start();
  client = engine.client();
  await client.secrets.create({ name: 'SSH_TEST_SECRET', value: 's3cret value' });
  boxId = (await client.devboxes.createAndAwaitRunning({
    name: 'ssh',
    environment_variables: { GREETING: 'hello "quoted" \\ world #not-a-comment' },
    secrets: { TOKEN: 'SSH_TEST_SECRET' },
  })).id;
  key = await client.devboxes.createSSHKey(boxId);
});
after(async () => {
  await engine.cleanup();
  rmSync(tmp, { recursive: true, force: true });
});

function keyFile(name, pem) {
  const p = path.join(tmp, name);
  writeFileSync(p, pem, { mode: 0o600 });
  return p;
}

// Runs ssh with the key at keyPath through the route url; {status, stdout, stderr}.
function ssh(keyPath, url, command, { timeoutMs = 120000, tty = false, dest = `${key.ssh_user}@${boxId}` } = {}) {
  return new Promise((resolve) => {
    const p = spawn('ssh', [...(tty ? ['-tt'] : []), '-i', keyPath, '-F', '/dev/null',
      '-o', `ProxyCommand=${runloopMcp} ssh --proxy ${url}`,
      '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', 'BatchMode=yes',
      '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
      '-o', 'LogLevel=ERROR', '--', dest, ...command],
    { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    const t = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('exit', (code, sig) => { clearTimeout(t); resolve({ status: code ?? sig, stdout, stderr }); });
  });
}

// The TCP sockets devboxd listens on (its fds that are LISTEN sockets in
// /proc/net/tcp{,6}): other processes of a shared machine do not count.
function devboxdListeners() {
  const pid = engine.proc.pid;
  const inodes = new Set();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let t = '';
    try { t = readlinkSync(`/proc/${pid}/fd/${fd}`); } catch { continue; }
    const m = /^socket:\[(\d+)\]$/.exec(t);
    if (m) inodes.add(m[1]);
  }
  const out = new Set();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!existsSync(f)) continue;
    for (const line of readFileSync(f, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && cols[3] === '0A' && inodes.has(cols[9])) out.add(cols[1]);
    }
  }
  return out;
}

test('create_ssh_key: an ed25519 key for the devbox user and the SSH route; stable', async () => {
  assert.equal(key.id, boxId);
  assert.equal(key.ssh_user, 'user');
  assert.match(key.ssh_private_key, /^-----BEGIN OPENSSH PRIVATE KEY-----\n[\s\S]+-----END OPENSSH PRIVATE KEY-----\n$/);
  assert.match(key.url, /^http:\/\/127\.0\.0\.1:\d+\/tunnel\/22-[a-z0-9]{24}\/$/);
  const again = await client.devboxes.createSSHKey(boxId);
  assert.deepEqual(again, key);
});

test('ssh with the key runs a command as the devbox user; no host port is opened', async () => {
  const before = devboxdListeners();
  assert.ok(before.size > 0, 'devboxd listens on none: the check would see nothing');
  const r = await ssh(keyFile('good', key.ssh_private_key), key.url, ['id', '-un']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'user');
  // A command's exit status and stdin-less output come through.
  const r2 = await ssh(keyFile('good', key.ssh_private_key), key.url, ['sh', '-c', "'echo $HOME; exit 7'"]);
  assert.equal(r2.status, 7, r2.stderr);
  assert.equal(r2.stdout.trim(), '/home/user');
  const added = [...devboxdListeners()].filter((l) => !before.has(l));
  assert.deepEqual(added, [], 'a TCP port was opened on the host');
  // Nor does anything listen for SSH inside the devbox: sshd ran per connection.
  const inside = await client.devboxes.executeSync(boxId, { command: 'cat /proc/net/tcp /proc/net/tcp6 2>/dev/null' });
  const ports = inside.stdout.split('\n').slice(1).map((l) => l.trim().split(/\s+/))
    .filter((c) => c[3] === '0A').map((c) => parseInt(c[1].split(':')[1], 16));
  assert.ok(!ports.includes(22), `port 22 listens inside: ${ports}`);
});

test('sessions get the devbox environment_variables and secrets, as executions do', async () => {
  const r = await ssh(keyFile('good', key.ssh_private_key), key.url,
    ['sh', '-c', "'printf \"%s|%s\" \"$GREETING\" \"$TOKEN\"'"]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'hello "quoted" \\ world #not-a-comment|s3cret value');
});

test('scp (sftp) copies a file in', async () => {
  const src = path.join(tmp, 'payload.txt');
  writeFileSync(src, 'copied over ssh\n');
  const p = spawnSync('scp', ['-q', '-i', keyFile('good', key.ssh_private_key), '-F', '/dev/null',
    '-o', `ProxyCommand=${runloopMcp} ssh --proxy ${key.url}`, '-o', 'IdentitiesOnly=yes',
    '-o', 'IdentityAgent=none', '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no',
    '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR',
    src, `user@${boxId}:/home/user/payload.txt`], { encoding: 'utf8', timeout: 120000 });
  assert.equal(p.status, 0, p.stderr);
  const got = await client.devboxes.readFileContents(boxId, { file_path: '/home/user/payload.txt' });
  assert.equal(got, 'copied over ssh\n');
});

test('a terminal: ssh -tt gets a pseudo-terminal owned by the user', async () => {
  // sshd hands the terminal to the user and group tty: it gives up (and
  // the session ends) when the devbox's devpts cannot do that.
  const r = await ssh(keyFile('good', key.ssh_private_key), key.url,
    ['sh', '-c', "'tty; stat -c %U:%G:%a $(tty)'"], { tty: true });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^\/dev\/pts\/\d+\r?\nuser:tty:620\r?\n$/);
});

test('a wrong key is refused', async () => {
  const other = path.join(tmp, 'other');
  const g = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', other]);
  assert.equal(g.status, 0, String(g.stderr));
  const r = await ssh(other, key.url, ['id', '-un']);
  assert.equal(r.status, 255);
  assert.match(r.stderr, /Permission denied \(publickey\)/);
  assert.equal(r.stdout, '');
});

test('the route needs the upgrade, and an unknown route key is refused', async () => {
  const plain = await fetch(key.url);
  assert.equal(plain.status, 400);
  assert.match((await plain.json()).message, /SSH route/);
  const bogus = key.url.replace(/22-[a-z0-9]+/, '22-aaaaaaaaaaaaaaaaaaaaaaaa');
  const r = await ssh(keyFile('good', key.ssh_private_key), bogus, ['true']);
  assert.equal(r.status, 255);
  assert.match(r.stderr, /refused the SSH route: .*no tunnel has key/);
});

// Opens the SSH route at url with the upgrade; resolves {sock, head} once the
// answer's head (101, or an error with its body) has arrived.
function openRoute(url) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname, () => {
      sock.write(`GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: Upgrade\r\nUpgrade: ssh\r\n\r\n`);
    });
    let got = '';
    const done = () => resolve({ sock, head: got });
    sock.on('data', (d) => {
      got += d.toString('latin1');
      // A 101 is followed by sshd's banner; an error by its body, then close.
      if (got.startsWith('HTTP/1.1 101') && got.includes('SSH-2.0-')) done();
    });
    sock.on('end', done);
    sock.on('error', reject);
  });
}

test('the SSH route holds at most 8 connections that have not logged in; the 9th gets 429', async () => {
  const open = [];
  try {
    for (let i = 0; i < 8; i++) {
      const r = await openRoute(key.url);
      open.push(r.sock);
      assert.match(r.head, /^HTTP\/1\.1 101 /, `connection ${i + 1}: ${r.head}`);
    }
    const r9 = await openRoute(key.url);
    r9.sock.destroy();
    assert.match(r9.head, /^HTTP\/1\.1 429 /);
    assert.match(r9.head, /already has 8 SSH connections that have not logged in yet .*retry/);
  } finally {
    for (const s of open) s.destroy();
  }
  // Once they are gone, ssh gets in again.
  await waitFor(async () => (await ssh(keyFile('good', key.ssh_private_key), key.url, ['true'])).status === 0,
    { timeoutMs: 60000, stepMs: 500, what: 'ssh to work again after the idle connections closed' });
});

test('runloop-mcp ssh DEVBOX -- COMMAND: the key from the engine, then ssh', async () => {
  const env = { ...process.env, RLMCP_STATE_DIR: engine.stateDir, TMPDIR: tmp };
  delete env.RUNLOOP_API_KEY;
  delete env.RUNLOOP_BASE_URL;
  const r = spawnSync(runloopMcp, ['ssh', boxId, '--', 'id', '-un'], { env, encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'user');
  // The key file is gone once ssh ended.
  assert.deepEqual(spawnSync('sh', ['-c', `ls ${tmp} | grep runloop-mcp-ssh || true`], { encoding: 'utf8' }).stdout, '');
  const bad = spawnSync(runloopMcp, ['ssh', 'dbx_nosuchbox', '--', 'true'], { env, encoding: 'utf8', timeout: 60000 });
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /create_ssh_key for dbx_nosuchbox failed \(HTTP 404\)/);
});

test('runloop-mcp ssh: SIGTERM or SIGHUP mid-session ends ssh and removes the key', async () => {
  const env = { ...process.env, RLMCP_STATE_DIR: engine.stateDir, TMPDIR: tmp };
  delete env.RUNLOOP_API_KEY;
  delete env.RUNLOOP_BASE_URL;
  const keyDirs = () => readdirSync(tmp).filter((n) => n.startsWith('runloop-mcp-ssh-'));
  for (const sig of ['SIGTERM', 'SIGHUP']) {
    const p = spawn(runloopMcp, ['ssh', boxId, '--', 'sh', '-c', "'echo started; sleep 60'"],
      { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.resume();
    const exited = new Promise((resolve) => p.on('exit', (code, s) => resolve({ code, s })));
    await waitFor(() => stdout.includes('started'), { timeoutMs: 120000, what: 'the session to start' });
    // While the session runs the key sits alone in a private directory.
    const dirs = keyDirs();
    assert.equal(dirs.length, 1, `one key directory: ${dirs}`);
    assert.equal(statSync(path.join(tmp, dirs[0])).mode & 0o777, 0o700);
    p.kill(sig);
    const t0 = Date.now();
    const r = await exited;
    // The CLI outlived ssh (it forwarded the signal) and removed the key.
    assert.equal(r.s, null, `${sig}: the CLI cleaned up and exited, not killed`);
    assert.notEqual(r.code, 0);
    assert.ok(Date.now() - t0 < 50000, `${sig}: ssh ended well before the remote sleep`);
    assert.deepEqual(keyDirs(), [], `${sig}: the key directory is gone`);
  }
});

test('runloop-mcp ssh: usage errors say what to give', () => {
  const none = spawnSync(runloopMcp, ['ssh'], { encoding: 'utf8' });
  assert.equal(none.status, 2);
  assert.match(none.stderr, /which devbox\? give its id/);
  const badUrl = spawnSync(runloopMcp, ['ssh', '--proxy', 'ssh.example:22'], { encoding: 'utf8' });
  assert.equal(badUrl.status, 2);
  assert.match(badUrl.stderr, /'ssh\.example:22' is not an SSH route URL/);
});

test('an image without an SSH server: create_ssh_key says what to install', async () => {
  // The browser image has no openssh-server.
  const other = new Devboxd({ env: { RLMCP_DEVBOX_IMAGE: 'browser' } });
  await other.start();
  try {
    const c = other.client();
    const id = (await c.devboxes.createAndAwaitRunning({ name: 'no-sshd' })).id;
    await assert.rejects(c.devboxes.createSSHKey(id),
      (e) => e.status === 400 && /has no OpenSSH server .*install openssh-server/.test(e.message));
    await c.devboxes.shutdown(id);
  } finally {
    await other.cleanup();
  }
});

test('a devbox of another user (user_parameters): ssh_user is that user, root included', async () => {
  for (const up of [{ username: 'root', uid: 0 }, { username: 'dev', uid: 1234 }]) {
    const id = (await client.devboxes.createAndAwaitRunning({
      name: `ssh-${up.username}`, launch_parameters: { user_parameters: up },
    })).id;
    try {
      const k = await client.devboxes.createSSHKey(id);
      assert.equal(k.ssh_user, up.username);
      const r = await ssh(keyFile(`k-${up.username}`, k.ssh_private_key), k.url,
        ['sh', '-c', "'id -un; id -u; echo $HOME'"], { dest: `${k.ssh_user}@${id}` });
      assert.equal(r.status, 0, r.stderr);
      const [name, uid] = r.stdout.trim().split('\n');
      assert.equal(name, up.username);
      assert.equal(uid, String(up.uid));
      // Only the devbox's user gets in.
      const other = await ssh(keyFile(`k-${up.username}`, k.ssh_private_key), k.url, ['true'],
        { dest: `${up.username === 'root' ? 'user' : 'root'}@${id}` });
      assert.equal(other.status, 255);
      assert.match(other.stderr, /Permission denied/);
    } finally {
      await client.devboxes.shutdown(id);
    }
  }
});

test('suspend: the route refuses while suspended; after resume the same key works', async () => {
  await client.devboxes.suspend(boxId);
  await waitFor(async () => (await client.devboxes.retrieve(boxId)).status === 'suspended',
    { timeoutMs: 60000, what: 'suspended' });
  const r = await ssh(keyFile('good', key.ssh_private_key), key.url, ['true']);
  assert.equal(r.status, 255);
  assert.match(r.stderr, /refused the SSH route: .*suspended/);
  await client.devboxes.resume(boxId);
  await waitFor(async () => (await client.devboxes.retrieve(boxId)).status === 'running',
    { timeoutMs: 60000, what: 'running' });
  assert.deepEqual(await client.devboxes.createSSHKey(boxId), key);
  const ok = await ssh(keyFile('good', key.ssh_private_key), key.url, ['id', '-un']);
  assert.equal(ok.status, 0, ok.stderr);
  assert.equal(ok.stdout.trim(), 'user');
});

test('after shutdown the key no longer works, and create_ssh_key says why', async () => {
  await client.devboxes.shutdown(boxId);
  await waitFor(async () => (await client.devboxes.retrieve(boxId)).status === 'shutdown',
    { timeoutMs: 60000, what: 'shutdown' });
  const r = await ssh(keyFile('good', key.ssh_private_key), key.url, ['id', '-un']);
  assert.equal(r.status, 255);
  assert.match(r.stderr, /refused the SSH route/);
  await assert.rejects(client.devboxes.createSSHKey(boxId), (e) => e.status === 400 && /needs a running devbox/.test(e.message));
});
