// Measurements shared by the devboxd benchmarks (devboxd_bench.mjs,
// devboxd_runtime_bench.mjs): percentiles, create -> running one at a time,
// and execute "true" on one devbox.

export const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
export const ms = (x) => `${x.toFixed(1)} ms`;

// n create_and_await_running calls one after the other (each devbox shut
// down before the next); the latencies in ms.
export async function createLatencies(client, n) {
  const create = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const b = await client.devboxes.createAndAwaitRunning({});
    create.push(performance.now() - t0);
    if (b.status !== 'running') throw new Error(`devbox ${b.id} is ${b.status}`);
    await client.devboxes.shutdown(b.id);
  }
  return create;
}

// n executions of "true" on devbox id through client; the latencies in ms.
export async function execLatencies(client, id, n, label = 'b') {
  const lat = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await client.devboxes.execute(id, { command: 'true', command_id: `${label}-${i}` });
    lat.push(performance.now() - t0);
    if (r.status !== 'completed' || r.exit_status !== 0) throw new Error('execute failed');
  }
  return lat;
}
