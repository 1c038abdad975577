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

// The seccomp allowlist (docs/sandbox.md): vsock, which is not
// network-namespaced, fails at socket() with EAFNOSUPPORT (no connection is
// attempted), as other families a devbox has no use for; namespaces are
// refused; what a user relies on still runs.
test('vsock and other socket families fail at socket(); ordinary workloads still run', async () => {
  const r = await run(boxA, `python3 - <<'EOF'
import ctypes, errno, socket
libc = ctypes.CDLL(None, use_errno=True)
for name, fam, typ in (('vsock', 40, socket.SOCK_STREAM), ('vsock-dgram', 40, socket.SOCK_DGRAM),
                       ('packet', 17, socket.SOCK_DGRAM), ('bluetooth', 31, socket.SOCK_STREAM),
                       ('unix', 1, socket.SOCK_STREAM), ('inet6', 10, socket.SOCK_STREAM)):
    try:
        socket.socket(fam, typ).close(); print(name, 'OK')
    except OSError as e:
        print(name, errno.errorcode[e.errno])
r = libc.unshare(0x10000000)
print('unshare-user', 'OK' if r == 0 else errno.errorcode[ctypes.get_errno()])
EOF`);
  for (const line of ['vsock EAFNOSUPPORT', 'vsock-dgram EAFNOSUPPORT', 'packet EAFNOSUPPORT',
    'bluetooth EAFNOSUPPORT', 'unix OK', 'inet6 OK', 'unshare-user EPERM'])
    assert.ok(r.stdout.includes(`${line}\n`), `${line}: ${r.stdout} ${r.stderr}`);
  const w = await run(boxA, [
    'set -e',
    'ip -o addr show lo | grep -q 127.0.0.1 && echo IP',
    'ss -tln >/dev/null && echo SS',
    'sudo -n true && echo SUDO',
    'sudo -n apt-get check >/dev/null 2>&1 && echo APT',
    'python3 -m venv /tmp/venv && /tmp/venv/bin/pip --version >/dev/null && echo VENV',
    'cd /tmp && git init -q g && cd g && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m x && echo GIT',
    'python3 -c "import multiprocessing as m, threading; p = m.Pool(2); print(\'POOL\', sum(p.map(abs, [-1, -2])))"',
    'tar czf /tmp/t.tgz -C /tmp g && echo TAR',
  ].join('\n'));
  assert.equal(w.exit_status, 0, `${w.stdout} ${w.stderr}`);
  for (const word of ['IP', 'SS', 'SUDO', 'APT', 'VENV', 'GIT', 'POOL 3', 'TAR'])
    assert.ok(w.stdout.split('\n').includes(word), `${word}: ${w.stdout}`);
});

// What a devbox sees of the host: no path of devboxd's state dir behind its
// stdout/stderr, no host ids in its tmpfs mounts' options, its own memory
// limit in /proc/meminfo.
test("a command's stdout and stderr name no host path", async () => {
  const r = await run(boxA, 'readlink /proc/self/fd/1; readlink /proc/self/fd/2 >&2');
  assert.match(r.stdout, /^\/exn_[A-Za-z0-9]+\.stdout\n$/);
  assert.match(r.stderr, /^\/exn_[A-Za-z0-9]+\.stderr\n$/);
  assert.ok(!r.stdout.includes(engine.stateDir) && !r.stderr.includes(engine.stateDir));
});

test('/dev, /dev/shm, /run and /run/devbox show no host uid or gid in their mount options', async () => {
  const r = await run(boxA, "awk '$5 ~ /^\\/(dev|dev\\/shm|run|run\\/devbox)$/' /proc/self/mountinfo");
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.length, 4, r.stdout);
  for (const l of lines) assert.doesNotMatch(l, /[ug]id=\d/, l);
});

test("the host's kernel command line is not readable", async () => {
  const host = readFileSync('/proc/cmdline', 'utf8').trim();
  const r = await run(boxA, 'echo "[$(cat /proc/cmdline 2>&1)]"');
  assert.equal(r.stdout, '[]\n');
  assert.ok(host.length > 0 && !r.stdout.includes(host));
});

test("/proc/meminfo shows the devbox's memory limit and its own usage", async () => {
  const host = Number(/MemTotal:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))[1]);
  const b = await client.devboxes.createAndAwaitRunning({
    name: 'iso-meminfo', launch_parameters: { resource_size_request: 'X_SMALL' } });
  try {
    // 300 MiB held while the engine writes the figures again (each second).
    const r = await run(b.id, `python3 -c "
import re, time
x = bytearray(300 << 20)
for i in range(len(x) // 4096): x[i * 4096] = 1
def avail(): return int(re.search(r'MemAvailable:\\\\s+(\\\\d+)', open('/proc/meminfo').read()).group(1))
deadline = time.time() + 20
while avail() > 1048576 - 250 * 1024 and time.time() < deadline: time.sleep(0.2)
print(open('/proc/meminfo').read())"; free -k | awk '/^Mem:/ {print "FREE", $2}'`);
    const total = Number(/MemTotal:\s+(\d+)/.exec(r.stdout)[1]);
    const availKb = Number(/MemAvailable:\s+(\d+)/.exec(r.stdout)[1]);
    assert.equal(total, 1048576, r.stdout); // X_SMALL: 1 GiB
    assert.notEqual(total, host);
    assert.ok(availKb <= 1048576 - 250 * 1024, `usage not shown: ${r.stdout}`);
    assert.match(r.stdout, /^FREE 1048576$/m);
  } finally {
    await client.devboxes.shutdown(b.id);
  }
});
