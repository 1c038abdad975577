// Differential test of "pattern": the host's validator and ajv (JSON Schema
// 2020-12, patterns as ECMA-262 with the u flag) must agree on which
// patterns are valid and, for each valid one, on which strings match.
// Known, documented differences are listed in DIFFERENT with the reason, and
// the test checks they still are what the list says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { hostValidate } from './host.mjs';

const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020').default;

// Strings every pattern is tried against (no NUL: the host's values are C
// strings; no lone surrogates: they are not UTF-8).
const POOL = [
  '', 'a', 'A', 'abc', 'aBc', 'abcabc', 'aaaa', 'ab', 'ba', 'a\n', '\na', 'a\nb',
  'a\r\nb', 'a\u2028b', '\u2029', ' ', '\t', '\v', '\f', '\u00a0', '\ufeff',
  '\u3000', '\u1680', '\u0085', 'x y', '123', '0', '-1.5e3', '\u0663\u0664',
  '\uff11', 'é', 'e\u0301', 'ß', 'Σσς', 'ǅ', '日本語', '😀', 'a😀b', '😀😀',
  '\u{10ffff}', '_', '-', 'a-b', 'a_b', 'a.b', 'a*b', 'a+b', '(a)', '[a]',
  '{a}', 'a|b', '^a$', '$', '\\', '\\d', '/', 'aaaa!', 'dbx_123', 'abab',
  'word', 'a word here', 'swordfish', 'foo@example.com', 'ab12', '2026-12-02',
  'A1b2C3', 'café', 'naïve', 'Ǆ', 'İ', 'ﬀ',
];

