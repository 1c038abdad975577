// The host's validator through build/.../schema_cases (see schema_cases.c):
// one process answers a batch of {schema, data} cases, in order.
import { spawnSync } from 'node:child_process';

export function hostValidate(cases) {
  const bin = process.env.RLMCP_SCHEMA_CASES;
  if (!bin) throw new Error('RLMCP_SCHEMA_CASES is not set (run through ctest)');
  const input = cases.map((c) => JSON.stringify({ schema: c.schema, data: c.data }) + '\n').join('');
  const r = spawnSync(bin, [], { input, maxBuffer: 256 * 1024 * 1024, timeout: 100_000 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`schema_cases exited ${r.status}: ${r.stderr}`);
  const lines = r.stdout.toString().split('\n').filter((l) => l !== '');
  if (lines.length !== cases.length) {
    throw new Error(`schema_cases answered ${lines.length} of ${cases.length} cases`);
  }
  return lines.map((l) => JSON.parse(l));
}
