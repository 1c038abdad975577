// The host's JSON Schema validator against the official JSON-Schema-Test-Suite
// (draft 2020-12, the dialect the host implements; data in suite/).
//
// Every file of the suite's tests/draft2020-12/ is either run (RUN, copied
// into suite/) or listed in SKIPPED with the reason. In a file that runs,
// every case must give the suite's answer, except the groups listed in
// REJECTED: schemas the host refuses at registration by design, each with
// the reason and the message the host must give. A group refused that is
// not listed, or listed but accepted, fails the test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { hostValidate } from './host.mjs';

const DRAFT = 'draft2020-12';
const DIR = new URL(`./suite/${DRAFT}/`, import.meta.url);

const RUN = [
  'additionalProperties', 'allOf', 'anyOf', 'boolean_schema', 'const', 'contains',
  'content', 'default', 'dependentRequired', 'dependentSchemas', 'enum',
  'exclusiveMaximum', 'exclusiveMinimum', 'format', 'if-then-else',
  'infinite-loop-detection', 'items', 'maxContains', 'maxItems', 'maxLength',
  'maxProperties', 'maximum', 'minContains', 'minItems', 'minLength',
  'minProperties', 'minimum', 'multipleOf', 'not', 'oneOf', 'pattern',
  'patternProperties', 'prefixItems', 'properties', 'propertyNames', 'ref',
  'required', 'type', 'uniqueItems',
  'optional/bignum', 'optional/ecmascript-regex', 'optional/non-bmp-regex',
  'optional/no-schema', 'optional/refOfUnknownKeyword',
].map((f) => `${f}.json`);

const NOT_IMPLEMENTED = 'refused at registration by design (docs/schema.md, "Rejected at registration")';
const SKIPPED = {
  'anchor.json': `$anchor: $ref resolves JSON pointers only; ${NOT_IMPLEMENTED}`,
  'defs.json': 'validates $defs against the remote 2020-12 metaschema; remote $ref is not loaded',
  'dynamicRef.json': `$dynamicRef/$dynamicAnchor ${NOT_IMPLEMENTED}`,
  'refRemote.json': `$ref to other documents: ${NOT_IMPLEMENTED}`,
  'unevaluatedItems.json': `unevaluatedItems: ${NOT_IMPLEMENTED}`,
  'unevaluatedProperties.json': `unevaluatedProperties: ${NOT_IMPLEMENTED}`,
  'vocabulary.json': '$vocabulary and custom metaschemas: the validation vocabulary always applies',
  'optional/anchor.json': `$anchor: ${NOT_IMPLEMENTED}`,
  'optional/cross-draft.json': `$ref to documents of other drafts: ${NOT_IMPLEMENTED}`,
  'optional/dependencies-compatibility.json': `draft-07 "dependencies": ${NOT_IMPLEMENTED}`,
  'optional/dynamicRef.json': `$dynamicRef: ${NOT_IMPLEMENTED}`,
  'optional/float-overflow.json': 'numbers are IEEE doubles: 1e308 / 0.5 overflows (optional behaviour)',
  'optional/format-assertion.json': 'format is an annotation, never asserted (docs/schema.md)',
  'optional/id.json': `$id inside a subschema: ${NOT_IMPLEMENTED}`,
  'optional/unknownKeyword.json': `$id inside a subschema: ${NOT_IMPLEMENTED}`,
  'optional/format/': 'format is an annotation, never asserted (docs/schema.md)',
};