// Patterns, each with strings of its own beside the pool.
const PATTERNS = [
  ['^a*$', ['aaa', 'aab']],
  ['b+', ['abbbc', 'ac']],
  ['^.$', ['\r', '\u2028', '\u2029', '\u0085', '😀']],
  ['^.{2}$', ['éé', 'é', '😀😀']],
  ['^[^é]$', ['é', 'è', 'a']],
  ['^a.b$', ['a\nb', 'a\rb', 'axb']],
  ['^\\w+\\s\\S+$', ['ab_9 x!', 'ab\u00a0x', 'é x']],
  ['^\\W$', ['é', '!', 'a']],
  ['^\\D\\d$', ['x1', 'x\u0661']],
  ['^[\\d.]+$', ['1.5', '1,5']],
  ['^[\\]a]+$', [']a]', 'b']],
  ['^[-a]+$', ['-a', 'b']],
  ['^[a-]+$', ['a-']],
  ['^[\\^]$', ['^']],
  ['^[^^]$', ['^', 'a']],
  ['^[\\[\\]]+$', ['[]', '[', 'a']],
  ['^[a-z\\-]+$', ['a-b', 'A']],
  ['^\\.\\*\\+\\?\\(\\)\\{\\}\\|\\$\\^\\/$', ['.*+?(){}|$^/']],
  ['^\\u00e9\\x41$', ['éA']],
  ['^\\ud83d\\ude00$', ['😀', '😁']],
  ['^[\\ud83d\\ude00-\\ud83d\\ude4f]$', ['😀', '🙏', '🚀']],
  ['^\\u{1F600}$', ['😀']],
  ['^[\\u00e0-\\u00ff]$', ['é', 'e']],
  ['^[a-\\u00ff]+$', ['zé', 'Ā']],
  ['^\\t$', ['\t']],
  ['^[\\\\]$', ['\\']],
  ['^[\\s\\S]+$', ['a \né']],
  ['^[a\\D]$', ['x', '5']],
  ['^[5\\D]$', ['5', '6']],
  ['^[\\W]{2}$', ['!?', 'a?']],
  ['^[\\S]$', ['\u3000', '\ufeff', 'x', ' ']],
  ['^[^a\\S]$', ['\u3000', 'b', ' ', 'a']],
  ['^[^\\s]$', ['\u00a0', 'x']],
  ['^[\\s\\d]+$', ['1 2\u3000']],
  ['^\\s+$', ['\u2000\u200a\u202f\u205f']],
  ['^(?:ab)+$', ['abab', 'aba']],
  ['^(?<word>ab){2}$', ['abab']],
  ['^a{2,3}?b*?$', ['aab', 'aaaab']],
  ['^(cat|dog)s?$', ['dogs', 'cow']],
  ['^a{2}$', ['aaa', 'aa']],
  ['^[A-Za-z0-9_.-]{1,128}$', ['run_code.v2', 'a b']],
  ['^(?:[a-z]{1,10}\\.){0,50}$', ['ab.cd.']],
  ['^(?:[0-9a-f]{8}-){4}[0-9a-f]{12}$', ['0123abcd-0123abcd-0123abcd-0123abcd-0123456789ab']],
  ['^(a|b)*?c+?$', ['abcc']],
  ['^(?=.*\\d)(?!.*x).{3}$', ['ab1', 'ax1', 'abc']],
  ['(?<=\\$)\\d+', ['cost $12', '12']],
  ['(?<!\\$)\\b\\d+', ['$12', '12']],
  ['^(a+)b\\1$', ['aabaa', 'aaba']],
  ["^(?<q>['\"]).*\\k<q>$", ["'x'", '"x\'']],
  ['^(?:(a)|b)\\1$', ['b', 'aa', 'ba']],
  ['\\1(a)', ['a']],
  ['\\bword\\b', ['a word here', 'swordfish']],
  ['\\Bor\\B', ['word', 'or']],
  ['^\\p{L}+$', ['été', 'a1']],
  ['^\\P{L}$', ['a', '1']],
  ['^\\p{Letter}+$', ['été']],
  ['^\\p{Lu}\\p{Ll}+$', ['Ébc', 'ébc']],
  ['^\\p{Nd}+$', ['\u0663\u0664', '12']],
  ['^\\p{Script=Greek}+$', ['Σσς', 'abc']],
  ['^\\p{General_Category=Decimal_Number}$', ['7']],
  ['a[]', ['a']],
  ['^a[^]b$', ['a\nb']],
  ['^[\\u4e00-\\u9fff]+$', ['日本']],
  ['^.{2,6665}$', ['ab']],
  ['^a$', ['a\n']],
  ['^\\v\\cJ\\0?$', ['\v\n']],
  ['^[[:a]+$', [':a[', 'b']],
  ['^[[:alph]+$', ['b', ':[', 'x']],
  ['^\\/\\d+$', ['/12']],
  ['^[\\b]$', ['\b']],
  ['^\\x41\\u0042\\u{43}$', ['ABC']],
  ['a{0}b', ['b']],
  ['^(?:a|)$', ['']],
  ['()', ['x']],
  ['^$', ['', '\n']],
  ['[^\\d\\s]', ['1 ', 'x']],
  ['^[\\w-]+@[\\w-]+(\\.[\\w-]+)+$', ['foo@example.com', 'foo@bar']],
  ['^\\d{4}-\\d{2}-\\d{2}$', ['2026-12-02', '2026-1-02']],
  ['^[^\\x00-\\x7f]+$', ['日本', 'a']],
  ['(?:)', ['']],
  ['^(?:(?:a)|(?:b))+?$', ['abba']],
];

// Patterns the two read differently, on purpose or by a PCRE2 limit.
const DIFFERENT = [
  // Stricter than ECMA-262: refused by the host, accepted by ajv.
  { pattern: '\\ud800', host: 'rejects', why: 'a lone surrogate is not a UTF-8 code point' },
  { pattern: '[\\ud800-\\udfff]', host: 'rejects', why: 'a lone surrogate is not a UTF-8 code point' },
  { pattern: '(?<=a+)b', host: 'rejects', why: 'PCRE2 10.42 needs a bounded lookbehind' },
  // Laxer than ECMA-262 with the u flag: accepted by the host, refused by ajv.
  { pattern: '\\-', host: 'accepts', why: 'any escaped ASCII punctuation is a literal, as before PCRE2' },
  { pattern: '\\:', host: 'accepts', why: 'any escaped ASCII punctuation is a literal' },
  { pattern: 'a]', host: 'accepts', why: "a lone ']' is a literal" },
  { pattern: 'a}', host: 'accepts', why: "a lone '}' is a literal" },
  { pattern: '[[:alpha:]]', host: 'accepts', why: "a lone ']' is a literal (after the class [[:alpha:])" },
  { pattern: '(?=a)*', host: 'accepts', why: 'PCRE2 allows a quantified lookahead' },
];

