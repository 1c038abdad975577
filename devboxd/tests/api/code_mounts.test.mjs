// Legacy code_mounts ({repo_name, repo_owner, token?, install_command?}) on
// devbox and blueprint create, through the official Runloop SDK against a
// real devboxd whose RLMCP_CODE_MOUNT_BASE is a directory of bare git
// repositories served over file:// (this machine cannot reach GitHub): the
// repository lands in ~/<repo_name> owned by the devbox's user with origin
// set to <base>/<owner>/<name>, install_command runs there; a token is
// never shown (blueprint parameters, logs) nor kept in a record once
// cloned; a repository that does not exist fails the devbox or the build
// naming it; a server that never answers is cut off at
// RLMCP_CODE_MOUNT_TIMEOUT_S, a delete of the blueprint whose build clones
// from it stops the clone, and so do a shutdown of the devbox whose boot
// clones from it and devboxd's own stop; a restart after a kill -9
// removes the clone dirs and bundles left behind; over smart HTTP the token
// reaches git as Basic auth and no command line; bad owner and name values
// are 400s.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync,
} from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Devboxd, blueprintLog, blueprintSettled, rejectsWith, useEngine, waitFor } from './devboxd.mjs';

const work = mkdtempSync(path.join(os.tmpdir(), 'code-mounts-'));
chmodSync(work, 0o755); // devboxd clones as nobody
const repos = path.join(work, 'repos');
const TOKEN = 'ghp_secretTokenThatMustNotShow123';

function git(cwd, ...args) {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args],
    { cwd, encoding: 'utf8' });
}

// A bare repository <repos>/<owner>/<name>.git with files and two commits.
function makeRepo(owner, name, files) {
  const src = path.join(work, `src-${name}`);
  mkdirSync(src, { recursive: true });
  git(src, 'init', '-q', '--initial-branch=main');
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(src, f)), { recursive: true });
    writeFileSync(path.join(src, f), text);
  }
  git(src, 'add', '.');
  git(src, 'commit', '-qm', 'first');
  writeFileSync(path.join(src, 'CHANGES'), 'second\n');
  git(src, 'add', '.');
  git(src, 'commit', '-qm', 'second');
  const bare = path.join(repos, owner, `${name}.git`);
  mkdirSync(path.dirname(bare), { recursive: true });
  git(work, 'clone', '-q', '--bare', src, bare);
  execFileSync('chmod', ['-R', 'a+rX', work]);
}

makeRepo('acme', 'tool', { 'README.md': 'tool readme\n', 'bin/hello.sh': '#!/bin/sh\necho hello\n' });
after(() => rmSync(work, { recursive: true, force: true }));

let client;
const engine = useEngine(new Devboxd({ env: { RLMCP_BUILDER: 'buildah', RLMCP_CODE_MOUNT_BASE: `file://${repos}` } }),
  (c) => { client = c; });

async function run(id, command) {
  const r = await client.devboxes.executeAndAwaitCompletion(id, { command });
  return { code: r.exit_status, out: r.stdout, err: r.stderr };
}

const check = 'cat ~/tool/README.md; git -C ~/tool remote get-url origin; git -C ~/tool log --format=%s; ' +
  'git -C ~/tool status --short; stat -c %U ~/tool/README.md; cat ~/tool/installed';
const want = (owner) => `tool readme\nfile://${repos}/acme/tool\nsecond\nfirst\n?? installed\n${owner}\nyes\n`;
const mount = { repo_owner: 'acme', repo_name: 'tool', token: TOKEN, install_command: 'echo yes > installed' };

const settled = (id) => blueprintSettled(client, id);
const logText = (id) => blueprintLog(client, id);

async function failure(id) {
  return waitFor(async () => {
    const d = await client.devboxes.retrieve(id);
    return ['failure', 'running'].includes(d.status) ? d : null;
  }, { timeoutMs: 120000, stepMs: 100, what: `devbox ${id} to fail` });
}

