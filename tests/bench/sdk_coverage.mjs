// How much of the official Runloop SDK works against devboxd: enumerates
// every method of the SDK client's resources (client.devboxes.*,
// client.blueprints.*, … and their sub-resources), calls each once against
// a fresh devboxd with real fixtures (a running devbox, an execution, a
// built blueprint, a snapshot, an object, a secret, an MCP config), and
// counts
//   served: devboxd answered with something other than 501 not_implemented
//           (the route exists; the call may still have been refused),
//   works:  the call resolved without an error.
// Prints ours beside a peer devboxd's (--peer PATH/TO/devboxd, e.g. a build
// of an earlier commit: its devboxd-agent, devboxd-ptyd and devboxd-image
// must sit beside it) in one run. --verbose lists every method's outcome.
//
//   node tests/bench/sdk_coverage.mjs [--peer BIN] [--verbose]
import { existsSync } from 'node:fs';
import { Devboxd, devboxdBin, sdkRequire, toFile } from '../../devboxd/tests/api/devboxd.mjs';

const { Runloop } = sdkRequire('@runloop/api-client');
const { APIResource } = sdkRequire('@runloop/api-client/resource');

const args = process.argv.slice(2);
const verbose = args.includes('--verbose');
const peerAt = args.indexOf('--peer');
const peerBin = peerAt >= 0 ? args[peerAt + 1] : null;
const CALL_MS = 90000;

// Every public method of the client's resources, as "devboxes.executions.kill".
export function sdkMethods(client) {
  const out = [];
  const seen = new Set();
  const visit = (res, name) => {
    if (!(res instanceof APIResource) || seen.has(res)) return;
    seen.add(res);
    const names = new Set();
    for (let p = Object.getPrototypeOf(res); p && p !== APIResource.prototype; p = Object.getPrototypeOf(p)) {
      for (const n of Object.getOwnPropertyNames(p)) {
        const d = Object.getOwnPropertyDescriptor(p, n);
        if (n !== 'constructor' && !n.startsWith('_') && typeof d.value === 'function') names.add(n);
        else if (d.get) visit(res[n], `${name}.${n}`);
      }
    }
    for (const n of names) out.push(`${name}.${n}`);
    for (const k of Object.keys(res)) visit(res[k], `${name}.${k}`);
  };
  for (const k of Object.keys(client)) visit(client[k], k);
  return out;
}

const withTimeout = (p, ms) => {
  let t;
  return Promise.race([p, new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`no answer in ${ms} ms`)), ms); })])
    .finally(() => clearTimeout(t));
};

// The fixtures the calls need, made through the SDK.
async function fixtures(c) {
  const fx = {};
  fx.box = (await c.devboxes.createAndAwaitRunning({})).id;
  fx.box2 = (await c.devboxes.createAndAwaitRunning({})).id;
  await c.devboxes.writeFileContents(fx.box, { file_path: '/home/user/f.txt', contents: 'x\n' });
  fx.exec = (await c.devboxes.executeAsync(fx.box, { command: 'echo out; echo err >&2' })).execution_id;
  await c.devboxes.executions.awaitCompleted(fx.box, fx.exec);
  fx.bp = (await c.blueprints.createAndAwaitBuildCompleted({ name: 'cov-bp', system_setup_commands: ['true'] })).id;
  fx.bpDel = (await c.blueprints.createAndAwaitBuildCompleted({ name: 'cov-bp-del', system_setup_commands: ['true'] })).id;
  fx.snap = (await c.devboxes.snapshotDisk(fx.box, { name: 'cov-snap' })).id;
  fx.snapDel = (await c.devboxes.snapshotDisk(fx.box, { name: 'cov-snap-del' })).id;
  fx.snapDel2 = (await c.devboxes.snapshotDisk(fx.box, { name: 'cov-snap-del2' })).id;
  const obj = await c.objects.create({ name: 'cov.txt', content_type: 'text' });
  await fetch(obj.upload_url, { method: 'PUT', body: 'hello' });
  fx.obj = obj.id;
  fx.objDel = (await c.objects.create({ name: 'cov-del.txt', content_type: 'text' })).id;
  fx.objDone = (await c.objects.create({ name: 'cov-done.txt', content_type: 'text' }));
  await fetch(fx.objDone.upload_url, { method: 'PUT', body: 'done' });
  await c.secrets.create({ name: 'COV_SECRET', value: 'v' });
  await c.secrets.create({ name: 'COV_SECRET_DEL', value: 'v' });
  fx.mcp = (await c.mcpConfigs.create({ name: 'cov-mcp', endpoint: 'https://example.com/mcp', allowed_tools: ['*'] })).id;
  fx.mcpDel = (await c.mcpConfigs.create({ name: 'cov-mcp-del', endpoint: 'https://example.com/mcp', allowed_tools: ['*'] })).id;
  return fx;
}

