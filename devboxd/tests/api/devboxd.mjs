// Test helper: starts a real devboxd on a free loopback port with a temp
// state dir, and builds official Runloop SDK clients against it.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const sourceDir = process.env.RLMCP_SOURCE_DIR ?? path.resolve(here, '../../..');
export const buildDir = process.env.RLMCP_BUILD_DIR ?? path.join(sourceDir, 'build');
export const devboxdBin = path.join(buildDir, 'bin', 'devboxd');
// Where every devboxd of the machine claims host ids (one file per uid or
// range, holding the owner's dir).
export const claimsDir = process.env.RLMCP_UID_CLAIMS_DIR ?? '/var/lib/devboxd/uids';

// The official SDK, resolved from the pinned test clients in tests/.
const require = createRequire(path.join(sourceDir, 'tests', 'package.json'));
export const { Runloop, toFile } = require('@runloop/api-client');
export const sdkRequire = require;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(cond, { timeoutMs = 30000, stepMs = 50, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(stepMs);
  }
}

// Engines still running. Once a stop fails (a sanitizer report), the file's
// other engines stop holding it open, else the after hook that threw before
// stopping them would keep the file alive until ctest's timeout; whatever is
// left when the file ends is killed.
const live = new Set();
const release = () => {
  for (const p of live) {
    p.unref();
    p.stderr?.unref();
  }
};
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

export class Devboxd {
  constructor({ stateDir, extraArgs = [], env = {} } = {}) {
    this.ownDir = !stateDir;
    this.stateDir = stateDir ?? mkdtempSync(path.join(tmpdir(), 'devboxd-api-'));
    this.extraArgs = extraArgs;
    this.env = env; // added to devboxd's environment (RLMCP_DEVBOX_RUNTIME, ...)
    this.bin = devboxdBin; // a benchmark may point this at a peer build
    this.proc = null;
    this.stderr = '';
  }

  async start() {
    const pidFile = path.join(this.stateDir, 'devboxd.pid');
    rmSync(pidFile, { force: true });
    this.stderr = '';
    this.proc = spawn(this.bin, ['--state-dir', this.stateDir, '--listen', '127.0.0.1:0',
      ...this.extraArgs], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...this.env } });
    this.proc.stderr.on('data', (d) => { this.stderr += d.toString(); });
    const proc = this.proc;
    live.add(proc);
    const exited = new Promise((resolve) => proc.once('exit', (code) => { live.delete(proc); resolve(code); }));
    this.exited = exited;
    const port = await Promise.race([
      waitFor(() => {
        if (!existsSync(pidFile)) return null;
        const m = /^port (\d+)$/m.exec(readFileSync(pidFile, 'utf8'));
        return m ? Number(m[1]) : null;
      }, { timeoutMs: 30000, what: 'devboxd to listen' }),
      exited.then((code) => { throw new Error(`devboxd exited (${code}): ${this.stderr}`); }),
    ]);
    this.port = port;
    this.baseURL = `http://127.0.0.1:${port}`;
    const kf = this.extraArgs.indexOf('--api-key-file');
    const keyPath = kf >= 0 ? this.extraArgs[kf + 1] : path.join(this.stateDir, 'api-key');
    this.key = readFileSync(keyPath, 'utf8').trim();
    return this;
  }

  client(opts = {}) {
    return new Runloop({ bearerToken: this.key, baseURL: this.baseURL, maxRetries: 0, ...opts });
  }

  // Stops devboxd with SIGTERM and fails if it did not exit cleanly or a
  // sanitizer (ASan/UBSan/LSan builds) reported anything.
  async stop() {
    const proc = this.proc;
    this.proc = null;
    if (!proc) return;
    let code = proc.exitCode;
    if (code === null && proc.signalCode === null) {
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 60000);
      code = await this.exited;
      clearTimeout(t);
    }
    if (/ERROR: (Address|Leak)Sanitizer|runtime error:|ThreadSanitizer/.test(this.stderr)) {
      release();
      throw new Error(`devboxd sanitizer report:\n${this.stderr}`);
    }
    if (code !== 0) {
      release();
      throw new Error(`devboxd exited with ${code ?? proc.signalCode}:\n${this.stderr}`);
    }
  }

  async cleanup() {
    await this.stop();
    if (this.ownDir) rmSync(this.stateDir, { recursive: true, force: true });
  }

  // Raw HTTP/1.1 request, for checks the SDK cannot express.
  async raw(method, p, { body, headers = {}, auth = true } = {}) {
    const h = { ...headers };
    if (auth) h.authorization = `Bearer ${this.key}`;
    const res = await fetch(this.baseURL + p, { method, headers: h, body });
    const text = await res.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    return { status: res.status, headers: res.headers, text, json };
  }
}

// A test file's engine: started before its tests (ready gets an SDK client
// for it) and cleaned up after them.
export function useEngine(engine, ready) {
  before(async () => {
    await engine.start();
    ready?.(engine.client());
  });
  after(async () => { await engine.cleanup(); });
  return engine;
}

// Asserts an SDK call fails with the given status and a message matching re.
export async function rejectsWith(assert, promise, status, re) {
  let err = null;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, `expected HTTP ${status}, the call succeeded`);
  assert.equal(err.status, status, `expected HTTP ${status}, got ${err.status}: ${err.message}`);
  if (re) assert.match(String(err.error?.message ?? err.message), re);
  return err;
}

// The blueprint id once its build has ended (build_complete or failed).
// The defaults wait for a buildah build, whose first run imports the
// engine's image into buildah once per machine.
export function blueprintSettled(client, id, { timeoutMs = 540000, stepMs = 200 } = {}) {
  return waitFor(async () => {
    const b = await client.blueprints.retrieve(id);
    return ['build_complete', 'failed'].includes(b.status) ? b : null;
  }, { timeoutMs, stepMs, what: `blueprint ${id}` });
}

// A blueprint's build log, one "level: message" line per entry.
export async function blueprintLog(client, id) {
  return (await client.blueprints.logs(id)).logs.map((e) => `${e.level}: ${e.message}`).join('\n');
}

// Files under dir (relative paths) whose bytes contain any of needles
// (strings); directories named in skip (relative paths) are not searched.
// Reads regular files only: secrets left behind show up here.
export function filesContaining(dir, needles, { skip = [] } = {}) {
  const found = [];
  const bufs = needles.map((n) => Buffer.from(n));
  const walk = (rel) => {
    for (const e of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = path.join(rel, e.name);
      if (e.isDirectory()) {
        if (!skip.includes(r)) walk(r);
      } else if (e.isFile()) {
        let data;
        try { data = readFileSync(path.join(dir, r)); } catch { continue; }
        if (bufs.some((b) => data.includes(b))) found.push(r);
      }
    }
  };
  walk('');
  return found;
}