describe('code_mounts', () => {
  test('devbox create clones into ~/<repo_name> and runs install_command', async () => {
    const box = await client.devboxes.createAndAwaitRunning({ code_mounts: [mount] });
    const r = await run(box.id, check);
    assert.equal(r.out, want('user'), r.err);
    const logs = JSON.stringify(await client.devboxes.logs.list(box.id));
    assert.doesNotMatch(logs, new RegExp(TOKEN));
    assert.doesNotMatch(JSON.stringify(await client.devboxes.retrieve(box.id)), new RegExp(TOKEN));
    // The record drops the token once the clone is in the devbox's disk.
    const record = () => readFileSync(path.join(engine.stateDir, 'devboxes', box.id, 'devbox.json'), 'utf8');
    assert.match(record(), /"repo_name":\s*"tool"/);
    assert.doesNotMatch(record(), new RegExp(TOKEN));
    // A suspend and resume keeps the clone (and its local changes).
    await run(box.id, 'echo local > ~/tool/local.txt');
    await client.devboxes.suspend(box.id);
    await client.devboxes.awaitSuspended(box.id);
    await client.devboxes.resume(box.id);
    await client.devboxes.awaitRunning(box.id);
    assert.equal((await run(box.id, 'cat ~/tool/local.txt')).out, 'local\n');
    assert.doesNotMatch(record(), new RegExp(TOKEN));
    await client.devboxes.shutdown(box.id);
  });

  test('blueprint create clones into /home/user/<repo_name>; the token is not kept', async () => {
    const b = await client.blueprints.create({ name: 'cm-bp', code_mounts: [mount],
      dockerfile: 'FROM runloop/starter-x86_64\nRUN echo base > /opt/base\n' });
    const done = await settled(b.id);
    const logs = await logText(b.id);
    assert.equal(done.status, 'build_complete', logs);
    assert.match(logs, new RegExp(`code_mounts\\[0\\]: cloning file://${repos}/acme/tool`));
    assert.doesNotMatch(logs, new RegExp(TOKEN));
    assert.equal(done.parameters.code_mounts[0].repo_name, 'tool');
    assert.equal(done.parameters.code_mounts[0].token, undefined, 'the token is not in the record');
    const box = await client.devboxes.createAndAwaitRunning({ blueprint_id: b.id });
    const r = await run(box.id, `${check}; cat /opt/base; ls -a /tmp | grep -c devboxd-code`);
    assert.equal(r.out, `${want('user')}base\n0\n`, r.err);
    await client.devboxes.shutdown(box.id);
    await client.blueprints.delete(b.id);
  });

  test('a repository that does not exist fails the devbox and the build, naming it', async () => {
    const bad = { repo_owner: 'acme', repo_name: 'missing' };
    const box = await client.devboxes.create({ code_mounts: [bad] });
    const d = await failure(box.id);
    assert.equal(d.status, 'failure');
    assert.match(d.failure_message ?? JSON.stringify(await client.devboxes.logs.list(box.id)),
      /code mount acme\/missing: cloning file:\/\/.*\/acme\/missing failed/);
    const b = await client.blueprints.create({ name: 'cm-missing', code_mounts: [bad] });
    const done = await settled(b.id);
    assert.equal(done.status, 'failed');
    assert.match(await logText(b.id), /code mount acme\/missing: cloning .* failed/);
  });

  test('bad code_mounts are a 400 naming the field', async () => {
    const cases = [
      [[{ repo_owner: 'a b', repo_name: 'x' }], /code_mounts\[0\]\.repo_owner must be/],
      [[{ repo_owner: '../etc', repo_name: 'x' }], /code_mounts\[0\]\.repo_owner must be/],
      [[{ repo_owner: '-u', repo_name: 'x' }], /code_mounts\[0\]\.repo_owner must be/],
      [[{ repo_name: 'x' }], /code_mounts\[0\]\.repo_owner must be/],
      [[{ repo_owner: 'acme', repo_name: '..' }], /code_mounts\[0\]\.repo_name must be/],
      [[{ repo_owner: 'acme', repo_name: 'org/repo' }], /code_mounts\[0\]\.repo_name must be .*without the owner/],
      [[{ repo_owner: 'acme', repo_name: '$(id)' }], /code_mounts\[0\]\.repo_name must be/],
      [[{ repo_owner: 'acme', repo_name: 'x', token: 'a\nb' }], /code_mounts\[0\]\.token must be one line/],
      [[{ repo_owner: 'acme', repo_name: 'x', branch: 'main' }], /branch/],
      [[{ repo_owner: 'acme', repo_name: 'x' }, { repo_owner: 'other', repo_name: 'x' }], /both clone into ~\/x/],
      ['acme/x', /code_mounts must be a list/],
    ];
    for (const [code_mounts, re] of cases) {
      await rejectsWith(assert, client.devboxes.create({ code_mounts }), 400, re);
      await rejectsWith(assert, client.blueprints.create({ name: 'cm-bad', code_mounts }), 400, re);
    }
  });
});

