// Engine-wide admission caps through the official Runloop SDK: the number
// of devboxes and the memory and CPU their limits add up to; a refused
// create is a 400 naming the cap, a refused resume a 429, a refused wake on
// HTTP a 503 to the tunnel client; after a restart with a lower cap the
// devboxes past it wait suspended. Bad cap settings, an unknown runtime or default image
// and a missing runc stop devboxd with a message naming the fix.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { Devboxd, rejectsWith } from './devboxd.mjs';

const engines = [];
async function engineWith(env) {
  const saved = {};
  for (const [k, v] of Object.entries(env)) { saved[k] = process.env[k]; process.env[k] = v; }
  const e = new Devboxd();
  try {
    await e.start();
    engines.push(e);
  } catch (err) {
    rmSync(e.stateDir, { recursive: true, force: true });
    throw err;
  } finally {
    for (const k of Object.keys(env)) {
      if (saved[k] === undefined) delete process.env[k]; else process.env[k] = saved[k];
    }
  }
  return e;
}
after(async () => { for (const e of engines) await e.cleanup(); });

const size = (s) => ({ launch_parameters: { resource_size_request: s } });

// A plain GET to a devbox port through the engine's tunnel listener, with no
// credential; *.localhost is pinned to 127.0.0.1 (glibc does not resolve it).
function tunnelGet(engine, port, key) {
  const pid = readFileSync(path.join(engine.stateDir, 'devboxd.pid'), 'utf8');
  const tport = Number(/^tunnel_port (\d+)$/m.exec(pid)[1]);
  return new Promise((resolve, reject) => {
    const req = http.get(`http://${port}-${key}.localhost:${tport}/`, {
      agent: false,
      lookup: (h, o, cb) => (o && o.all ? cb(null, [{ address: '127.0.0.1', family: 4 }])
        : cb(null, '127.0.0.1', 4)),
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.setTimeout(20000, () => req.destroy(new Error('tunnel request timed out')));
    req.on('error', reject);
  });
}

describe('admission caps', () => {
  test('RLMCP_MAX_DEVBOXES: the next create is refused until one shuts down', async () => {
    const c = (await engineWith({ RLMCP_MAX_DEVBOXES: '2' })).client();
    const a = await c.devboxes.create({});
    await c.devboxes.create({});
    await rejectsWith(assert, c.devboxes.create({}), 400, /too many devboxes: 2 .*RLMCP_MAX_DEVBOXES/);
    await c.devboxes.shutdown(a.id);
    const d = await c.devboxes.create({});
    assert.equal(d.status, 'provisioning');
  });

  test('RLMCP_MAX_DEVBOXES holds at resume and at wake on HTTP', async () => {
    const e = await engineWith({ RLMCP_MAX_DEVBOXES: '2' });
    const c = e.client();
    const long = { polling: { timeoutMs: 300000 } };
    const a = await c.devboxes.createAndAwaitRunning({}, long);
    const w = await c.devboxes.createAndAwaitRunning(
      { tunnel: { auth_mode: 'open', wake_on_http: true } }, long);
    await c.devboxes.suspend(a.id);
    await c.devboxes.awaitSuspended(a.id);
    await c.devboxes.suspend(w.id);
    await c.devboxes.awaitSuspended(w.id);
    // Two slots, two new devboxes: the suspended ones may not come back.
    const b = await c.devboxes.create({});
    await c.devboxes.create({});
    await rejectsWith(assert, c.devboxes.resume(a.id), 429,
      new RegExp(`devbox ${a.id} stays suspended: too many devboxes: 2 .*admits 2 \\(RLMCP_MAX_DEVBOXES\\); shut one down or raise the cap`));
    assert.equal((await c.devboxes.retrieve(a.id)).status, 'suspended');
    // An unauthenticated client of the open tunnel cannot wake one past the cap.
    const r = await tunnelGet(e, 8080, w.tunnel.tunnel_key);
    assert.equal(r.status, 503);
    assert.equal(r.headers['retry-after'], undefined);
    assert.match(JSON.parse(r.body).message,
      /^wake on HTTP refused: devbox \S+ stays suspended: too many devboxes: .*RLMCP_MAX_DEVBOXES/);
    assert.equal((await c.devboxes.retrieve(w.id)).status, 'suspended');
    // A slot freed: the wake goes through, then the cap holds again.
    await c.devboxes.shutdown(b.id);
    const woke = await tunnelGet(e, 8080, w.tunnel.tunnel_key);
    assert.equal(woke.status, 503);
    assert.match(JSON.parse(woke.body).message, /resuming \(wake on HTTP\)/);
    await c.devboxes.awaitRunning(w.id, long);
    await rejectsWith(assert, c.devboxes.resume(a.id), 429, /RLMCP_MAX_DEVBOXES/);
  });

  test('a restart with a lower cap boots the oldest devboxes; the rest wait suspended', async () => {
    const e = new Devboxd({ env: { RLMCP_MAX_DEVBOXES: '3' } });
    engines.push(e);
    await e.start();
    let c = e.client();
    const long = { polling: { timeoutMs: 300000 } };
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await c.devboxes.createAndAwaitRunning({ name: `r${i}` }, long)).id);
    await e.stop();
    e.env = { RLMCP_MAX_DEVBOXES: '2' };
    await e.start();
    c = e.client();
    await c.devboxes.awaitRunning(ids[0], long);
    await c.devboxes.awaitRunning(ids[1], long);
    assert.equal((await c.devboxes.retrieve(ids[2])).status, 'suspended');
    assert.match(e.stderr, new RegExp(`devbox ${ids[2]} stays suspended after the restart: too many devboxes: 2 .*RLMCP_MAX_DEVBOXES`));
    await rejectsWith(assert, c.devboxes.resume(ids[2]), 429, /RLMCP_MAX_DEVBOXES/);
    await c.devboxes.shutdown(ids[0]);
    await c.devboxes.resume(ids[2]);
    await c.devboxes.awaitRunning(ids[2], long);
  });

  test('RLMCP_MAX_MEMORY_GB: limits may not add up past the cap', async () => {
    const c = (await engineWith({ RLMCP_MAX_MEMORY_GB: '3' })).client();
    await c.devboxes.create(size('SMALL')); // 2 GiB
    await rejectsWith(assert, c.devboxes.create(size('SMALL')), 400,
      /not enough memory: .*2\.0 GiB.*asks 2\.0 GiB.*3\.0 GiB.*RLMCP_MAX_MEMORY_GB/);
    const small = await c.devboxes.create(size('X_SMALL')); // 1 GiB fits
    assert.equal(small.status, 'provisioning');
  });

  test('RLMCP_MAX_CPUS: CPU limits may not add up past the cap', async () => {
    const c = (await engineWith({ RLMCP_MAX_CPUS: '1.5' })).client();
    await c.devboxes.create(size('SMALL')); // 1 CPU
    await rejectsWith(assert, c.devboxes.create(size('SMALL')), 400,
      /not enough CPU: .*1\.0 CPUs.*asks 1\.0.*1\.5 in all \(RLMCP_MAX_CPUS\)/);
    await c.devboxes.create(size('X_SMALL')); // 0.5 CPU fits
  });

  test('a bad cap setting stops devboxd with a message naming it', async () => {
    for (const [k, v] of [['RLMCP_MAX_CPUS', 'lots'], ['RLMCP_MAX_DEVBOXES', '-1'], ['RLMCP_MAX_MEMORY_GB', '0']]) {
      await assert.rejects(engineWith({ [k]: v }), new RegExp(`${k}="${v}" is not a (whole )?number (from 1|above 0) (to|up to) 1000000000`));
    }
  });
});

