// Helpers of the task tests (tasks, tasks_builds): an HTTP host and a
// devboxd tracked for after(), a JSON-RPC error awaited, and a raw
// 2026-07-28 request with the headers that revision wants.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { buildDir, hostBin, pluginDir, trackChild, waitFor } from './host.mjs';

/** devboxd on state, tracked on list; resolves once its socket is there. */
export async function startTrackedEngine(list, state) {
  const engine = trackChild(list, 'devboxd', spawn(path.join(buildDir, 'bin', 'devboxd'), ['--state-dir', state],
    { stdio: ['ignore', 'ignore', 'pipe'] }));
  await waitFor(() => {
    if (engine.exited) throw new Error(`devboxd exited:\n${engine.log}`);
    return existsSync(path.join(state, 'devboxd.sock'));
  }, 30000, 'devboxd', 100);
  return engine;
}

/** runloop-mcp -c conf over HTTP, tracked on list; resolves once it listens (p.port). */
export async function startTrackedHost(list, conf) {
  const env = { ...process.env, RLMCP_PLUGIN_DIR: pluginDir };
  delete env.RUNLOOP_API_KEY;
  const p = trackChild(list, 'host', spawn(hostBin, ['-c', conf, '--transport', 'http'], { env, stdio: ['ignore', 'ignore', 'pipe'] }));
  await waitFor(() => {
    if (p.exited) throw new Error(`host exited:\n${p.log}`);
    return /\(port (\d+)\)/.test(p.log);
  }, 60000, 'the host to listen', 100);
  p.port = Number(/\(port (\d+)\)/.exec(p.log)[1]);
  return p;
}

/** A clean stop: exit status 0 and no sanitizer report. */
export async function stopTrackedHost(p) {
  p.child.kill('SIGTERM');
  const t = setTimeout(() => p.child.kill('SIGKILL'), 20000);
  const { code, sig } = await p.gone;
  clearTimeout(t);
  assert.doesNotMatch(p.log, /AddressSanitizer|LeakSanitizer|runtime error:/, p.log.slice(-4000));
  assert.equal(code, 0, `host exited with ${code ?? sig}:\n${p.log.slice(-2000)}`);
}

/** Stop every tracked process still running, newest first (hosts cleanly). */
export async function stopTracked(list) {
  for (const p of [...list].reverse()) {
    if (p.exited) continue;
    if (p.name === 'host') {
      await stopTrackedHost(p);
      continue;
    }
    p.child.kill('SIGTERM');
    const t = setTimeout(() => p.child.kill('SIGKILL'), 20000);
    await p.gone;
    clearTimeout(t);
  }
}

/** The JSON-RPC error promise rejects with; fails when it resolves. */
export async function rpcError(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail('expected a JSON-RPC error');
}

let nextId = 1;

/**
 * One 2026-07-28 request over raw HTTP with meta as _meta, Mcp-Method and
 * Mcp-Name (the tool or the task id) set: { status, msg (the answer), body }.
 */
export function rawCall(port, method, params, meta, timeoutMs = 280000) {
  const id = nextId++;
  const body = JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } });
  const headers = {
    'content-type': 'application/json', accept: 'application/json, text/event-stream',
    'mcp-protocol-version': meta['io.modelcontextprotocol/protocolVersion'], 'mcp-method': method,
  };
  if (method === 'tools/call') headers['mcp-name'] = params.name;
  if (method.startsWith('tasks/') && typeof params.taskId === 'string') headers['mcp-name'] = params.taskId;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', headers, agent: false }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; });
      res.on('end', () => {
        const msgs = data.trimStart().startsWith('{') ? [JSON.parse(data)]
          : data.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).map((l) => JSON.parse(l.slice(6)));
        resolve({ status: res.statusCode, msg: msgs.find((m) => m.id === id), body: data });
      });
    });
    req.on('error', reject);
    req.setTimeout(timeoutMs, () => req.destroy(new Error('request timed out')));
    req.end(body);
  });
}
