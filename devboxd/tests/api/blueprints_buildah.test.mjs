// Dockerfile blueprints built by buildah (`buildah build --runtime runc`),
// through the official Runloop SDK against a real devboxd: RUN as root
// outside the home, ENV, ARG with build_args, WORKDIR, USER, COPY from
// file_mounts, heredoc RUN and COPY, ENTRYPOINT, FROM Runloop's public
// universal name (a snapshot of its devbox restores onto universal) and
// FROM another blueprint; a final stage FROM an earlier stage (the stages'
// layers merged into one, deletions kept); a devbox from the blueprint sees the files, ENV
// and WORKDIR (where its commands start); bad input (a syntax error, an unknown
// FROM, a context path that escapes) is a 400 naming what to change; a
// failed step is named with its exit status and the output's tail; a RUN
// step's root is a host id range claimed for the build (not the host's
// root), released when the build ends; the steps share one network
// namespace of the build's own (slirp4netns, the host's loopback
// unreachable), gone when the build ends.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Devboxd, blueprintLog, blueprintSettled, claimsDir, rejectsWith, waitFor, useEngine } from './devboxd.mjs';

let client;
const engine = useEngine(new Devboxd({ env: { RLMCP_BUILDER: 'buildah' } }), (c) => { client = c; });
const SB_RANGE_BASE = 1048576;
const SB_RANGE_SIZE = 65536;

// The host pid of the process whose command line holds marker, or null.
function pidWith(marker) {
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker)) return Number(pid);
    } catch { /* gone meanwhile */ }
  }
  return null;
}

async function run(id, command) {
  const r = await client.devboxes.executeAndAwaitCompletion(id, { command });
  return { code: r.exit_status, out: r.stdout, err: r.stderr };
}

const settled = (id) => blueprintSettled(client, id);
const logText = (id) => blueprintLog(client, id);