// Groups of a file that runs whose schema the host refuses, by design.
const REMOTE = { why: 'a $ref to another document', match: /\$ref '.*' is not supported: only references inside this schema/ };
const ANCHOR = { why: 'a $ref to an anchor', match: /anchors are not supported/ };
const SUB_ID = { why: '$id inside a subschema', match: /"\$id" inside a subschema is not supported/ };
const UNEVALUATED = { why: 'unevaluatedProperties', match: /"unevaluatedProperties" is not supported/ };
const REJECTED = {
  'boolean_schema.json': {
    "boolean schema 'true'": { why: 'a tool schema must be an object (true/false work as subschemas)', match: /the schema must be a JSON object/ },
    "boolean schema 'false'": { why: 'a tool schema must be an object (true/false work as subschemas)', match: /the schema must be a JSON object/ },
  },
  'enum.json': {
    'empty enum': { why: 'no value could be valid', match: /"enum" must be a non-empty array/ },
  },
  'minContains.json': {
    'maxContains < minContains': { why: 'contradictory limits: no value could be valid', match: /"minContains" 3 is greater than "maxContains" 1/ },
  },
  'not.json': {
    "collect annotations inside a 'not', even if collection is disabled": UNEVALUATED,
  },
  'ref.json': {
    'remote ref, containing refs itself': REMOTE,
    'Recursive references between schemas': REMOTE,
    'ref creates new scope when adjacent to keywords': UNEVALUATED,
    'refs with relative uris and defs': SUB_ID,
    'relative refs with absolute uris and defs': SUB_ID,
    '$id must be resolved against nearest parent, not just immediate parent': SUB_ID,
    'order of evaluation: $id and $ref': REMOTE,
    'order of evaluation: $id and $anchor and $ref': ANCHOR,
    'order of evaluation: $id and $ref on nested schema': REMOTE,
    'simple URN base URI with $ref via the URN': REMOTE,
    'URN base URI with URN and JSON pointer ref': REMOTE,
    'URN base URI with URN and anchor ref': REMOTE,
    'URN ref with nested pointer ref': REMOTE,
    'ref to if': REMOTE,
    'ref to then': REMOTE,
    'ref to else': REMOTE,
    'ref with absolute-path-reference': SUB_ID,
  },
};

function suiteFiles() {
  const top = readdirSync(DIR, { withFileTypes: true });
  const files = top.filter((d) => d.isFile()).map((d) => d.name);
  const optional = readdirSync(new URL('optional/', DIR)).map((f) => `optional/${f}`);
  return [...files, ...optional].sort();
}

test(`the copied suite files are exactly the ones run (${DRAFT})`, () => {
  assert.deepEqual(suiteFiles(), [...RUN].sort());
  for (const f of RUN) assert.ok(!(f in SKIPPED), `${f} is both run and skipped`);
  for (const f of Object.keys(REJECTED)) assert.ok(RUN.includes(f), `${f} in REJECTED is not run`);
});

for (const file of RUN) {
  test(file, () => {
    const groups = JSON.parse(readFileSync(new URL(file, DIR), 'utf8'));
    const cases = [];
    for (const g of groups) for (const t of g.tests) cases.push({ g, t, schema: g.schema, data: t.data });
    const answers = hostValidate(cases);
    const expectRejected = REJECTED[file] ?? {};
    const rejected = new Map();
    const wrong = [];
    answers.forEach((a, i) => {
      const { g, t } = cases[i];
      if (a.bad_input) throw new Error(`${file}: schema_cases: ${a.bad_input}`);
      if (!a.checked) {
        rejected.set(g.description, a.error);
        return;
      }
      if (a.valid !== t.valid) {
        wrong.push(`${g.description} / ${t.description}: suite says ${t.valid ? 'valid' : 'invalid'}, ` +
                   `host says ${a.valid ? 'valid' : `invalid (${a.error})`}`);
      }
    });
    assert.deepEqual(wrong, [], `${wrong.length} cases disagree with the suite`);
    const unexpected = [...rejected.keys()].filter((d) => !(d in expectRejected));
    assert.deepEqual(unexpected.map((d) => `${d}: ${rejected.get(d)}`), [],
                     'schemas refused at registration without being listed in REJECTED');
    for (const [desc, { why, match }] of Object.entries(expectRejected)) {
      assert.ok(rejected.has(desc), `"${desc}" is listed as refused (${why}) but the host accepts it`);
      assert.match(rejected.get(desc), match, `"${desc}" refused for another reason than: ${why}`);
    }
  });
}

// Not run (see SKIPPED): printed so a run's log shows what is not covered.
for (const [f, why] of Object.entries(SKIPPED)) console.log(`skipped ${DRAFT}/${f}: ${why}`);
