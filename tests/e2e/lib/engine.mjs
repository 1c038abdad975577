// A devboxd on its own state dir, and plain REST to it over its unix
// socket (no key needed there), for tests that need a real engine.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { buildDir, waitFor } from './host.mjs';

export const devboxdBin = path.join(buildDir, 'bin', 'devboxd');

export function engineRequest(sock, method, p, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ socketPath: sock, method, path: p,
      headers: data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {} }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { buf += d; });
      res.on('end', () => {
        if (res.statusCode >= 300) return reject(new Error(`${method} ${p}: ${res.statusCode} ${buf}`));
        try { resolve(buf ? JSON.parse(buf) : null); } catch (e) { reject(e); }
      });
    });
    req.on('error', reject);
    req.setTimeout(60000, () => req.destroy(new Error('engine request timed out')));
    if (data) req.write(data);
    req.end();
  });
}

/**
 * Start devboxd on stateDir with extra args. Ready once its pid file names
 * its ports (written after its listeners start) and, without a --listen in
 * args, once it answers on its unix socket. pidNumber(key) reads a number
 * from the pid file ("port", "tunnel_port"); stop() kills it, waits and
 * resolves to its exit code (or signal).
 */
export async function startEngine(stateDir, args = []) {
  const pidFile = path.join(stateDir, 'devboxd.pid');
  rmSync(pidFile, { force: true });
  const child = spawn(devboxdBin, ['--state-dir', stateDir, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  let exited = false;
  let code = null;
  const gone = new Promise((r) => child.on('exit', (c, sig) => { exited = true; code = c ?? sig; r(); }));
  const sock = args.includes('--listen') ? null : path.join(stateDir, 'devboxd.sock');
  const pidNumber = (key) => {
    const m = existsSync(pidFile) && new RegExp(`^${key} (\\d+)$`, 'm').exec(readFileSync(pidFile, 'utf8'));
    return m ? Number(m[1]) : null;
  };
  await waitFor(async () => {
    if (exited) throw new Error(`devboxd exited early: ${stderr}`);
    if (pidNumber('tunnel_port') === null) return false;
    return !sock || (existsSync(sock) && (await engineRequest(sock, 'GET', '/v1/devboxes?limit=1').then(() => true, () => false)));
  }, 30000, 'devboxd to answer');
  return {
    sock,
    pidNumber,
    stderr: () => stderr,
    async stop() {
      if (!exited) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 30000);
      await gone;
      clearTimeout(t);
      return code;
    },
  };
}
