// Root inside, nobody outside (the runc runtime) through the official
// Runloop SDK against a real devboxd: "user" with passwordless sudo, root
// and other users from user_parameters, packages installed system-wide,
// the image's ids mapped to the devbox's own host range, and what a hostile
// root inside still cannot see or do.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Devboxd, rejectsWith, waitFor, useEngine } from './devboxd.mjs';

let client;
const engine = useEngine(new Devboxd({ env: { RLMCP_DEVBOX_RUNTIME: 'runc', RLMCP_DEVBOX_IMAGE: 'starter' } }), (c) => { client = c; });

const run = async (id, command) => {
  const r = await client.devboxes.executeSync(id, { command }, { timeout: 300000, maxRetries: 0 });
  return { code: r.exit_status, out: r.stdout, err: r.stderr };
};
const upper = (id) => path.join(engine.stateDir, 'devboxes', id, 'sandbox', 'upper');
const RANGE_BASE = 1048576; // first host id of the runc runtime's ranges

describe('root inside a user namespace (runc)', () => {
  let box;

  test('the default user has passwordless sudo; root writes anywhere in /', async () => {
    box = await client.devboxes.createAndAwaitRunning({});
    const r = await run(box.id, 'id -un; id -u; echo $HOME; sudo -n id -u; '
      + 'sudo mkdir /opt/x && sudo chown user /opt/x && touch /opt/x/f && echo opt-ok; '
      + 'sudo touch /usr/local/bin/tool /etc/tool.conf && echo usr-etc-ok');
    assert.equal(r.out, 'user\n1000\n/home/user\n0\nopt-ok\nusr-etc-ok\n', r.err);
    // Outside, the devbox's root is an unprivileged id of its own range.
    const st = statSync(path.join(upper(box.id), 'usr/local/bin/tool'));
    assert.ok(st.uid >= RANGE_BASE, `in-box root is host uid ${st.uid}`);
    assert.equal(statSync(path.join(upper(box.id), 'opt/x/f')).uid, st.uid + 1000);
  });

  test('a package installs system-wide with dpkg (offline) and pip into a venv', async () => {
    const r = await run(box.id, 'set -e; d=$(mktemp -d); mkdir -p $d/p/DEBIAN $d/p/usr/bin; '
      + 'printf "Package: rlmcp-hello\\nVersion: 1.0\\nArchitecture: all\\nMaintainer: t <t@t>\\n'
      + 'Description: test\\n" > $d/p/DEBIAN/control; '
      + 'printf "#!/bin/sh\\necho hello-from-deb\\n" > $d/p/usr/bin/rlmcp-hello; chmod 755 $d/p/usr/bin/rlmcp-hello; '
      + 'dpkg-deb --root-owner-group --build $d/p $d/h.deb >/dev/null; sudo dpkg -i $d/h.deb >/dev/null; '
      + 'rlmcp-hello; dpkg-query -W -f "\\${Status}\\n" rlmcp-hello; stat -c %U /usr/bin/rlmcp-hello; '
      + 'python3 -m venv /tmp/v && /tmp/v/bin/pip --version >/dev/null && echo venv-ok');
    assert.equal(r.out, 'hello-from-deb\ninstall ok installed\nroot\nvenv-ok\n', r.err);
  });

  test('apt-get install reaches Debian when the network does', async (t) => {
    const up = await run(box.id, 'timeout 120 sudo apt-get update -qq >/dev/null 2>&1; echo $?');
    if (up.out !== '0\n') {
      t.skip('no route to a Debian mirror from this machine');
      return;
    }
    const r = await run(box.id, 'sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hello '
      + '>/dev/null 2>&1; hello');
    assert.equal(r.out, 'Hello, world!\n', r.err);
  });

  test("the host's added CAs are trusted inside; pip and npm use the system store", async (t) => {
    const r = await run(box.id, 'cat /etc/pip.conf /etc/npmrc');
    assert.equal(r.out, '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n'
      + 'cafile=/etc/ssl/certs/ca-certificates.crt\n', r.err);
    // Each CA the host's operator added (devboxd-image's default directory)
    // is in the devbox's store: a line of its body is found there.
    const dir = '/usr/local/share/ca-certificates';
    let cas = [];
    try { cas = readdirSync(dir).filter((f) => f.endsWith('.crt')); } catch { /* none */ }
    for (const f of cas) {
      const body = readFileSync(path.join(dir, f), 'utf8').split('\n')
        .filter((l) => /^[A-Za-z0-9+/]{64}$/.test(l));
      assert.ok(body.length > 0, `${f} has a PEM body`);
      const probe = body[Math.floor(body.length / 2)];
      const c = await run(box.id, `grep -c -F -- '${probe}' /etc/ssl/certs/ca-certificates.crt`);
      assert.equal(c.out, '1\n', `the host's ${f} is in the devbox's store`);
    }
    // Where the host reaches an HTTPS package source, so does the devbox.
    const url = 'https://registry.npmjs.org/';
    try {
      execFileSync('curl', ['-sS', '-m', '30', '-o', '/dev/null', url], { stdio: 'ignore' });
    } catch {
      t.skip(`this machine does not reach ${url}`);
      return;
    }
    const h = await run(box.id, `curl -sS -m 60 -o /dev/null -w '%{http_code}' ${url}`);
    assert.equal(h.code, 0, `curl inside: ${h.err}`);
    assert.equal(h.out, '200');
  });

  test('what root inside still cannot do', async () => {
    const r = await run(box.id, [
      'sudo cat /proc/cmdline | wc -c',
      `grep -c -e '${engine.stateDir}' -e /work /proc/self/mountinfo`,
      'sudo unshare -U true 2>/dev/null; echo unshare=$?',
      'sudo mount -t tmpfs x /mnt 2>/dev/null; echo mount=$?',
      'sudo umount /proc/kcore 2>/dev/null; echo umount=$?',
      'python3 -c "import ctypes; l=ctypes.CDLL(None, use_errno=True); '
        + 'r=l.syscall(425, 8, ctypes.create_string_buffer(256)); print(\'io_uring\', r, ctypes.get_errno())"',
      'ps -e --no-headers | wc -l',
      `timeout 5 bash -c 'echo > /dev/tcp/127.0.0.1/${engine.port}' 2>/dev/null; echo loop=$?`,
      `timeout 5 bash -c 'echo > /dev/tcp/10.0.2.2/${engine.port}' 2>/dev/null; echo gw=$?`,
      'ps -e -o comm= | grep -c -x -E "devboxd|devboxd-ptyd|runc"',
    ].join('; '));
    const lines = r.out.trim().split('\n');
    assert.equal(lines[0], '0', '/proc/cmdline is masked');
    assert.equal(lines[1], '0', 'mountinfo names no host path');
    assert.equal(lines[2], 'unshare=1', 'no nested user namespace');
    assert.notEqual(lines[3], 'mount=0', 'no mounts without CAP_SYS_ADMIN');
    assert.notEqual(lines[4], 'umount=0');
    assert.equal(lines[5], 'io_uring -1 1', 'io_uring_setup is EPERM');
    // A pid namespace of its own: the engine's processes are not there, and
    // the count is the box's few (earlier tests' leftovers included), not
    // the host's hundreds.
    assert.ok(Number(lines[6]) < 50, `only the devbox's processes: ${lines[6]}`);
    assert.equal(lines[9], '0', 'no engine process is visible inside');
    assert.notEqual(lines[7], 'loop=0');
    assert.notEqual(lines[8], 'gw=0');
  });

  test('files API and snapshots keep owners across devboxes (ranges shift)', async () => {
    await client.devboxes.writeFileContents(box.id, { file_path: 'notes/a.txt', contents: 'hi' });
    assert.equal((await run(box.id, 'stat -c %U ~/notes/a.txt')).out, 'user\n');
    const snap = await client.devboxes.snapshotDisk(box.id, { name: 'root-snap' });
    await waitFor(async () => (await client.devboxes.diskSnapshots.queryStatus(snap.id)).status === 'complete',
      { timeoutMs: 120000, stepMs: 100, what: 'snapshot' });
    const child = await client.devboxes.createAndAwaitRunning({ snapshot_id: snap.id });
    const r = await run(child.id, 'cat ~/notes/a.txt; echo; stat -c %U /opt/x /opt/x/f /usr/local/bin/tool; '
      + 'rlmcp-hello; touch /opt/x/g && echo write-ok');
    assert.equal(r.out, 'hi\nuser\nuser\nroot\nhello-from-deb\nwrite-ok\n', r.err);
    const a = statSync(path.join(upper(box.id), 'usr/local/bin/tool')).uid;
    const b = statSync(path.join(upper(child.id), 'opt/x/g')).uid - 1000;
    assert.notEqual(a, b, 'each devbox has its own host range');
    await client.devboxes.shutdown(child.id);
  });

  test('user_parameters: root, and a user the image lacks (with sudo)', async () => {
    const root = await client.devboxes.createAndAwaitRunning({
      launch_parameters: { user_parameters: { username: 'root', uid: 0 } } });
    let r = await run(root.id, 'id -un; id -u; echo $HOME; pwd; touch /etc/x && echo ok');
    assert.equal(r.out, 'root\n0\n/root\n/root\nok\n', r.err);
    const alice = await client.devboxes.createAndAwaitRunning({
      launch_parameters: { user_parameters: { username: 'alice', uid: 1234 } } });
    r = await run(alice.id, 'id -un; id -u; echo $HOME; pwd; touch ~/f && echo home-ok; sudo -n id -un; getent passwd user | cut -d: -f1');
    assert.equal(r.out, 'alice\n1234\n/home/alice\n/home/alice\nhome-ok\nroot\nuser\n', r.err);
    await client.devboxes.shutdown(root.id);
    await client.devboxes.shutdown(alice.id);
  });

  test('bad user_parameters are a 400 naming the fix', async () => {
    const bad = [
      [{ username: 'root', uid: 5 }, /uid 0 is the user "root"/],
      [{ username: 'alice', uid: 70000 }, /uid.*0.*60000/],
      [{ username: 'Bad!', uid: 1001 }, /user name "Bad!"/],
      [{ username: 'alice' }, /needs both username and uid/],
      [{ username: 'alice', uid: 1001, shell: 'x' }, /shell/],
      [{ username: 'user', uid: 1001 }, /"user" is uid 1000/],
    ];
    for (const [up, re] of bad) {
      await rejectsWith(assert, client.devboxes.create({ launch_parameters: { user_parameters: up } }), 400, re);
    }
  });

  test('shutdown ends the container; the devbox is shut down', async () => {
    await client.devboxes.shutdown(box.id);
    const d = await client.devboxes.retrieve(box.id);
    assert.equal(d.status, 'shutdown');
  });
});