describe('runtime and image settings', () => {
  const refused = [
    // A machine without runc: what to install.
    [{ RLMCP_RUNC: '/nonexistent/runc' }, /runc, the devbox runtime, is not at \/nonexistent\/runc: install it .*RLMCP_RUNC/],
    // runc is the one runtime: a setup still asking for another (bubblewrap
    // included) is told to drop the setting rather than quietly given root inside.
    [{ RLMCP_DEVBOX_RUNTIME: 'docker' }, /RLMCP_DEVBOX_RUNTIME="docker": devboxes run under runc only .*unset RLMCP_DEVBOX_RUNTIME/],
    [{ RLMCP_DEVBOX_RUNTIME: 'bwrap' }, /RLMCP_DEVBOX_RUNTIME="bwrap": devboxes run under runc only .*unset RLMCP_DEVBOX_RUNTIME/],
    [{ RLMCP_DEVBOX_IMAGE: 'ubuntu' }, /RLMCP_DEVBOX_IMAGE="ubuntu" is not an image: set it to starter \(the default\), universal, browser or desktop/],
    // buildah is the one builder: the native Dockerfile builder is gone.
    [{ RLMCP_BUILDER: 'native' }, /RLMCP_BUILDER="native": blueprints build with buildah only .*unset RLMCP_BUILDER/],
    // The host's /usr is no image any more.
    [{ RLMCP_DEVBOX_IMAGE: 'host' }, /RLMCP_DEVBOX_IMAGE="host" is not an image \(devboxes no longer run on the host's \/usr\): set it to starter/],
  ];
  for (const [env, re] of refused) {
    test(`${JSON.stringify(env)} stops devboxd with a message naming the fix`, async () => {
      await assert.rejects(engineWith(env), re);
    });
  }

  test('RLMCP_DEVBOX_RUNTIME=runc, the one runtime, is still accepted', async () => {
    const e = await engineWith({ RLMCP_DEVBOX_RUNTIME: 'runc' });
    const c = e.client();
    const box = await c.devboxes.createAndAwaitRunning({}, { polling: { timeoutMs: 300000 } });
    const r = await c.devboxes.executeSync(box.id, { command: 'id -un' }, { timeout: 300000 });
    assert.equal(r.stdout, 'user\n');
    await c.devboxes.shutdown(box.id);
  });
});