const drain = async (stream) => { for await (const _ of stream) { /* read to the end */ } return true; };

// How to call a method; methods not listed get ('cov_unknown', {}).
// Destructive calls run on fixtures of their own, after the others.
const calls = {
  'accounts.me': (c) => c.accounts.me(),
  'blueprints.create': (c) => c.blueprints.create({ name: 'cov-bp-2', system_setup_commands: ['true'] }),
  'blueprints.retrieve': (c, f) => c.blueprints.retrieve(f.bp),
  'blueprints.awaitBuildComplete': (c, f) => c.blueprints.awaitBuildComplete(f.bp),
  'blueprints.createAndAwaitBuildCompleted': (c) => c.blueprints.createAndAwaitBuildCompleted({ name: 'cov-bp-3', system_setup_commands: ['true'] }),
  'blueprints.list': (c) => c.blueprints.list(),
  'blueprints.delete': (c, f) => c.blueprints.delete(f.bpDel),
  'blueprints.listPublic': (c) => c.blueprints.listPublic(),
  'blueprints.logs': (c, f) => c.blueprints.logs(f.bp),
  'blueprints.preview': (c) => c.blueprints.preview({ name: 'cov-preview', system_setup_commands: ['true'] }),
  'devboxes.create': (c) => c.devboxes.create({}),
  'devboxes.retrieve': (c, f) => c.devboxes.retrieve(f.box),
  'devboxes.awaitRunning': (c, f) => c.devboxes.awaitRunning(f.box),
  'devboxes.awaitSuspended': async (c, f) => { await c.devboxes.suspend(f.box2); return c.devboxes.awaitSuspended(f.box2); },
  'devboxes.createAndAwaitRunning': (c) => c.devboxes.createAndAwaitRunning({}),
  'devboxes.update': (c, f) => c.devboxes.update(f.box, { name: 'cov' }),
  'devboxes.list': (c) => c.devboxes.list(),
  'devboxes.createGatewayToken': (c, f) => c.devboxes.createGatewayToken(f.box, { gateway: 'cov', secret: 'COV_SECRET' }),
  'devboxes.createMcpToken': (c, f) => c.devboxes.createMcpToken(f.box, { mcp_config: f.mcp, secret: 'COV_SECRET' }),
  'devboxes.createPtyTunnel': (c, f) => c.devboxes.createPtyTunnel(f.box),
  'devboxes.createSSHKey': (c, f) => c.devboxes.createSSHKey(f.box),
  'devboxes.deleteDiskSnapshot': (c, f) => c.devboxes.deleteDiskSnapshot(f.snapDel),
  'devboxes.downloadFile': async (c, f) => (await c.devboxes.downloadFile(f.box, { path: '/home/user/f.txt' })).text(),
  'devboxes.enableTunnel': (c, f) => c.devboxes.enableTunnel(f.box, { auth_mode: 'open' }),
  'devboxes.execute': (c, f) => c.devboxes.execute(f.box, { command: 'true' }),
  'devboxes.executeAndAwaitCompletion': (c, f) => c.devboxes.executeAndAwaitCompletion(f.box, { command: 'true' }),
  'devboxes.executeAsync': (c, f) => c.devboxes.executeAsync(f.box, { command: 'true' }),
  'devboxes.executeSync': (c, f) => c.devboxes.executeSync(f.box, { command: 'true' }),
  'devboxes.keepAlive': (c, f) => c.devboxes.keepAlive(f.box),
  'devboxes.listDiskSnapshots': (c) => c.devboxes.listDiskSnapshots(),
  'devboxes.readFileContents': (c, f) => c.devboxes.readFileContents(f.box, { file_path: '/home/user/f.txt' }),
  'devboxes.removeTunnel': (c, f) => c.devboxes.removeTunnel(f.box),
  'devboxes.resume': (c, f) => c.devboxes.resume(f.box2),
  'devboxes.retrieveResourceUsage': (c, f) => c.devboxes.retrieveResourceUsage(f.box),
  'devboxes.shutdown': (c, f) => c.devboxes.shutdown(f.box2),
  'devboxes.snapshotDisk': (c, f) => c.devboxes.snapshotDisk(f.box, {}),
  'devboxes.snapshotDiskAsync': (c, f) => c.devboxes.snapshotDiskAsync(f.box, {}),
  'devboxes.suspend': (c, f) => c.devboxes.suspend(f.box2),
  'devboxes.uploadFile': async (c, f) => c.devboxes.uploadFile(f.box, { path: '/home/user/up.txt', file: await toFile(Buffer.from('up'), 'up.txt') }),
  'devboxes.waitForCommand': (c, f) => c.devboxes.waitForCommand(f.box, f.exec, { statuses: ['completed'] }),
  'devboxes.watchEvictions': async (c) => {
    const s = await c.devboxes.watchEvictions({ headers: { Accept: 'text/event-stream' } });
    s.controller.abort();
    return true;
  },
  'devboxes.writeFileContents': (c, f) => c.devboxes.writeFileContents(f.box, { file_path: '/home/user/w.txt', contents: 'w' }),
  'devboxes.diskSnapshots.update': (c, f) => c.devboxes.diskSnapshots.update(f.snap, { name: 'cov-renamed' }),
  'devboxes.diskSnapshots.list': (c) => c.devboxes.diskSnapshots.list(),
  'devboxes.diskSnapshots.delete': (c, f) => c.devboxes.diskSnapshots.delete(f.snapDel2),
  'devboxes.diskSnapshots.queryStatus': (c, f) => c.devboxes.diskSnapshots.queryStatus(f.snap),
  'devboxes.diskSnapshots.awaitCompleted': (c, f) => c.devboxes.diskSnapshots.awaitCompleted(f.snap),
  'devboxes.logs.list': (c, f) => c.devboxes.logs.list(f.box),
  'devboxes.executions.retrieve': (c, f) => c.devboxes.executions.retrieve(f.box, f.exec),
  'devboxes.executions.executeAsync': (c, f) => c.devboxes.executions.executeAsync(f.box, { command: 'true' }),
  'devboxes.executions.awaitCompleted': (c, f) => c.devboxes.executions.awaitCompleted(f.box, f.exec),
  'devboxes.executions.executeSync': (c, f) => c.devboxes.executions.executeSync(f.box, { command: 'true' }),
  'devboxes.executions.kill': async (c, f) => {
    const e = await c.devboxes.executeAsync(f.box, { command: 'sleep 600' });
    return c.devboxes.executions.kill(f.box, e.execution_id);
  },
  'devboxes.executions.sendStdIn': async (c, f) => {
    const e = await c.devboxes.executeAsync(f.box, { command: 'cat', attach_stdin: true });
    const r = await c.devboxes.executions.sendStdIn(f.box, e.execution_id, { text: 'x', signal: 'EOF' });
    return r;
  },
  'devboxes.executions.streamStderrUpdates': async (c, f) => drain(await c.devboxes.executions.streamStderrUpdates(f.box, f.exec)),
  'devboxes.executions.streamStdoutUpdates': async (c, f) => drain(await c.devboxes.executions.streamStdoutUpdates(f.box, f.exec)),
  'objects.create': (c) => c.objects.create({ name: 'cov-2.txt', content_type: 'text' }),
  'objects.retrieve': (c, f) => c.objects.retrieve(f.obj),
  'objects.list': (c) => c.objects.list(),
  'objects.delete': (c, f) => c.objects.delete(f.objDel),
  'objects.complete': (c, f) => c.objects.complete(f.objDone.id),
  'objects.download': async (c, f) => { await c.objects.complete(f.obj); return c.objects.download(f.obj); },
  'objects.listPublic': (c) => c.objects.listPublic(),
  'secrets.create': (c) => c.secrets.create({ name: 'COV_SECRET_2', value: 'v' }),
  'secrets.retrieve': (c) => c.secrets.retrieve('COV_SECRET'),
  'secrets.update': (c) => c.secrets.update('COV_SECRET', { value: 'w' }),
  'secrets.list': (c) => c.secrets.list(),
  'secrets.delete': (c) => c.secrets.delete('COV_SECRET_DEL'),
  'mcpConfigs.create': (c) => c.mcpConfigs.create({ name: 'cov-mcp-2', endpoint: 'https://example.com/mcp', allowed_tools: ['*'] }),
  'mcpConfigs.retrieve': (c, f) => c.mcpConfigs.retrieve(f.mcp),
  'mcpConfigs.update': (c, f) => c.mcpConfigs.update(f.mcp, { name: 'cov-mcp-renamed' }),
  'mcpConfigs.list': (c) => c.mcpConfigs.list(),
  'mcpConfigs.delete': (c, f) => c.mcpConfigs.delete(f.mcpDel),
};
// Run after the others: they end what other calls use.
const last = ['devboxes.resume', 'devboxes.shutdown', 'blueprints.delete', 'devboxes.deleteDiskSnapshot',
  'devboxes.diskSnapshots.delete', 'objects.delete', 'secrets.delete', 'mcpConfigs.delete'];