describe('code_mounts with a server that never answers', () => {
  let silent;
  let sockets = [];
  const other = new Devboxd({ env: { RLMCP_CODE_MOUNT_TIMEOUT_S: '2' } });
  const builder = new Devboxd({ env: { RLMCP_BUILDER: 'buildah' } });
  const booter = new Devboxd(); // the 600 s default timeout
  const crasher = new Devboxd();
  before(async () => {
    silent = net.createServer((s) => { sockets.push(s); });
    await new Promise((r) => silent.listen(0, '127.0.0.1', r));
    other.env.RLMCP_CODE_MOUNT_BASE = `http://127.0.0.1:${silent.address().port}`;
    builder.env.RLMCP_CODE_MOUNT_BASE = other.env.RLMCP_CODE_MOUNT_BASE;
    booter.env.RLMCP_CODE_MOUNT_BASE = other.env.RLMCP_CODE_MOUNT_BASE;
    crasher.env.RLMCP_CODE_MOUNT_BASE = other.env.RLMCP_CODE_MOUNT_BASE;
    await other.start();
    await builder.start();
    await booter.start();
    await crasher.start();
  });
  after(async () => {
    await other.cleanup();
    await builder.cleanup();
    await booter.cleanup();
    await crasher.cleanup();
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
  });

  test('the clone is cut off at RLMCP_CODE_MOUNT_TIMEOUT_S', async () => {
    const c = other.client();
    const box = await c.devboxes.create({ code_mounts: [{ repo_owner: 'acme', repo_name: 'tool' }] });
    const d = await waitFor(async () => {
      const v = await c.devboxes.retrieve(box.id);
      return v.status === 'failure' ? v : null;
    }, { timeoutMs: 120000, stepMs: 100, what: 'the devbox to fail' });
    assert.match(d.failure_message ?? JSON.stringify(await c.devboxes.logs.list(box.id)),
      /git ran past 2 s \(RLMCP_CODE_MOUNT_TIMEOUT_S\)/);
  });

  test('deleting a blueprint whose build is cloning stops the clone', async () => {
    const c = builder.client();
    const b = await c.blueprints.create({ name: 'cm-cancel', code_mounts: [{ repo_owner: 'acme', repo_name: 'tool' }] });
    await waitFor(async () => (await c.blueprints.logs(b.id)).logs.some((e) => /code_mounts\[0\]: cloning/.test(e.message)),
      { timeoutMs: 120000, stepMs: 100, what: 'the clone to start' });
    await c.blueprints.delete(b.id); // waits for the build to end: a 503 past 30 s
    const v = await c.blueprints.retrieve(b.id);
    assert.equal(v.state, 'deleted');
  });

  // A devbox whose boot is cloning from the silent server: returns once the
  // clone has connected.
  async function hangingBox(c) {
    const seen = sockets.length;
    const box = await c.devboxes.create({ code_mounts: [{ repo_owner: 'acme', repo_name: 'tool' }] });
    await waitFor(async () => sockets.length > seen, { timeoutMs: 120000, stepMs: 100, what: 'the clone to connect' });
    return box;
  }

  test('a shutdown of a devbox whose boot is cloning, and the stop of devboxd, end the clone', async () => {
    const c = booter.client();
    const box = await hangingBox(c);
    // Before, the shutdown waited for the clone (600 s) and answered 409.
    await c.devboxes.shutdown(box.id);
    const d = await waitFor(async () => {
      const v = await c.devboxes.retrieve(box.id);
      return v.status === 'shutdown' ? v : null;
    }, { timeoutMs: 60000, stepMs: 100, what: 'the devbox to shut down' });
    assert.equal(d.status, 'shutdown');
    await hangingBox(c);
    await booter.stop(); // fails if devboxd needed SIGKILL after 60 s
  });

  test('a devboxd killed mid-clone leaves no clone dir or bundle after its restart', async () => {
    await hangingBox(crasher.client());
    const st = statSync(crasher.stateDir, { bigint: true });
    const prefix = `devboxd-code-${st.dev}-${st.ino}-`;
    const clones = () => readdirSync('/tmp').filter((n) => n.startsWith(prefix));
    const left = clones();
    assert.ok(left.length > 0, 'no clone dir in /tmp (nothing to prove)');
    const bundle = path.join(crasher.stateDir, 'code-dbx_left-0.bundle');
    writeFileSync(bundle, 'a partial bundle');
    crasher.proc.kill('SIGKILL');
    await crasher.exited;
    crasher.proc = null;
    await crasher.start();
    assert.deepEqual(clones().filter((n) => left.includes(n)), []);
    assert.equal(existsSync(bundle), false);
  });
});

