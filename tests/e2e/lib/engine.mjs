// A devboxd on its own state dir, and plain REST to it over its unix
// socket (no key needed there), for tests that need a real engine.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
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

/** Start devboxd on stateDir; stop() kills it and waits. */
export async function startEngine(stateDir) {
  const child = spawn(devboxdBin, ['--state-dir', stateDir], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  let exited = false;
  const gone = new Promise((r) => child.on('exit', () => { exited = true; r(); }));
  const sock = path.join(stateDir, 'devboxd.sock');
  await waitFor(async () => {
    if (exited) throw new Error(`devboxd exited early: ${stderr}`);
    return existsSync(sock) && (await engineRequest(sock, 'GET', '/v1/devboxes?limit=1').then(() => true, () => false));
  }, 30000, 'devboxd to answer on its socket');
  return {
    sock,
    stderr: () => stderr,
    async stop() {
      if (!exited) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 20000);
      await gone;
      clearTimeout(t);
    },
  };
}
