// Blueprint build overhead: a 4-step Dockerfile built by buildah (the one
// builder) against the same commands run in a devbox, ours beside a peer
// build's devboxd (default: main at 244ee15, built once in
// ${TMPDIR:-/tmp}/rlmcp-peer-244ee15), the two engines in one run taking
// turns, so machine load hits both alike. Each side builds once first
// (image imports, cache), then N times; a build's figure is create ->
// build_complete, the commands' figure is their execute round trips in a
// running devbox of the same engine, and the overhead is the difference
// (target: at most 1 s). A devbox from the last build checks the result.
// Figures only.
//   RLMCP_BUILD_DIR=build node tests/bench/blueprint_build_bench.mjs [N]
//       [--peer PEER_BUILD_DIR | --peer-rev REV | --no-peer]
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Devboxd, sourceDir, waitFor } from '../../devboxd/tests/api/devboxd.mjs';

const argv = process.argv.slice(2);
const opt = (name) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : undefined; };
const N = Number(argv.find((a, i) => /^\d+$/.test(a) && !['--peer', '--peer-rev'].includes(argv[i - 1])) ?? 5);

// Four steps after FROM; the RUN commands are what a devbox runs too.
const commands = [
  'mkdir -p /home/user/app && cd /home/user/app && echo "hello $MODE" > greeting.txt',
  'cd /home/user/app && seq 1 1000 > numbers.txt',
];
const dockerfile = [
  'FROM runloop/starter-x86_64',
  'ENV MODE=bench',
  `RUN ${commands[0]}`,
  'WORKDIR /home/user/app',
  `RUN ${commands[1]}`,
].join('\n');

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const ms = (x) => (Number.isNaN(x) ? '-' : `${x.toFixed(0)} ms`);
const row = (what, ours, peer, target) =>
  console.log(`${what.padEnd(46)} ${String(ours).padEnd(16)} ${String(peer).padEnd(16)} ${target}`);

// The peer's build dir: --peer as given, else REV built once in a temp dir
// (devboxd and the helpers it runs).
function peerBuild() {
  if (argv.includes('--no-peer')) return null;
  if (opt('--peer')) return { name: path.basename(path.resolve(opt('--peer'), '..')), dir: path.resolve(opt('--peer')) };
  const rev = opt('--peer-rev') ?? '244ee15';
  const top = path.join(process.env.TMPDIR ?? '/tmp', `rlmcp-peer-${rev}`);
  const dir = path.join(top, 'build');
  const need = ['devboxd', 'devboxd-agent', 'devboxd-ptyd', 'devboxd-image', 'devboxd-build-runtime', 'devboxd-buildah-base'];
  if (!need.every((f) => existsSync(path.join(dir, 'bin', f)))) {
    console.log(`building the peer ${rev} in ${top} (once)...`);
    rmSync(top, { recursive: true, force: true });
    execFileSync('git', ['clone', '-q', '--no-checkout', sourceDir, top]);
    execFileSync('git', ['-C', top, 'checkout', '-q', rev]);
    execFileSync('cmake', ['-S', top, '-B', dir, '-DCMAKE_BUILD_TYPE=RelWithDebInfo'], { stdio: 'ignore' });
    execFileSync('cmake', ['--build', dir, '-j2', '--target', 'devboxd', 'devboxd-agent', 'devboxd-ptyd',
      'devboxd-build-runtime'], { stdio: 'ignore' });
  }
  return { name: rev, dir };
}

async function build(s, i) {
  const t0 = performance.now();
  const b = await s.client.blueprints.create({ name: `bench-${i}`, dockerfile });
  const done = await waitFor(async () => {
    const r = await s.client.blueprints.retrieve(b.id);
    return ['build_complete', 'failed'].includes(r.status) ? r : null;
  }, { timeoutMs: 900000, stepMs: 20, what: `${s.name} build` });
  if (done.status !== 'build_complete') {
    const logs = (await s.client.blueprints.logs(b.id)).logs.map((e) => e.message).join('\n');
    throw new Error(`${s.name}: build failed\n${logs}`);
  }
  return { id: b.id, ms: performance.now() - t0 };
}

// The RUN steps' commands in a running devbox, as root (a RUN step's user),
// with the step's environment: their execute round trips, summed.
async function direct(s, boxId) {
  let total = 0;
  for (const c of commands) {
    const t0 = performance.now();
    const r = await s.client.devboxes.executeAndAwaitCompletion(boxId,
      { command: `sudo env MODE=bench bash -c '${c.replaceAll("'", "'\\''")}'` });
    total += performance.now() - t0;
    if (r.exit_status !== 0) throw new Error(`${s.name}: ${c}: ${r.stderr}`);
  }
  return total;
}

const peer = peerBuild();
const sides = [{ name: 'ours', engine: new Devboxd() }];
if (peer) {
  const e = new Devboxd();
  e.bin = path.join(peer.dir, 'bin', 'devboxd');
  sides.push({ name: `peer ${peer.name}`, engine: e });
}

try {
  for (const s of sides) {
    await s.engine.start();
    s.client = s.engine.client();
    s.builds = [];
    s.direct = [];
    await build(s, 'warm');
    s.box = (await s.client.devboxes.createAndAwaitRunning({ name: 'bench-direct' })).id;
    await direct(s, s.box);
  }
  for (let i = 0; i < N; i++) {
    for (const s of i % 2 ? sides : [...sides].reverse()) {
      const r = await build(s, i);
      s.builds.push(r.ms);
      s.last = r.id;
      s.direct.push(await direct(s, s.box));
    }
  }
  for (const s of sides) {
    await s.client.devboxes.shutdown(s.box);
    const box = await s.client.devboxes.createAndAwaitRunning({ blueprint_id: s.last });
    const r = await s.client.devboxes.executeAndAwaitCompletion(box.id,
      { command: 'cat /home/user/app/greeting.txt; wc -l < /home/user/app/numbers.txt' });
    if (r.stdout !== 'hello bench\n1000\n') throw new Error(`${s.name}: devbox sees ${JSON.stringify(r.stdout)}`);
    await s.client.devboxes.shutdown(box.id);
  }
  const [ours, other] = sides;
  const col = (f) => (other ? f(other) : '-');
  console.log(`4-step Dockerfile, warm cache, n=${N} each, engines taking turns`);
  row('figure', ours.name, other ? other.name : 'no peer', 'target');
  row('create -> build_complete p50', ms(pct(ours.builds, 0.5)), col((s) => ms(pct(s.builds, 0.5))), '');
  row('  min / max', `${ms(Math.min(...ours.builds))} / ${ms(Math.max(...ours.builds))}`,
    col((s) => `${ms(Math.min(...s.builds))} / ${ms(Math.max(...s.builds))}`), '');
  row('the RUN commands in a devbox p50', ms(pct(ours.direct, 0.5)), col((s) => ms(pct(s.direct, 0.5))), '');
  const over = (s) => pct(s.builds, 0.5) - pct(s.direct, 0.5);
  row('build overhead (p50 build - p50 commands)', ms(over(ours)), col((s) => ms(over(s))), '<= 1000 ms');
} finally {
  for (const s of sides) await s.engine.cleanup();
}
