// End-to-end: the first call on a new machine. An MCP client (the official
// SDK over stdio) launches scripts/run, as a client's config does, on an
// EMPTY image cache, from a process that holds many descriptors, and calls
// run_python at once. While the universal image builds (minutes), each call
// hears how far the build is as progress and, when its wait ends first,
// answers "the universal image is being prepared (N%), call again" -- never
// a failure; a later call prints 42. No devbox ends in `failure`.
//
// scripts/run serves <source>/build, so this runs in the pass that tests
// that build (the plain one) and is skipped in the others.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { buildDir, sourceDir } from './lib/host.mjs';

const conf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'first-call.yaml');
const servesThisBuild = realpathSync(buildDir) === realpathSync(path.join(sourceDir, 'build'));
const BOUND_MS = 40 * 60 * 1000; // two image builds on a loaded 2-core machine
const PREPARING = /^the universal image is being prepared \((\d+%[^)]*|starting)\), call again$/;

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-first-call-'));
const state = path.join(tmp, 'state');
const cache = path.join(tmp, 'images');

function listDevboxes() {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: path.join(state, 'devboxd.sock'), method: 'GET',
      path: '/v1/devboxes?limit=100' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve(JSON.parse(body).devboxes));
    });
    req.on('error', reject);
    req.end();
  });
}

after(() => {
  const env = { ...process.env, RLMCP_STATE_DIR: state };
  spawnSync(path.join(sourceDir, 'build', 'bin', 'runloop-mcp'), ['engine', 'stop'],
    { env, stdio: 'ignore', timeout: 90000 });
  // Builds still running (the chain scripts/run started) hold the cache.
  spawnSync('pkill', ['-f', `${cache}`], { stdio: 'ignore' });
  rmSync(tmp, { recursive: true, force: true });
});

describe('the first call on a new machine', { skip: !servesThisBuild && 'scripts/run serves <source>/build, another pass tests it' }, () => {
  test('run_python right after scripts/run on an empty image cache', { timeout: BOUND_MS + 120000 }, async () => {
    // fds 3-15 held open and inheritable, as a client or shell may leave
    // them; scripts/run, the host and devboxd pass them on.
    const held = Array.from({ length: 13 }, (_, i) => `${i + 3}</dev/null`).join(' ');
    const transport = new StdioClientTransport({
      command: 'bash',
      args: ['-c', `exec ${held} "$0" "$@"`, path.join(sourceDir, 'scripts', 'run'), '--config', conf],
      env: { ...process.env, RLMCP_IMAGE_CACHE: cache, RLMCP_TEST_STATE_DIR: state,
        RUNLOOP_API_KEY: '', RUNLOOP_BASE_URL: '' },
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d) => { stderr += d; });
    const client = new Client({ name: 'first-call-test', version: '1' });
    const t0 = Date.now();
    await client.connect(transport);
    const progress = [];
    const answers = [];
    let result = null;
    try {
      while (Date.now() - t0 < BOUND_MS) {
        const r = await client.callTool({ name: 'run_python', arguments: { code: 'print(6*7)' } }, undefined, {
          timeout: 600000, resetTimeoutOnProgress: true,
          onprogress: (p) => progress.push(p.message ?? ''),
        });
        if (!r.isError) { result = r; break; }
        const err = JSON.parse(r.content[0].text).error;
        answers.push(err.message);
        assert.equal(err.code, 'devbox_not_ready', `${err.code}: ${err.message}\n${stderr}`);
        assert.match(err.message, PREPARING);
        await new Promise((res) => setTimeout(res, 3000));
      }
      assert.ok(result, `no result within ${BOUND_MS} ms; answers: ${answers.join(' | ')}\n${stderr}`);
      const out = result.structuredContent ?? JSON.parse(result.content[0].text);
      assert.equal(out.exit_code ?? out.exit_status, 0, JSON.stringify(out));
      assert.equal(out.stdout, '42\n');
      console.log(`first run_python: ${Math.round((Date.now() - t0) / 1000)} s after launch, `
        + `${answers.length} "being prepared" answer(s), ${progress.length} progress notification(s)`);
      // The build outlasts a call's 20 s wait: the first call said so.
      assert.ok(answers.length >= 1, 'the first call did not wait for the image');
      // The build was reported while it ran.
      assert.ok(progress.some((m) => /the universal image is being prepared/.test(m)),
        `no progress told of the build: ${JSON.stringify(progress.slice(0, 5))}`);
      for (const d of await listDevboxes()) assert.notEqual(d.status, 'failure', JSON.stringify(d));
      // The engine's builder got only its own descriptors: the build worked.
      assert.doesNotMatch(readFileSync(path.join(state, 'devboxd.log'), 'utf8'), /Bad fd number/);
      assert.ok(readdirSync(cache).some((n) => n.startsWith('universal-')), 'no universal image in the cache');
    } finally {
      await client.close();
    }
  });
});
