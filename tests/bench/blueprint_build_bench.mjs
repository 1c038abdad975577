// Blueprint build time of a small Dockerfile on a warm cache: buildah (the
// default builder) beside the native builder (RLMCP_BUILDER=native), two
// engines in one run taking turns, so machine load hits both alike. Each
// side builds once first (imports, image cache), then N times; the figure
// is create → build_complete, and a devbox from the last build checks the
// result. Figures only.
//   RLMCP_BUILD_DIR=build node tests/bench/blueprint_build_bench.mjs [N]
import { Devboxd, waitFor } from '../../devboxd/tests/api/devboxd.mjs';

const N = Number(process.argv[2] ?? 5);
const dockerfile = [
  'FROM runloop:runloop/starter-x86_64',
  'ARG GREETING=hi',
  'ENV MODE=bench',
  'USER user',
  'WORKDIR /home/user/app',
  'RUN echo "$GREETING $MODE" > greeting.txt && seq 1 1000 > numbers.txt',
].join('\n');

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const sides = [
  { name: 'buildah', engine: new Devboxd({ env: { RLMCP_BUILDER: 'buildah' } }) },
  { name: 'native', engine: new Devboxd({ env: { RLMCP_BUILDER: 'native' } }) },
];

async function build(s, i) {
  const t0 = performance.now();
  const b = await s.client.blueprints.create({ name: `bench-${i}`, dockerfile, build_args: { GREETING: 'hello' } });
  const done = await waitFor(async () => {
    const r = await s.client.blueprints.retrieve(b.id);
    return ['build_complete', 'failed'].includes(r.status) ? r : null;
  }, { timeoutMs: 900000, stepMs: 50, what: `${s.name} build` });
  if (done.status !== 'build_complete') {
    const logs = (await s.client.blueprints.logs(b.id)).logs.map((e) => e.message).join('\n');
    throw new Error(`${s.name}: build failed\n${logs}`);
  }
  return { id: b.id, ms: performance.now() - t0 };
}

try {
  for (const s of sides) {
    await s.engine.start();
    s.client = s.engine.client();
    s.times = [];
    await build(s, 'warm');
  }
  for (let i = 0; i < N; i++) {
    for (const s of i % 2 ? sides : [...sides].reverse()) {
      const r = await build(s, i);
      s.times.push(r.ms);
      s.last = r.id;
    }
  }
  for (const s of sides) {
    const box = await s.client.devboxes.createAndAwaitRunning({ blueprint_id: s.last });
    const r = await s.client.devboxes.executeAndAwaitCompletion(box.id,
      { command: 'cat /home/user/app/greeting.txt; wc -l < /home/user/app/numbers.txt' });
    if (r.stdout !== 'hello bench\n1000\n') throw new Error(`${s.name}: devbox sees ${JSON.stringify(r.stdout)}`);
    await s.client.devboxes.shutdown(box.id);
  }
  console.log(`small Dockerfile (${dockerfile.split('\n').length} lines), warm cache, n=${N} each, create -> build_complete:`);
  for (const s of sides)
    console.log(`  ${s.name.padEnd(8)} p50 ${pct(s.times, 0.5).toFixed(0)} ms  min ${Math.min(...s.times).toFixed(0)} ms  max ${Math.max(...s.times).toFixed(0)} ms`);
} finally {
  for (const s of sides) await s.engine.cleanup();
}