// Refused by both.
const INVALID = [
  '\\q', 'a{', 'a{x}', '{2}', 'a{,5}', '(?i)a', '(?>a)', 'a++', 'a*?+', 'a{2}{3}', '*a',
  '^?', '\\01', '[\\1]', '\\c1', '\\u12', '\\x4', '\\u{110000}', '(a', 'a)', '[a',
  '[z-a]', 'a{3,2}', '\\', '(?<n>a)(?<n>b)', '\\k<nope>', '(a)\\2', '\\p{Nope}', '\\p',
  '(*UCP)a', '\\Aa', 'a\\z', '\\Qa\\E', '\\h', '(?#c)', '(?|a)', '(?P<n>a)', '[\\d-z]',
];

function ajvAnswers(ajv, pattern, strings) {
  let validate;
  try {
    validate = ajv.compile({ type: 'string', pattern });
  } catch (e) {
    return { checked: false, error: e.message };
  }
  return { checked: true, valid: strings.map((s) => validate(s)) };
}

function hostAnswers(pattern, strings) {
  const schema = { pattern };
  const answers = hostValidate(strings.map((data) => ({ schema, data })));
  if (!answers[0].checked) return { checked: false, error: answers[0].error };
  return { checked: true, valid: answers.map((a) => a.valid), errors: answers.map((a) => a.error) };
}

const ajv = new Ajv2020({ strict: false });

test('ajv compiles patterns with the u flag (the mode these answers assume)', () => {
  assert.equal(ajv.opts.unicodeRegExp, true);
});

test('valid patterns: the host and ajv agree on every string', () => {
  const disagreements = [];
  const runs = PATTERNS.map(([pattern, own]) => ({ pattern, strings: [...new Set([...own, ...POOL])] }));
  // One batch through the host for every pattern and string.
  const answers = hostValidate(runs.flatMap((r) => r.strings.map((data) => ({ schema: { pattern: r.pattern }, data }))));
  let next = 0;
  let compared = 0;
  for (const { pattern, strings } of runs) {
    const h = answers.slice(next, next + strings.length);
    next += strings.length;
    const a = ajvAnswers(ajv, pattern, strings);
    assert.ok(a.checked, `ajv refuses /${pattern}/: ${a.error} (fix the test's pattern list)`);
    if (!h[0].checked) {
      disagreements.push(`/${pattern}/: host refuses it: ${h[0].error}`);
      continue;
    }
    strings.forEach((s, i) => {
      compared++;
      if (a.valid[i] !== h[i].valid) {
        disagreements.push(`/${pattern}/ on ${JSON.stringify(s)}: ajv ${a.valid[i]}, host ${h[i].valid} ${h[i].error}`);
      }
    });
  }
  assert.deepEqual(disagreements, []);
  console.log(`${PATTERNS.length} patterns, ${compared} pattern/string pairs compared`);
});

test('invalid patterns: refused by both', () => {
  const wrong = [];
  for (const pattern of INVALID) {
    const a = ajvAnswers(ajv, pattern, ['a']);
    const h = hostAnswers(pattern, ['a']);
    if (a.checked) wrong.push(`/${pattern}/: ajv accepts it (fix the test's list)`);
    if (h.checked) wrong.push(`/${pattern}/: the host accepts it`);
    else if (!/is not supported: .+ \(patterns are ECMA-262/.test(h.error)) {
      wrong.push(`/${pattern}/: the host's message does not say why: ${h.error}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test('known differences are still what the list says', () => {
  const wrong = [];
  for (const d of DIFFERENT) {
    const a = ajvAnswers(ajv, d.pattern, ['a']);
    const h = hostAnswers(d.pattern, ['a']);
    const hostAccepts = h.checked;
    if (hostAccepts !== (d.host === 'accepts')) wrong.push(`/${d.pattern}/: host ${hostAccepts ? 'accepts' : 'rejects'} (${d.why})`);
    if (a.checked === hostAccepts) wrong.push(`/${d.pattern}/: ajv now agrees with the host; drop it from DIFFERENT`);
  }
  assert.deepEqual(wrong, []);
});
