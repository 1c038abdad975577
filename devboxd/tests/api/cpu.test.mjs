// CPUs by resource size through the official Runloop SDK against a real
// devboxd (runc on the starter image): `nproc` inside is the
// size's CPU count (capped at the machine's), the cgroup's CFS quota is the
// size's CPUs, and devboxes of one CPU spread over the machine's CPUs.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { describe, test } from 'node:test';
import { Devboxd, useEngine } from './devboxd.mjs';

const machine = os.availableParallelism();
const quota = (id) => Number(readFileSync(`/sys/fs/cgroup/cpu/devboxd/${id}/cpu.cfs_quota_us`, 'utf8'));

function suite(name, env) {
  let client;
  const run = async (id, command) => {
    const r = await client.devboxes.executeSync(id, { command }, { timeout: 300000 });
    return { code: r.exit_status, out: r.stdout, err: r.stderr };
  };

  describe(`CPUs follow the resource size (${name})`, () => {
    useEngine(new Devboxd({ env }), (c) => { client = c; });
    const sizes = [
      ['X_SMALL', { resource_size_request: 'X_SMALL' }, 0.5],
      ['SMALL', { resource_size_request: 'SMALL' }, 1],
      ['MEDIUM', { resource_size_request: 'MEDIUM' }, 2],
      ['CUSTOM_SIZE 4 cores', { resource_size_request: 'CUSTOM_SIZE', custom_cpu_cores: 4, custom_gb_memory: 8 }, 4],
    ];
    for (const [label, lp, cpus] of sizes) {
      test(`${label}: nproc ${Math.min(Math.ceil(cpus), machine)}, quota ${cpus} CPUs`, async () => {
        const box = await client.devboxes.createAndAwaitRunning({ launch_parameters: lp },
          { polling: { timeoutMs: 300000 } });
        const r = await run(box.id, 'nproc; python3 -c "import os; print(len(os.sched_getaffinity(0)))"');
        const want = Math.min(Math.ceil(cpus), machine);
        assert.equal(r.out, `${want}\n${want}\n`, r.err);
        assert.equal(quota(box.id), cpus * 100000);
        await client.devboxes.shutdown(box.id);
      });
    }

    test('one-CPU devboxes spread over the machine\'s CPUs', { skip: machine < 2 && 'one CPU here' }, async () => {
      const seen = new Set();
      const boxes = [];
      // Each id picks its CPU; 12 devboxes on one CPU each all landing on
      // the same one of 2 has odds of 1 in 2048.
      for (let i = 0; i < 12 && seen.size < 2; i++) {
        const box = await client.devboxes.createAndAwaitRunning({ launch_parameters: { resource_size_request: 'SMALL' } },
          { polling: { timeoutMs: 300000 } });
        boxes.push(box.id);
        const r = await run(box.id, 'python3 -c "import os; print(*sorted(os.sched_getaffinity(0)))"');
        assert.equal(r.code, 0, r.err);
        seen.add(r.out.trim());
      }
      assert.ok(seen.size >= 2, `every devbox ran on CPU ${[...seen]}`);
      for (const id of boxes) await client.devboxes.shutdown(id);
    });

    test('a command cannot widen its CPUs past the devbox\'s', async () => {
      const box = await client.devboxes.createAndAwaitRunning({ launch_parameters: { resource_size_request: 'SMALL' } },
        { polling: { timeoutMs: 300000 } });
      // The cpuset group holds the devbox's CPUs: asking for every CPU of
      // the machine leaves the command on its one.
      const r = await run(box.id, 'python3 -c "import os\ntry: os.sched_setaffinity(0, range(os.cpu_count()))\n'
        + 'except OSError as e: print(e.errno)\nprint(len(os.sched_getaffinity(0)))" 2>&1');
      assert.match(r.out, /^(22\n)?1\n$/, r.out);
      const cpuset = readFileSync(`/sys/fs/cgroup/cpuset/devboxd/${box.id}/cpuset.cpus`, 'utf8').trim();
      assert.match(cpuset, /^\d+$/, `the devbox's cpuset is ${cpuset}`);
      await client.devboxes.shutdown(box.id);
    });
  });
}

suite('runc', {}); // the defaults: runc on the starter image