function generic(c, name) {
  const parts = name.split('.');
  let obj = c;
  for (const p of parts.slice(0, -1)) obj = obj[p];
  const fn = obj[parts.at(-1)];
  // (id, body) for most; lists and creates take a query or a body first.
  const first = /^(list|create|start|devboxCounts)/.test(parts.at(-1));
  return first ? fn.call(obj, {}) : fn.call(obj, 'cov_unknown', {});
}

async function measure(bin) {
  const engine = new Devboxd();
  engine.bin = bin;
  await engine.start();
  const c = engine.client({ timeout: CALL_MS });
  const results = new Map();
  try {
    const f = await fixtures(c);
    const names = sdkMethods(c);
    const order = [...names.filter((n) => !last.includes(n)), ...last.filter((n) => names.includes(n))];
    for (const n of order) {
      const run = calls[n] ?? ((cl) => generic(cl, n));
      try {
        await withTimeout(Promise.resolve().then(() => run(c, f)), CALL_MS);
        results.set(n, { served: true, works: true, how: 'ok' });
      } catch (e) {
        const status = e?.status;
        results.set(n, {
          served: status !== undefined && status !== 501,
          works: false,
          how: status !== undefined ? `HTTP ${status}: ${String(e.error?.message ?? e.message).slice(0, 100)}` : `failed: ${e.message}`,
        });
      }
    }
  } finally {
    await engine.cleanup();
  }
  return results;
}

