// tools_list_tokens.mjs [--peer SRC [--peer-build BUILD]]: what the first tools/list of a
// session costs an agent, in Claude tokens (@anthropic-ai/tokenizer), for
// every shipped deployment in conf/: the tools' names, descriptions and
// input schemas, and the same with their output schemas. With --peer, a
// source tree (e.g. main at an older commit) and its build (default
// SRC/build) are measured beside this one, each with its own conf/ and
// plugins. tools_list_tokens.sh builds the peer from git.
//
//   node tests/bench/tools_list_tokens.mjs --peer /tmp/peer
//
// Each deployment is served over stdio through the official MCP client,
// pointed at an unused loopback Runloop URL so no engine starts: only the
// list is read. The count is over JSON.stringify of the tools array.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const require = createRequire(new URL('../package.json', import.meta.url));
const { countTokens } = require('@anthropic-ai/tokenizer');

const here = path.dirname(fileURLToPath(import.meta.url));
const ours = process.env.RLMCP_SOURCE_DIR ?? path.resolve(here, '../..');
const oursBuild = process.env.RLMCP_BUILD_DIR ?? path.join(ours, 'build');
const args = process.argv.slice(2);
const opt = (name) => (args.indexOf(name) >= 0 ? path.resolve(args[args.indexOf(name) + 1]) : null);
const peer = opt('--peer');
const peerBuild = opt('--peer-build') ?? (peer ? path.join(peer, 'build') : null);

// A copy of the deployment that serves stdio against an unused URL.
function offlineCopy(file, dir) {
  let text = readFileSync(file, 'utf8');
  text = text.replace(/^(\s*)backend:\s*\S+.*$/m, '$1backend: cloud\n$1base_url: http://127.0.0.1:9\n$1api_key: bench-unused-key');
  text = text.replace(/^(\s*)transport:\s*http\b.*$/m, '$1transport: stdio');
  const out = path.join(dir, path.basename(file));
  writeFileSync(out, text);
  return out;
}

async function firstList(build, conf, tmp) {
  const bin = path.join(build, 'bin', 'runloop-mcp');
  const client = new Client({ name: 'tools-list-tokens', version: '1' });
  const transport = new StdioClientTransport({
    command: bin,
    args: ['--config', offlineCopy(conf, tmp)],
    env: { ...process.env, RLMCP_PLUGIN_DIR: path.join(build, 'plugins'),
      RUNLOOP_API_KEY: 'bench-unused-key', RUNLOOP_BASE_URL: 'http://127.0.0.1:9' },
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (d) => { err += d; });
  try {
    await client.connect(transport);
    const r = await client.request({ method: 'tools/list', params: {} },
      (await import('@modelcontextprotocol/sdk/types.js')).ListToolsResultSchema);
    return r.tools;
  } catch (e) {
    throw new Error(`${bin} --config ${conf}: ${e.message}\n${err}`);
  } finally {
    await client.close().catch(() => {});
  }
}

function measure(tools) {
  const core = tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
  const withOut = tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema,
    ...(t.outputSchema ? { outputSchema: t.outputSchema } : {}) }));
  return {
    n: tools.length,
    bytes: Buffer.byteLength(JSON.stringify({ tools })),
    tokens: countTokens(JSON.stringify(core)),
    tokensOut: countTokens(JSON.stringify(withOut)),
  };
}

async function measureTree(tree, build) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-tokens-'));
  const res = new Map();
  try {
    for (const f of readdirSync(path.join(tree, 'conf')).filter((x) => x.endsWith('.yaml')).sort()) {
      res.set(f, measure(await firstList(build, path.join(tree, 'conf', f), tmp)));
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return res;
}

const a = await measureTree(ours, oursBuild);
const b = peer && existsSync(path.join(peerBuild, 'bin', 'runloop-mcp')) ? await measureTree(peer, peerBuild) : null;
if (peer && !b) console.error(`no runloop-mcp in ${peerBuild}/bin: peer column left empty`);
const fmt = (m, k) => (m ? String(m[k]) : '-');
console.log('first tools/list, Claude tokens (@anthropic-ai/tokenizer); "+out": with output schemas');
console.log(`${'deployment'.padEnd(18)} ${'tools'.padStart(5)} ${'bytes'.padStart(7)} ${'tokens'.padStart(7)} ${'+out'.padStart(7)}` +
  ` | peer: ${'tools'.padStart(5)} ${'bytes'.padStart(7)} ${'tokens'.padStart(7)} ${'+out'.padStart(7)}`);
for (const name of new Set([...a.keys(), ...(b ? b.keys() : [])])) {
  const x = a.get(name);
  const y = b?.get(name);
  console.log(`${name.padEnd(18)} ${fmt(x, 'n').padStart(5)} ${fmt(x, 'bytes').padStart(7)} ${fmt(x, 'tokens').padStart(7)} ${fmt(x, 'tokensOut').padStart(7)}` +
    ` |       ${fmt(y, 'n').padStart(5)} ${fmt(y, 'bytes').padStart(7)} ${fmt(y, 'tokens').padStart(7)} ${fmt(y, 'tokensOut').padStart(7)}`);
}