describe('blueprints built by buildah', () => {
  let base;

  test('a real Dockerfile: RUN as root, ENV, ARG, WORKDIR, USER, COPY, heredocs', async () => {
    const b = await client.blueprints.create({
      name: 'bh-base',
      dockerfile: [
        'FROM runloop:runloop/starter-x86_64',
        'ARG GREETING=hi',
        'RUN mkdir -p /opt/acc && echo hi > /opt/acc/f && rm -f /etc/motd',
        'ENV APP_MODE="local dev" \\',
        '    GREETING_SEEN=$GREETING',
        '  RUN <<EOF',
        'set -e',
        "echo 'from a heredoc' > /opt/acc/heredoc.txt",
        'echo "$GREETING" > /opt/acc/greeting.txt',
        'EOF',
        'COPY <<EOF /opt/acc/inline.txt',
        'inline file',
        'EOF',
        'COPY config.json /opt/acc/conf/',
        'COPY etc/app/app.conf /opt/acc/app.conf',
        'RUN useradd -m -u 1500 builder && chown -R user:user /opt/acc',
        'WORKDIR /opt/acc',
        'USER user',
        'RUN id -un > whoami.txt && pwd > pwd.txt',
        'ENTRYPOINT ["/bin/bash"]',
      ].join('\n'),
      file_mounts: { '/etc/app/config.json': '{"k": 1}\n', '/etc/app/app.conf': 'x=1\n' },
      build_args: { GREETING: 'hello' },
      system_setup_commands: ['echo setup > ~/setup.txt'],
    });
    const done = await settled(b.id);
    const logs = await logText(b.id);
    assert.equal(done.status, 'build_complete', logs);
    assert.match(logs, /builder: buildah/);
    assert.match(logs, /Step 1\/\d+: ARG GREETING=hi/);
    base = done;

    const box = await client.devboxes.createAndAwaitRunning({ blueprint_id: b.id });
    const r = await run(box.id, 'pwd; cat /opt/acc/f /opt/acc/heredoc.txt /opt/acc/greeting.txt ' +
      '/opt/acc/inline.txt /opt/acc/conf/config.json /opt/acc/app.conf /etc/app/config.json ' +
      '/opt/acc/whoami.txt /opt/acc/pwd.txt ~/setup.txt; echo "$APP_MODE|$GREETING_SEEN"; ' +
      'test -e /etc/motd && echo motd-still-there; id -u builder; stat -c %U ~/setup.txt');
    assert.equal(r.out, '/opt/acc\nhi\nfrom a heredoc\nhello\ninline file\n{"k": 1}\nx=1\n{"k": 1}\n' +
      'user\n/opt/acc\nsetup\nlocal dev|hello\n1500\nuser\n', r.err);
    await client.devboxes.shutdown(box.id);
  });

  test('FROM another blueprint and FROM runloop/universal', async () => {
    const child = await client.blueprints.create({ name: 'bh-child',
      dockerfile: 'FROM bh-base\nRUN sleep 20\nRUN echo child > /opt/acc/child.txt\n' });
    // The base is deleted while the child builds on it: the child's record
    // holds the base's layers, so it completes with the base's files.
    await waitFor(async () => /sleep 20/.test(await logText(child.id)) || null,
      { timeoutMs: 540000, stepMs: 200, what: 'the child build running its first step' });
    await client.blueprints.delete(base.id);
    assert.equal((await client.blueprints.retrieve(base.id)).state, 'deleted');
    const done = await settled(child.id);
    assert.equal(done.status, 'build_complete', await logText(child.id));
    assert.equal(done.base_blueprint_id, base.id);
    const box = await client.devboxes.createAndAwaitRunning({ blueprint_id: child.id });
    const r = await run(box.id, 'pwd; cat /opt/acc/f /opt/acc/child.txt; echo "$APP_MODE"');
    assert.equal(r.out, '/opt/acc\nhi\nchild\nlocal dev\n', r.err, 'the base WORKDIR carries over');
    await client.devboxes.shutdown(box.id);
    // Nothing was built FROM the child, so it has no buildah image yet: a
    // build FROM it makes one now, over its deleted base's.
    const grand = await client.blueprints.create({ name: 'bh-grandchild',
      dockerfile: `FROM ${child.id}\nRUN echo grand > /opt/acc/grand.txt\n` });
    const g = await settled(grand.id);
    assert.equal(g.status, 'build_complete', await logText(grand.id));
    const gbox = await client.devboxes.createAndAwaitRunning({ blueprint_id: grand.id });
    const gr = await run(gbox.id, 'cat /opt/acc/f /opt/acc/child.txt /opt/acc/grand.txt');
    assert.equal(gr.out, 'hi\nchild\ngrand\n', gr.err);
    await client.devboxes.shutdown(gbox.id);
    await client.blueprints.delete(grand.id);

    const uni = await client.blueprints.create({ name: 'bh-universal',
      dockerfile: 'FROM runloop/universal-ubuntu-24.04-x86_64\nRUN go version > /opt/go-version\n' });
    const u = await settled(uni.id);
    assert.equal(u.status, 'build_complete', await logText(uni.id));
    const ubox = await client.devboxes.createAndAwaitRunning({ blueprint_id: uni.id });
    const ur = await run(ubox.id, 'cat /opt/go-version; command -v cargo');
    assert.match(ur.out, /^go version go.*\n.*cargo\n$/, ur.err);
    // A snapshot of it restores onto universal too.
    const snap = await client.devboxes.snapshotDisk(ubox.id, {});
    await client.devboxes.shutdown(ubox.id);
    const sbox = await client.devboxes.createAndAwaitRunning({ snapshot_id: snap.id });
    const sr = await run(sbox.id, 'cat /opt/go-version; command -v cargo');
    assert.match(sr.out, /^go version go.*\n.*cargo\n$/, sr.err);
    await client.devboxes.shutdown(sbox.id);
    await client.devboxes.diskSnapshots.delete(snap.id);
    await client.blueprints.delete(child.id);
    await client.blueprints.delete(uni.id);
  });

  test('a final stage FROM an earlier stage: the stages\' layers become one', async () => {
    const b = await client.blueprints.create({ name: 'bh-stages', dockerfile: [
      'FROM runloop/starter-x86_64 AS build',
      'RUN mkdir -p /opt/stage/d && echo one > /opt/stage/one && echo gone > /opt/stage/gone && ' +
        'echo old > /opt/stage/d/old && rm -f /etc/motd',
      'FROM build AS mid',
      'RUN echo two > /opt/stage/two && rm /opt/stage/gone && rm -rf /opt/stage/d && mkdir /opt/stage/d && ' +
        'echo new > /opt/stage/d/new',
      'FROM mid',
      'ENV STAGE=final',
      'RUN echo three > /opt/stage/three',
    ].join('\n') });
    const done = await settled(b.id);
    assert.equal(done.status, 'build_complete', await logText(b.id));
    const box = await client.devboxes.createAndAwaitRunning({ blueprint_id: b.id });
    const r = await run(box.id, 'cat /opt/stage/one /opt/stage/two /opt/stage/three; ls /opt/stage/d; ' +
      'test -e /opt/stage/gone || echo gone-removed; test -e /etc/motd || echo motd-removed; echo "$STAGE"');
    assert.equal(r.out, 'one\ntwo\nthree\nnew\ngone-removed\nmotd-removed\nfinal\n', r.err);
    await client.devboxes.shutdown(box.id);
    await client.blueprints.delete(b.id);
  });

  test("a RUN step's root is a host id range of the build's, not the host's root", async () => {
    const marker = `wait-for-usr1-${process.pid}-${Date.now()}`;
    const b = await client.blueprints.create({ name: 'bh-userns',
      dockerfile: [
        'FROM runloop/starter-x86_64',
        'RUN cat /proc/self/uid_map > /opt/uid_map && cat /proc/self/gid_map > /opt/gid_map && ' +
          'echo x > /opt/made-by-root',
        // Waits (at most 600 s) until the test has looked at it from the host.
        `RUN echo ${marker}; trap 'exit 0' USR1; i=0; ` +
          'while [ $i -lt 3000 ]; do touch /opt/step-alive; sleep 0.2; i=$((i+1)); done; exit 9',
      ].join('\n') });
    const pid = await waitFor(() => pidWith(marker), { timeoutMs: 540000, stepMs: 200, what: 'the RUN step' });
    const ids = (key) => readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`^${key}:\\s+(.*)$`, 'm'))[1]
      .split(/\s+/).map(Number);
    const [uid] = ids('Uid');
    assert.ok(uid >= SB_RANGE_BASE && (uid - SB_RANGE_BASE) % SB_RANGE_SIZE === 0,
      `the RUN step runs as host uid ${uid}, not as the root of a claimed range`);
    assert.deepEqual(ids('Uid'), [uid, uid, uid, uid]);
    assert.deepEqual(ids('Gid'), [uid, uid, uid, uid]);
    // Claimed like a devbox's range, and a file the step writes is the range's on the host.
    const claim = path.join(claimsDir, String(uid));
    assert.equal(readFileSync(claim, 'utf8'), path.join(engine.stateDir, 'blueprints', b.id, 'sandbox'));
    await waitFor(() => existsSync(`/proc/${pid}/root/opt/step-alive`) || null, { what: 'the step to write' });
    assert.equal(statSync(`/proc/${pid}/root/opt/step-alive`).uid, uid);
    assert.equal(statSync(`/proc/${pid}/root/opt/made-by-root`).uid, uid);
    process.kill(pid, 'SIGUSR1');

    const done = await settled(b.id);
    const logs = await logText(b.id);
    assert.equal(done.status, 'build_complete', logs);
    assert.match(logs, new RegExp(`RUN steps run as host ids ${uid}-${uid + SB_RANGE_SIZE - 1}`));
    assert.equal(existsSync(claim), false, 'the build did not release its host id range');
    assert.equal(existsSync(`/var/tmp/devboxd-buildah/${b.id}`), false, 'the build left its temp dir');

    // Inside, the step saw itself as root of that range; the layer's files are a devbox's root's.
    const box = await client.devboxes.createAndAwaitRunning({ blueprint_id: b.id });
    const r = await run(box.id, 'cat /opt/uid_map /opt/gid_map; stat -c %u:%g /opt/made-by-root');
    const map = new RegExp(`^\\s*0\\s+${uid}\\s+${SB_RANGE_SIZE}\\n`);
    const [um, gm, owner] = r.out.split(/(?<=\n)/);
    assert.match(um, map, r.out);
    assert.match(gm, map, r.out);
    assert.doesNotMatch(r.out, /4294967295/);
    assert.equal(owner, '0:0\n');
    await client.devboxes.shutdown(box.id);
    await client.blueprints.delete(b.id);
  });

  test("a build's RUN steps share one network namespace of its own: outbound through slirp4netns, not the host's loopback", async () => {
    // One listener on every address: the steps reach it at the host's own
    // address, not at slirp's gateway (the host's loopback).
    const hostIp = Object.values(networkInterfaces()).flat()
      .find((a) => a.family === 'IPv4' && !a.internal)?.address;
    assert.ok(hostIp, 'the host has an IPv4 address besides loopback');
    const seen = [];
    const server = createServer((s) => { seen.push(s.remoteAddress); s.end('hello\n'); });
    await new Promise((resolve) => server.listen(0, '0.0.0.0', resolve));
    const port = server.address().port;
    const probe = (to) => `(timeout 10 bash -c 'exec 3<>/dev/tcp/${to}/${port} && head -1 <&3' || echo refused)`;
    try {
      const b = await client.blueprints.create({ name: 'bh-net',
        dockerfile: [
          'FROM runloop/starter-x86_64',
          'RUN readlink /proc/self/ns/net > /opt/netns1 && ip -o -4 addr show > /opt/addrs',
          `RUN readlink /proc/self/ns/net > /opt/netns2 && ${probe('10.0.2.2')} > /opt/loopback && ` +
            `${probe(hostIp)} > /opt/outside`,
        ].join('\n') });
      const done = await settled(b.id);
      assert.equal(done.status, 'build_complete', await logText(b.id));
      const box = await client.devboxes.createAndAwaitRunning({ blueprint_id: b.id });
      const r = await run(box.id, 'cat /opt/netns1 /opt/netns2 /opt/loopback /opt/outside; echo ---; cat /opt/addrs');
      await client.devboxes.shutdown(box.id);
      const [head, addrs] = r.out.split('---\n');
      const [ns1, ns2, loopback, outside] = head.trim().split('\n');
      assert.match(ns1, /^net:\[\d+\]$/, r.out);
      assert.equal(ns2, ns1, 'the two RUN steps ran in different network namespaces');
      assert.match(addrs, /tap0\s+inet 10\.0\.2\.100\//, 'the steps are not on slirp4netns');
      assert.doesNotMatch(addrs, /10\.88\./, 'a step is on the bridge');
      assert.equal(loopback, 'refused', "a step reached the host's loopback");
      assert.equal(outside, 'hello', "a step did not reach the host's address");
      assert.equal(seen.length, 1, `connections seen: ${seen}`);
      // Its namespace (the holder, slirp4netns) is gone with the build.
      const left = readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((pid) => {
        try { return readlinkSync(`/proc/${pid}/ns/net`) === ns1; } catch { return false; }
      });
      assert.deepEqual(left, [], 'processes left in the build network namespace');
      await client.blueprints.delete(b.id);
    } finally {
      server.close();
    }
  });

  test('wait_for_status answers as the build ends; 408 before, 422 for a status it will never reach, 400 naming bad input', async () => {
    const waitFor_ = (id, body) => client.post(`/v1/blueprints/${id}/wait_for_status`, { body, maxRetries: 0 });
    const b = await client.blueprints.create({ name: 'bh-wait', dockerfile: 'FROM runloop/starter-x86_64\nRUN sleep 3\n' });
    assert.equal(b.supports_wait_for_status, true, 'the view offers the wait');
    await rejectsWith(assert, waitFor_(b.id, { statuses: ['build_complete'], timeout_seconds: 1 }), 408,
      /did not reach the requested status in time; repeat the request/);
    let v = null;
    while (v === null) {
      try {
        v = await waitFor_(b.id, { statuses: ['build_complete', 'failed'], timeout_seconds: 30 });
      } catch (e) {
        if (e.status !== 408) throw e;
      }
    }
    const answered = Date.now();
    assert.equal(v.status, 'build_complete', await logText(b.id));
    // Read every 10 ms by the engine; generous for a loaded machine.
    assert.ok(answered - v.build_finish_time_ms < 1500,
      `answered ${answered - v.build_finish_time_ms} ms after the build ended`);
    await rejectsWith(assert, waitFor_(b.id, { statuses: ['building'] }), 422,
      /is build_complete \(final\) and will never reach the requested statuses/);
    await rejectsWith(assert, waitFor_(b.id, {}), 400, /statuses is required/);
    await rejectsWith(assert, waitFor_(b.id, { statuses: ['done'] }), 400, /each is one of queued/);
    await rejectsWith(assert, waitFor_(b.id, { statuses: ['failed'], timeout_seconds: 99 }), 400, /timeout_seconds/);
    await rejectsWith(assert, waitFor_('bpt_nosuchblueprint0000', { statuses: ['failed'] }), 404);
    await client.blueprints.delete(b.id);
  });

  test('a failing step names its line, its exit status and the output tail', async () => {
    const b = await client.blueprints.create({ name: 'bh-fails',
      dockerfile: 'FROM runloop/starter-x86_64\nRUN true\nRUN echo about-to-fail; exit 7\nRUN echo never\n' });
    const done = await settled(b.id);
    assert.equal(done.status, 'failed');
    const logs = await logText(b.id);
    assert.match(logs, /error: step 2\/3 \(Dockerfile line 3\): RUN echo about-to-fail; exit 7 failed: command exited with code 7/, logs);
    assert.match(logs, /error: {3}about-to-fail/);
    assert.doesNotMatch(logs, /never\n/);
  });

  test('bad input is a 400 naming what to change', async () => {
    await rejectsWith(assert, client.blueprints.create({ name: 'x',
      dockerfile: 'FROM runloop/starter-x86_64\nRUN true\nFROWN x\n' }), 400, /line 3: unknown instruction "FROWN"/);
    await rejectsWith(assert, client.blueprints.create({ name: 'x',
      dockerfile: 'FROM python:3.12\n' }), 400, /line 1: FROM python:3\.12: no image or built blueprint of that name/);
    await rejectsWith(assert, client.blueprints.create({ name: 'x',
      dockerfile: 'FROM runloop:no-such-blueprint\n' }), 400, /FROM runloop:no-such-blueprint/);
    await rejectsWith(assert, client.blueprints.create({ name: 'x',
      dockerfile: 'FROM runloop/starter-x86_64\nCOPY ../../etc/shadow /tmp/\n' }), 400,
    /line 2: COPY source "\.\.\/\.\.\/etc\/shadow" is outside the build context/);
    await rejectsWith(assert, client.blueprints.create({ name: 'x',
      dockerfile: 'FROM runloop/starter-x86_64\nCOPY ["a/../../x", "/tmp/"]\n' }), 400, /outside the build context/);
    // buildah would fetch these from the host's network, loopback included.
    for (const src of ['http://127.0.0.1:1/secret', 'http://169.254.169.254/latest/meta-data/', 'git@example.com:a/b.git']) {
      await rejectsWith(assert, client.blueprints.create({ name: 'x',
        dockerfile: `FROM runloop/starter-x86_64\nADD ${src} /tmp/x\n` }), 400, /line 2: ADD of a URL .* is not supported/);
    }
    await rejectsWith(assert, client.blueprints.create({ name: 'x',
      file_mounts: { '/../../etc/passwd': 'x' } }), 400, /leaves the build context/);
    await rejectsWith(assert, client.blueprints.create({ name: 'x',
      dockerfile: 'RUN true\n' }), 400, /line 1: RUN before FROM/);
    await rejectsWith(assert, client.blueprints.create({ name: 'x',
      dockerfile: 'FROM runloop/starter-x86_64\nRUN <<EOF\necho never closed\n' }), 400, /line 2: heredoc <<EOF is not closed/);
    await rejectsWith(assert, client.blueprints.create({ name: 'x',
      dockerfile: 'FROM runloop/arm64-thing\n' }), 400, /runloop\/arm64-thing/);
  });
});