function summary(results) {
  const all = [...results.entries()];
  const dbx = all.filter(([n]) => n.startsWith('devboxes.'));
  const count = (xs, k) => xs.filter(([, r]) => r[k]).length;
  return {
    total: all.length, served: count(all, 'served'), works: count(all, 'works'),
    dbxTotal: dbx.length, dbxServed: count(dbx, 'served'), dbxWorks: count(dbx, 'works'),
  };
}

if (!existsSync(devboxdBin)) throw new Error(`${devboxdBin} is missing: build first`);
const ours = await measure(devboxdBin);
const peer = peerBin ? await measure(peerBin) : null;
if (verbose) {
  for (const [n, r] of ours) {
    const p = peer?.get(n);
    console.log(`${n.padEnd(44)} ${r.how.slice(0, 60).padEnd(62)} ${p ? p.how.slice(0, 60) : ''}`);
  }
}
const s = summary(ours);
const ps = peer ? summary(peer) : null;
const row = (what, a, b) => console.log(`${what.padEnd(34)} ${String(a).padEnd(14)} ${b ?? ''}`);
console.log(`Runloop SDK ${sdkRequire('@runloop/api-client/version').VERSION}: ${s.total} resource methods`);
row('', 'ours', ps ? `peer (${peerBin})` : '');
row('methods served (not 501)', `${s.served}/${s.total}`, ps && `${ps.served}/${ps.total}`);
row('methods that work', `${s.works}/${s.total}`, ps && `${ps.works}/${ps.total}`);
row('devboxes.* served', `${s.dbxServed}/${s.dbxTotal}`, ps && `${ps.dbxServed}/${ps.dbxTotal}`);
row('devboxes.* that work', `${s.dbxWorks}/${s.dbxTotal}`, ps && `${ps.dbxWorks}/${ps.dbxTotal}`);
