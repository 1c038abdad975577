// Hostile clients and faults against devboxd's front ends: each test names
// the attack or fault it pins down (docs/devboxd.md, "Limits").
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Devboxd } from './devboxd.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Opens n connections that each send an unfinished request head and stay
// open; resolves once all are connected (or refused) with the sockets.
async function holdHalfOpen(connectOpts, n, head = 'GET /v1/accounts/me HTTP/1.1\r\nHost: x\r\n') {
  const socks = [];
  await Promise.all(Array.from({ length: n }, () => new Promise((resolve) => {
    const s = net.connect(connectOpts, () => {
      if (head) s.write(head);
      resolve();
    });
    s.on('error', () => resolve());
    s.on('close', () => resolve());
    socks.push(s);
  })));
  return socks;
}

// One HTTP/1.1 request on a fresh connection; rejects after timeoutMs.
function h1(connectOpts, p, { key, timeoutMs = 30000 } = {}) {
  return new Promise((resolve, reject) => {
    const where = connectOpts.path ? { socketPath: connectOpts.path } : connectOpts;
    const req = http.request({ ...where, path: p, agent: false,
      headers: key ? { authorization: `Bearer ${key}` } : {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer to ${p} within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

// 1,030 half-open connections used to reach libmicrohttpd's connection
// limit through MHD_add_connection and deadlock its HTTP/1.1 stack for good
// (and SIGTERM with it). Now devboxd caps HTTP/1.1 connections below the
// library's limit itself, drops the oldest connection that has not yet sent
// an authenticated request when full, and later requests still answer.
describe('half-open connection flood', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'devboxd-flood-'));
  const sock = path.join(dir, 'api.sock');
  const engine = new Devboxd({ extraArgs: ['--listen', `unix:${sock}`] });
  before(async () => { await engine.start(); });
  after(async () => {
    await engine.cleanup(); // SIGTERM must still stop it cleanly
    rmSync(dir, { recursive: true, force: true });
  });

  for (const where of ['tcp', 'unix']) {
    test(`1,030 unfinished request heads on ${where} do not stop later requests`, async () => {
      const opts = where === 'tcp' ? { host: '127.0.0.1', port: engine.port } : { path: sock };
      const socks = await holdHalfOpen(opts, 1030);
      try {
        // While they are held, an authenticated request still answers.
        const during = await h1(opts, '/v1/accounts/me', { key: engine.key });
        assert.equal(during.status, 200, during.body);
        await sleep(1000); // hold a little longer, as the reported attack did
      } finally {
        for (const s of socks) s.destroy();
      }
      for (let i = 0; i < 5; i++) {
        const r = await h1(opts, '/v1/accounts/me', { key: engine.key });
        assert.equal(r.status, 200, r.body);
      }
    });
  }

  // Connections that send nothing wait in the protocol sniffer; 1,100 of
  // them used to fill its table so that every new connection was closed.
  test('1,100 silent connections do not lock out an authenticated request', async () => {
    const opts = { host: '127.0.0.1', port: engine.port };
    const socks = await holdHalfOpen(opts, 1100, '');
    try {
      const r = await h1(opts, '/v1/accounts/me', { key: engine.key });
      assert.equal(r.status, 200, r.body);
    } finally {
      for (const s of socks) s.destroy();
    }
  });
});
