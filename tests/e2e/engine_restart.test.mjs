// End-to-end: a local engine the host started dies. The next call is told
// at once (`unavailable`, no retry schedule), the host starts the engine
// again and says so in its log, and calls work again once it answers.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { buildDir, hostBin, pluginDir, sourceDir, waitFor } from './lib/host.mjs';

const conf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'plugins-local.yaml');
const devboxdBin = path.join(buildDir, 'bin', 'devboxd');
const LONG = { timeout: 240000 };

const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };

function enginePid(state) {
  const f = path.join(state, 'devboxd.pid');
  if (!existsSync(f)) return null;
  const m = readFileSync(f, 'utf8').match(/^pid (\d+)$/m);
  return m ? Number(m[1]) : null;
}

describe('a dead local engine', () => {
  let tmp;
  let state;
  let client;
  let hostErr = '';
  let hostErrEnded = false;

  before(async () => {
    for (const f of [hostBin, devboxdBin, path.join(pluginDir, 'rlmcp_lifecycle.so')]) {
      if (!existsSync(f)) throw new Error(`${f} is missing: build first (RLMCP_BUILD_DIR=${buildDir})`);
    }
    tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-restart-'));
    state = path.join(tmp, 'state');
    const transport = new StdioClientTransport({
      command: hostBin,
      args: ['--config', conf],
      env: { PATH: process.env.PATH, HOME: tmp, RLMCP_PLUGIN_DIR: pluginDir, RLMCP_TEST_STATE_DIR: state, RLMCP_DEVBOXD_WAIT_MS: '120000' },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (d) => { hostErr += d; });
    transport.stderr?.on('end', () => { hostErrEnded = true; });
    client = new Client({ name: 'restart-e2e', version: '1' });
    try {
      await client.connect(transport);
    } catch (e) {
      throw new Error(`host did not start: ${e.message}\n${hostErr}`);
    }
  });

  after(async () => {
    try { await client?.close(); } catch { /* gone */ }
    const pid = state ? enginePid(state) : null;
    if (pid && alive(pid)) {
      process.kill(pid, 'SIGTERM');
      await waitFor(() => !alive(pid), 30000, 'devboxd to stop');
    }
    if (tmp) rmSync(tmp, { recursive: true, force: true });
    await waitFor(() => hostErrEnded, 15000, 'the host to exit');
    assert.doesNotMatch(hostErr, /AddressSanitizer|LeakSanitizer|runtime error/, hostErr);
  });

  it('is reported at once, restarted by the host, and serves again', LONG, async () => {
    const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 60000 });
    const first = await call('list_devboxes', {});
    assert.notEqual(first.isError, true, JSON.stringify(first));
    const old = enginePid(state);
    assert.ok(old, 'the host started devboxd and it wrote its pid');
    process.kill(old, 'SIGKILL');
    await waitFor(() => !alive(old), 30000, 'devboxd to die');

    const down = await call('list_devboxes', {});
    assert.equal(down.isError, true, JSON.stringify(down));
    const e = JSON.parse(down.content[0].text).error;
    assert.equal(e.code, 'unavailable');
    assert.match(e.message, /\(1 attempt\)|unreachable for/);

    await waitFor(() => /devboxd \(pid \d+\), started by this host for .* exited; started it again \(pid \d+\)/.test(hostErr),
      30000, 'the restart log line');
    const back = await waitFor(async () => {
      const r = await call('list_devboxes', {});
      return r.isError ? null : r;
    }, 120000, 'calls to work again');
    assert.ok(Array.isArray(back.structuredContent.devboxes));
    const now = enginePid(state);
    assert.ok(now && now !== old && alive(now), `a new devboxd (pid ${now}) runs`);
  });
});
