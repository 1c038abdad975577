// schema_bench.mjs BENCH_BINARY: ns per validation of pattern-constrained
// arguments, the host's validator (schema_bench.c) beside ajv (2020-12,
// compiled once, V8's regular expressions) on the same schema and value.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(new URL('../package.json', import.meta.url));
const Ajv2020 = require('ajv/dist/2020').default;
const bin = process.argv[2];
const long = 'x'.repeat(3000);
const CASES = [
  ['two id patterns', {
    type: 'object', required: ['devbox_id'],
    properties: {
      devbox_id: { type: 'string', pattern: '^dbx_[A-Za-z0-9]{8,64}$' },
      name: { type: 'string', pattern: '^[a-z][a-z0-9_-]{0,62}$' },
    },
  }, { devbox_id: 'dbx_3f9a8c7d6e5b4a39', name: 'my-box_1' }, 200000],
  ['uuid pattern', {
    type: 'object', properties: { uuid: { type: 'string', pattern: '^(?:[0-9a-f]{8}-){4}[0-9a-f]{12}$' } },
  }, { uuid: '0123abcd-0123abcd-0123abcd-0123abcd-0123456789ab' }, 200000],
  ['3000 ASCII chars', {
    type: 'object', properties: { text: { type: 'string', pattern: '^[^\\n]*$' } },
  }, { text: long }, 20000],
  ['3000 chars + é', {
    type: 'object', properties: { text: { type: 'string', pattern: '^[^\\n]*$' } },
  }, { text: long + 'é' }, 20000],
  ['(a+)+$ on 25 a + !', {
    type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } },
  }, { s: 'a'.repeat(25) + '!' }, 2],
];

const ajv = new Ajv2020({ strict: false });
console.log('case                      host ns   ajv ns   (per validation)');
for (const [name, schema, value, n] of CASES) {
  const r = spawnSync(bin, [JSON.stringify(schema), JSON.stringify(value), String(n)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${bin}: ${r.stderr}`);
  const [hostValid, hostNs] = r.stdout.trim().split(' ');
  const validate = ajv.compile(schema);
  let ok = validate(value);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) ok = validate(value);
  const ajvNs = Number(process.hrtime.bigint() - t0) / n;
  const agree = (hostValid === 'valid') === ok ? '' : '  (answers differ!)';
  console.log(`${name.padEnd(24)} ${hostNs.padStart(9)} ${ajvNs.toFixed(0).padStart(8)}${agree}`);
}