// A git smart-HTTP server (git http-backend as CGI) that wants the token as
// Basic auth: proves the token reaches git, and never a command line.
describe('code_mounts with a token over HTTP', () => {
  let server;
  const seen = []; // [authorization header, a process command line held the token]
  const box = new Devboxd();
  const secret = Buffer.from(`x-access-token:${TOKEN}`).toString('base64');
  const onCmdline = () => readdirSync('/proc').filter((p) => /^\d+$/.test(p)).some((p) => {
    try {
      const c = readFileSync(`/proc/${p}/cmdline`, 'utf8');
      return c.includes(TOKEN) || c.includes(secret);
    } catch { return false; }
  });
  function cgi(req, res) {
    seen.push([req.headers.authorization ?? '', onCmdline()]);
    if (req.headers.authorization !== `Basic ${secret}`) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' });
      res.end();
      return;
    }
    const u = new URL(req.url, 'http://x');
    const child = spawn('/usr/lib/git-core/git-http-backend', [], { env: {
      GIT_PROJECT_ROOT: repos, GIT_HTTP_EXPORT_ALL: '1', REQUEST_METHOD: req.method,
      PATH_INFO: u.pathname.replace(/^\/acme\/tool\//, '/acme/tool.git/'),
      QUERY_STRING: u.search.slice(1), CONTENT_TYPE: req.headers['content-type'] ?? '',
      HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '', REMOTE_ADDR: '127.0.0.1',
    } });
    req.pipe(child.stdin);
    const chunks = [];
    child.stdout.on('data', (d) => chunks.push(d));
    child.on('close', () => {
      const out = Buffer.concat(chunks);
      const end = out.indexOf('\r\n\r\n');
      const head = out.subarray(0, end).toString().split('\r\n');
      const headers = {};
      let status = 200;
      for (const line of head) {
        const i = line.indexOf(':');
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') status = Number.parseInt(v, 10);
        else headers[k] = v;
      }
      res.writeHead(status, headers);
      res.end(out.subarray(end + 4));
    });
  }
  before(async () => {
    server = http.createServer(cgi);
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    box.env.RLMCP_CODE_MOUNT_BASE = `http://127.0.0.1:${server.address().port}`;
    await box.start();
  });
  after(async () => {
    await box.cleanup();
    await new Promise((r) => server.close(r));
  });

  test('the token reaches git as Basic auth, on no command line and in no log', async () => {
    const c = box.client();
    const d = await c.devboxes.createAndAwaitRunning({ code_mounts: [mount] });
    const r = await c.devboxes.executeAndAwaitCompletion(d.id, { command: 'cat ~/tool/README.md ~/tool/installed' });
    assert.equal(r.stdout, 'tool readme\nyes\n', r.stderr);
    assert.ok(seen.some(([a]) => a === `Basic ${secret}`), 'git never sent the token');
    assert.deepEqual(seen.filter(([, cmd]) => cmd), [], 'a command line held the token');
    const without = await c.devboxes.create({ code_mounts: [{ repo_owner: 'acme', repo_name: 'tool' }] });
    const f = await waitFor(async () => {
      const v = await c.devboxes.retrieve(without.id);
      return v.status === 'failure' ? v : null;
    }, { timeoutMs: 120000, stepMs: 100, what: 'the devbox without a token to fail' });
    assert.match(f.failure_message ?? '', /cloning http:\/\/127\.0\.0\.1:\d+\/acme\/tool failed/);
    assert.doesNotMatch(JSON.stringify(await c.devboxes.logs.list(d.id)), new RegExp(TOKEN));
    assert.ok(!box.stderr.includes(TOKEN) && !box.stderr.includes(secret), 'devboxd printed the token');
  });
});
