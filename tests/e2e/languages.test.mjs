// End-to-end: each of the 11 run_<language> tools, through the built host
// and the official MCP SDK client over stdio, against a real devboxd whose
// devboxes run on the universal image, named by each tool's blueprint in the
// deployment (conf/languages-local.yaml). Each program prints a line computed at run time; the
// devbox needs no network for any of them.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { sourceDir, waitFor } from './lib/host.mjs';
import { engineRequest, startEngineAndHost } from './lib/engine.mjs';

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

// run_<language> suspends its devbox after a call (code-testing purpose);
// a suspended devbox keeps its disk. Shut every devbox down, waiting out
// one still suspending.
async function shutdownAll(sock) {
  const list = await engineRequest(sock, 'GET', '/v1/devboxes?limit=100');
  for (const d of list.devboxes ?? []) {
    if (d.status === 'shutdown' || d.status === 'failure') continue;
    await waitFor(async () => {
      try {
        await engineRequest(sock, 'POST', `/v1/devboxes/${d.id}/shutdown`);
        return true;
      } catch (e) {
        if (/: 4(09|00) /.test(e.message)) return false; /* still suspending */
        throw e;
      }
    }, 60000, `devbox ${d.id} to shut down`, 100);
  }
}

describe('run_<language> tools end to end (local engine, universal image)', () => {
  let stack;
  let client;

  before(async () => {
    // The engine's defaults: each tool's devbox gets the universal image
    // through the deployment (blueprint: runloop/universal-ubuntu-24.04-x86_64).
    stack = await startEngineAndHost({
      name: 'languages', conf, plugins: ['exec'],
      engineEnv: { RLMCP_DEVBOX_IMAGE: undefined, RLMCP_DEVBOX_RUNTIME: undefined },
    });
    ({ client } = stack);
  });

  after(() => stack?.stop());

  it('lists all 11 tools', async () => {
    const { tools } = await client.listTools();
    const names = new Set(tools.map((t) => t.name));
    for (const lang of Object.keys(programs)) assert.ok(names.has(`run_${lang}`), `run_${lang} is listed`);
  });

  for (const [lang, code] of Object.entries(programs)) {
    it(`run_${lang} prints its output`, LONG, async () => {
      const r = await client.callTool({ name: `run_${lang}`, arguments: { code } }, undefined, { timeout: 590000 });
      const sc = r.structuredContent;
      assert.notEqual(r.isError, true, `run_${lang}: ${JSON.stringify(r.content)}\n${stack.host.err}\n${stack.engine.stderr()}`);
      assert.equal(sc.exit_code, 0, `run_${lang} stderr: ${sc.stderr}`);
      assert.equal(sc.stdout, `${lang} 42\n`, `run_${lang} stderr: ${sc.stderr}`);
      assert.equal(sc.language, lang);
      // Each language keeps its devbox (suspended between calls), and each
      // promises its whole disk to the engine's disk admission: eleven at
      // once need ~45 GiB free. Done with it here: one at a time.
      await shutdownAll(path.join(stack.state, 'devboxd.sock'));
    });
  }
});
