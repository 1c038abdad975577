// End-to-end: each of the 11 run_<language> tools, through the built host
// and the official MCP SDK client over stdio, against a real devboxd whose
// devboxes run on the universal image, named by each tool's blueprint in the
// deployment (conf/languages-local.yaml). Each program prints a line computed at run time; the
// devbox needs no network for any of them.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { buildDir, hostBin, pluginDir, sourceDir, waitFor } from './lib/host.mjs';

const devboxdBin = path.join(buildDir, 'bin', 'devboxd');
const conf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'languages-local.yaml');
const LONG = { timeout: 600000 };

// Each prints "<language> 42" (6*7 computed by the language itself).
const programs = {
  python: 'print("python", 6 * 7)\n',
  nodejs: 'console.log("nodejs", 6 * 7);\n',
  deno: 'const n: number = 6 * 7;\nconsole.log("deno", n);\n',
  go: 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("go", 6*7) }\n',
  rust: 'fn main() { println!("rust {}", 6 * 7); }\n',
  java: 'public class Main { public static void main(String[] a) { System.out.println("java " + 6 * 7); } }\n',
  cpp: '#include <iostream>\nint main() { std::cout << "cpp " << 6 * 7 << std::endl; }\n',
  c: '#include <stdio.h>\nint main(void) { printf("c %d\\n", 6 * 7); return 0; }\n',
  ruby: 'puts "ruby #{6 * 7}"\n',
  php: '<?php echo "php ", 6 * 7, "\\n";\n',
  bash: 'echo "bash $((6 * 7))"\n',
};

function ping(sock) {
  return new Promise((resolve) => {
    const req = http.request({ socketPath: sock, method: 'GET', path: '/v1/devboxes?limit=1' }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

describe('run_<language> tools end to end (local engine, universal image)', () => {
  let tmp;
  let engine;
  let engineExit;
  let engineErr = '';
  let client;
  let hostErr = '';

  before(async () => {
    for (const f of [hostBin, devboxdBin, path.join(pluginDir, 'rlmcp_exec.so')]) {
      if (!existsSync(f)) throw new Error(`${f} is missing: build first (RLMCP_BUILD_DIR=${buildDir})`);
    }
    tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-languages-'));
    const state = path.join(tmp, 'state');
    // The engine's defaults: each tool's devbox gets the universal image
    // through the deployment (blueprint: runloop/universal-ubuntu-24.04-x86_64).
    const env = { ...process.env };
    delete env.RLMCP_DEVBOX_IMAGE;
    delete env.RLMCP_DEVBOX_RUNTIME;
    engine = spawn(devboxdBin, ['--state-dir', state], { stdio: ['ignore', 'ignore', 'pipe'], env });
    engine.stderr.on('data', (d) => { engineErr += d; });
    engineExit = new Promise((r) => engine.on('exit', r));
    await waitFor(() => ping(path.join(state, 'devboxd.sock')), 30000, 'devboxd to answer');
    const transport = new StdioClientTransport({
      command: hostBin,
      args: ['--config', conf],
      env: { PATH: process.env.PATH, HOME: tmp, RLMCP_PLUGIN_DIR: pluginDir, RLMCP_TEST_STATE_DIR: state },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (d) => { hostErr += d; });
    client = new Client({ name: 'languages-e2e', version: '1' });
    await client.connect(transport);
  });

  after(async () => {
    try { await client?.close(); } catch { /* already gone */ }
    if (engine && engine.exitCode === null) {
      engine.kill('SIGTERM');
      const t = setTimeout(() => engine.kill('SIGKILL'), 30000);
      await engineExit;
      clearTimeout(t);
    }
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('lists all 11 tools', async () => {
    const { tools } = await client.listTools();
    const names = new Set(tools.map((t) => t.name));
    for (const lang of Object.keys(programs)) assert.ok(names.has(`run_${lang}`), `run_${lang} is listed`);
  });

  for (const [lang, code] of Object.entries(programs)) {
    it(`run_${lang} prints its output`, LONG, async () => {
      const r = await client.callTool({ name: `run_${lang}`, arguments: { code } }, undefined, { timeout: 590000 });
      const sc = r.structuredContent;
      assert.notEqual(r.isError, true, `run_${lang}: ${JSON.stringify(r.content)}\n${hostErr}\n${engineErr}`);
      assert.equal(sc.exit_code, 0, `run_${lang} stderr: ${sc.stderr}`);
      assert.equal(sc.stdout, `${lang} 42\n`, `run_${lang} stderr: ${sc.stderr}`);
      assert.equal(sc.language, lang);
    });
  }
});
