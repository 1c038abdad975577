// End-to-end: the computer tool (desktop plugin) through the built host and
// the official MCP SDK client over stdio, against a real devboxd. The first
// call makes a desktop devbox (devboxd's desktop image: Xvfb, openbox,
// xdotool, scrot, Chromium, x11vnc, noVNC); the test serves a page from
// inside it (python3 -m http.server), opens it in Chromium on the display,
// finds a magenta button in the screenshot's PNG pixels (decoded here with
// node's zlib), clicks it with the mouse, types into a field with the
// keyboard, and reads the page's changes both from new screenshots and from
// the devbox (the window title, through xdotool). The viewer's URL goes
// through devboxd's tunnel listener to noVNC and its WebSocket to the VNC
// server. A suspended and resumed devbox gets its display back. Then the
// bad-input cases.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createCipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { buildDir, hostBin, pluginDir, sourceDir, waitFor } from './lib/host.mjs';

const devboxdBin = path.join(buildDir, 'bin', 'devboxd');
const conf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'desktop-local.yaml');
const LONG = { timeout: 900000 };

// A page at fixed offsets: the magenta button, and 200 px below its top
// left corner a text field. Clicking turns the button green; submitting
// the field sets the title.
const page = `<!doctype html>
<html><head><title>Desk</title><style>
body { margin: 0; background: #ffffff; }
#go { position: absolute; left: 360px; top: 180px; width: 220px; height: 120px;
      background: #ff00ff; border: none; font-size: 24px; }
#q { position: absolute; left: 360px; top: 380px; width: 300px; height: 40px; font-size: 20px; }
</style></head><body>
<button id="go" onclick="this.style.background = '#00ff00'; this.textContent = 'done'; document.title = 'clicked'">Press</button>
<form onsubmit="event.preventDefault(); document.title = 'typed ' + q.value"><input id="q" name="q"></form>
</body></html>
`;

// ---- PNG decoding (every color type and bit depth scrot and netpbm write) ----

function paeth(a, b, c) {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

/** { width, height, rgb(x, y) -> [r, g, b] } of a PNG buffer. */
function decodePng(buf) {
  assert.equal(buf.subarray(0, 8).toString('hex'), '89504e470d0a1a0a', 'not a PNG');
  let off = 8;
  let ihdr;
  let palette;
  const idat = [];
  while (off < buf.length) {
    const len = buf.readUInt32BE(off);
    const type = buf.toString('latin1', off + 4, off + 8);
    const data = buf.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      ihdr = { width: data.readUInt32BE(0), height: data.readUInt32BE(4), depth: data[8], ctype: data[9], interlace: data[12] };
    } else if (type === 'PLTE') palette = data;
    else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    off += 12 + len;
  }
  assert.ok(ihdr, 'PNG without IHDR');
  assert.equal(ihdr.interlace, 0, 'interlaced PNG');
  const channels = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }[ihdr.ctype];
  const bitsPerPixel = channels * ihdr.depth;
  const stride = Math.ceil((ihdr.width * bitsPerPixel) / 8);
  const bpp = Math.max(1, bitsPerPixel >> 3);
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const px = Buffer.alloc(stride * ihdr.height);
  for (let y = 0; y < ihdr.height; y++) {
    const f = raw[y * (stride + 1)];
    const src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = px.subarray(y * stride, (y + 1) * stride);
    const up = y > 0 ? px.subarray((y - 1) * stride, y * stride) : Buffer.alloc(stride);
    for (let i = 0; i < stride; i++) {
      const a = i >= bpp ? row[i - bpp] : 0;
      const b = up[i];
      const c = i >= bpp ? up[i - bpp] : 0;
      const pred = [0, a, b, (a + b) >> 1, paeth(a, b, c)][f];
      assert.notEqual(pred, undefined, `PNG filter ${f}`);
      row[i] = (src[i] + pred) & 0xff;
    }
  }
  const sample = (x, y, ch) => {
    if (ihdr.depth === 8) return px[y * stride + x * channels + ch];
    if (ihdr.depth === 16) return px[y * stride + (x * channels + ch) * 2];
    const bit = (x * channels + ch) * ihdr.depth; // 1, 2, 4 bits: palette or gray
    const v = (px[y * stride + (bit >> 3)] >> (8 - ihdr.depth - (bit & 7))) & ((1 << ihdr.depth) - 1);
    return ihdr.ctype === 3 ? v : Math.round((v * 255) / ((1 << ihdr.depth) - 1));
  };
  const rgb = (x, y) => {
    if (ihdr.ctype === 3) {
      const i = sample(x, y, 0);
      return [palette[i * 3], palette[i * 3 + 1], palette[i * 3 + 2]];
    }
    if (ihdr.ctype === 0 || ihdr.ctype === 4) {
      const g = sample(x, y, 0);
      return [g, g, g];
    }
    return [sample(x, y, 0), sample(x, y, 1), sample(x, y, 2)];
  };
  return { width: ihdr.width, height: ihdr.height, rgb };
}

/** The bounding box of the pixels matching want([r, g, b]), or null. */
function findBox(img, want) {
  let box = null;
  for (let y = 0; y < img.height; y++) {
    for (let x = 0; x < img.width; x++) {
      if (!want(img.rgb(x, y))) continue;
      if (!box) box = { x0: x, y0: y, x1: x, y1: y, n: 0 };
      box.x0 = Math.min(box.x0, x);
      box.x1 = Math.max(box.x1, x);
      box.y0 = Math.min(box.y0, y);
      box.y1 = Math.max(box.y1, y);
      box.n++;
    }
  }
  return box;
}

const magenta = ([r, g, b]) => r > 220 && g < 60 && b > 220;
const green = ([r, g, b]) => r < 60 && g > 220 && b < 60;

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

/** The first WebSocket message from url (ws:// by http.request's upgrade). */
function firstWsMessage(url) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({
      host: u.hostname, port: u.port, path: u.pathname + u.search,
      headers: {
        Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': randomBytes(16).toString('base64'), 'Sec-WebSocket-Protocol': 'binary',
      },
    });
    const t = setTimeout(() => { req.destroy(); reject(new Error('no WebSocket message in 30 s')); }, 30000);
    req.on('response', (res) => { clearTimeout(t); reject(new Error(`no upgrade: HTTP ${res.statusCode}`)); res.resume(); });
    req.on('upgrade', (res, socket, head) => {
      let buf = head;
      const take = (d) => {
        buf = Buffer.concat([buf, d]);
        if (buf.length < 2) return;
        const len = buf[1] & 0x7f; // the RFB greeting is 12 bytes: one short frame
        if (buf.length < 2 + len) return;
        clearTimeout(t);
        socket.destroy();
        resolve({ opcode: buf[0] & 0x0f, payload: buf.subarray(2, 2 + len) });
      };
      socket.on('data', take);
      take(Buffer.alloc(0));
    });
    req.on('error', (e) => { clearTimeout(t); reject(e); });
    req.end();
  });
}

/** A client's WebSocket frame (masked, binary) holding data. */
function wsFrame(data) {
  const mask = randomBytes(4);
  const masked = Buffer.from(data).map((b, i) => b ^ mask[i % 4]);
  return Buffer.concat([Buffer.from([0x82, 0x80 | masked.length]), mask, masked]);
}

/** VNC authentication's answer: the challenge DES-encrypted with the
 * password (8 bytes, each bit-reversed) as key; DES as two-key 3DES with
 * both keys the same. */
function vncResponse(password, challenge) {
  const key = Buffer.alloc(8);
  Buffer.from(password, 'latin1').copy(key, 0, 0, 8);
  for (let i = 0; i < 8; i++) {
    let b = key[i];
    let r = 0;
    for (let j = 0; j < 8; j++) { r = (r << 1) | (b & 1); b >>= 1; }
    key[i] = r;
  }
  const c = createCipheriv('des-ede-ecb', Buffer.concat([key, key]), null);
  c.setAutoPadding(false);
  return Buffer.concat([c.update(challenge), c.final()]);
}

/**
 * An RFB 3.8 handshake over the WebSocket at url: the server's greeting,
 * the security types it offers and, with VNC authentication (type 2)
 * answered with password, its SecurityResult (0: accepted).
 */
function rfbLogin(url, password) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({
      host: u.hostname, port: u.port, path: u.pathname + u.search,
      headers: {
        Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': randomBytes(16).toString('base64'), 'Sec-WebSocket-Protocol': 'binary',
      },
    });
    const t = setTimeout(() => { req.destroy(); reject(new Error('no RFB handshake in 30 s')); }, 30000);
    req.on('response', (res) => { clearTimeout(t); reject(new Error(`no upgrade: HTTP ${res.statusCode}`)); res.resume(); });
    req.on('upgrade', (res, socket, head) => {
      let frames = head;
      let rfb = Buffer.alloc(0); // the server's RFB bytes, frames joined
      const seen = {};
      const done = (v) => { clearTimeout(t); socket.destroy(); resolve(v); };
      const step = () => {
        if (seen.greeting === undefined) {
          if (rfb.length < 12) return;
          seen.greeting = rfb.subarray(0, 12).toString('latin1');
          rfb = rfb.subarray(12);
          socket.write(wsFrame(Buffer.from('RFB 003.008\n', 'latin1')));
        }
        if (seen.types === undefined) {
          if (rfb.length < 1 || rfb.length < 1 + rfb[0]) return;
          seen.types = [...rfb.subarray(1, 1 + rfb[0])];
          rfb = rfb.subarray(1 + rfb[0]);
          if (!seen.types.includes(2)) return done(seen);
          socket.write(wsFrame([2]));
        }
        if (seen.result === undefined) {
          if (!seen.answered) {
            if (rfb.length < 16) return;
            socket.write(wsFrame(vncResponse(password, rfb.subarray(0, 16))));
            rfb = rfb.subarray(16);
            seen.answered = true;
          }
          if (rfb.length < 4) return;
          seen.result = rfb.readUInt32BE(0);
          done(seen);
        }
      };
      const take = (d) => {
        frames = Buffer.concat([frames, d]);
        while (frames.length >= 2 && frames.length >= 2 + (frames[1] & 0x7f)) {
          const len = frames[1] & 0x7f; // the server's frames here are short
          rfb = Buffer.concat([rfb, frames.subarray(2, 2 + len)]);
          frames = frames.subarray(2 + len);
        }
        step();
      };
      socket.on('data', take);
      take(Buffer.alloc(0));
    });
    req.on('error', (e) => { clearTimeout(t); reject(e); });
    req.end();
  });
}

describe('computer end to end (local engine, desktop image)', () => {
  let tmp;
  let engine;
  let engineExit;
  let engineErr = '';
  let client;
  let hostErr = '';
  let devbox;
  let button; // the magenta box on the display
  let closing = false;

  const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 890000 });
  const diag = (r) => `${JSON.stringify(r.content).slice(0, 2000)}\n--- host:\n${hostErr.slice(-3000)}\n--- devboxd:\n${engineErr.slice(-3000)}`;
  const ok = (r) => {
    assert.notEqual(r.isError, true, diag(r));
    return r;
  };
  const computer = async (args) => ok(await call('computer', { devbox_id: devbox, ...args }));
  const imageOf = (r) => {
    const img = r.content.find((c) => c.type === 'image');
    assert.ok(img, `no image content: ${JSON.stringify(r.content).slice(0, 500)}`);
    assert.equal(img.mimeType, 'image/png');
    return decodePng(Buffer.from(img.data, 'base64'));
  };
  const fails = async (args, code, re) => {
    const r = await call('computer', args);
    assert.equal(r.isError, true, `expected an error: ${JSON.stringify(r.structuredContent)}`);
    const e = JSON.parse(r.content[0].text).error;
    if (code) assert.equal(e.code, code, e.message);
    if (re) assert.match(e.message, re);
    return e;
  };
  // The page's title as the window manager shows it: page state read from
  // the devbox itself.
  const titleIs = async (want) => {
    let seen = '';
    try {
      await waitFor(async () => {
        const r = ok(await call('execute_command', {
          devbox_id: devbox, command: 'DISPLAY=:99 xdotool getactivewindow getwindowname',
        })).structuredContent;
        seen = r.stdout.trim();
        return seen.startsWith(want);
      }, 60000, `the window title "${want}"`, 500);
    } catch (e) {
      e.message += ` (last: "${seen}")`; // seen as it was at the end
      throw e;
    }
  };

  before(async () => {
    for (const f of [hostBin, devboxdBin, path.join(pluginDir, 'rlmcp_desktop.so')]) {
      if (!existsSync(f)) throw new Error(`${f} is missing: build first (RLMCP_BUILD_DIR=${buildDir})`);
    }
    tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-computer-'));
    const state = path.join(tmp, 'state');
    engine = spawn(devboxdBin, ['--state-dir', state], { stdio: ['ignore', 'ignore', 'pipe'] });
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
    client = new Client({ name: 'computer-e2e', version: '1' });
    await client.connect(transport);
    // A host that goes away mid-test says why.
    client.onclose = () => { if (!closing) console.error(`the host exited; its stderr:\n${hostErr.slice(-6000)}`); };
  });

  after(async () => {
    closing = true;
    try { await client?.close(); } catch { /* already gone */ }
    if (engine && engine.exitCode === null) {
      engine.kill('SIGTERM');
      const t = setTimeout(() => engine.kill('SIGKILL'), 30000);
      await engineExit;
      clearTimeout(t);
    }
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('a first call makes a desktop devbox whose display starts and stays', LONG, async () => {
    const first = ok(await call('computer', { action: 'mouse_move', coordinate: [10, 20] })).structuredContent;
    assert.equal(first.new_devbox, true);
    assert.match(first.devbox_id, /^[A-Za-z0-9_.-]+$/);
    assert.equal(first.display_width, 1024);
    assert.equal(first.display_height, 768);
    devbox = first.devbox_id;
    const pos = (await computer({ action: 'cursor_position' })).structuredContent;
    assert.equal(pos.new_devbox, false);
    assert.deepEqual([pos.x, pos.y], [10, 20]);
    // One X server, reused by every call.
    const ps = ok(await call('execute_command', { devbox_id: devbox, command: 'pgrep -c -x Xvfb' })).structuredContent;
    assert.equal(ps.stdout.trim(), '1');
  });

  it('opens a page served in the devbox and finds the button in the screenshot', LONG, async () => {
    ok(await call('write_file', { devbox_id: devbox, file_path: '/home/user/site/index.html', contents: page }));
    ok(await call('execute_command_async', {
      devbox_id: devbox, command: 'cd /home/user/site && exec python3 -m http.server 8000 --bind 127.0.0.1',
    }));
    const up = ok(await call('execute_command', {
      devbox_id: devbox,
      command: 'for i in $(seq 1 300); do curl -sf -o /dev/null http://127.0.0.1:8000/ && exit 0; sleep 0.1; done; exit 1',
    })).structuredContent;
    assert.equal(up.exit_code, 0, up.stderr);
    let shot = await computer({ action: 'screenshot', url: 'http://127.0.0.1:8000/' });
    let img = imageOf(shot);
    assert.deepEqual([img.width, img.height], [1024, 768]);
    assert.equal(shot.structuredContent.image_width, 1024);
    // The page may still be painting: look again until the button shows.
    await waitFor(async () => {
      button = findBox(img, magenta);
      if (button && button.n > 20000) return true;
      img = imageOf(await computer({ action: 'screenshot' }));
      return false;
    }, 120000, 'the magenta button in a screenshot', 500);
    // 220x120 CSS pixels at device scale 1.
    assert.ok(Math.abs(button.x1 - button.x0 + 1 - 220) <= 2, JSON.stringify(button));
    assert.ok(Math.abs(button.y1 - button.y0 + 1 - 120) <= 2, JSON.stringify(button));
    assert.equal(findBox(img, green), null, 'green before the click');
  });

  it('scales a screenshot to the size asked for', LONG, async () => {
    const r = await computer({ action: 'screenshot', screenshot_width: 512 });
    const img = imageOf(r);
    assert.deepEqual([img.width, img.height], [512, 384]);
    assert.deepEqual([r.structuredContent.image_width, r.structuredContent.image_height], [512, 384]);
    const half = findBox(img, magenta);
    assert.ok(half, 'the button in the scaled image');
    assert.ok(Math.abs(half.x0 - button.x0 / 2) <= 3 && Math.abs(half.y0 - button.y0 / 2) <= 3,
      `${JSON.stringify(half)} vs ${JSON.stringify(button)}`);
  });

  it('clicks the button with the mouse and sees the page change', LONG, async () => {
    const cx = Math.round((button.x0 + button.x1) / 2);
    const cy = Math.round((button.y0 + button.y1) / 2);
    const r = await computer({ action: 'left_click', coordinate: [cx, cy], screenshot: true });
    assert.deepEqual([r.structuredContent.x, r.structuredContent.y], [cx, cy]);
    await titleIs('clicked');
    let img = imageOf(r);
    await waitFor(async () => {
      const g = findBox(img, green);
      if (g && Math.abs(g.x0 - button.x0) <= 2 && Math.abs(g.y0 - button.y0) <= 2) return true;
      img = imageOf(await computer({ action: 'screenshot' }));
      return false;
    }, 60000, 'the button turned green in a screenshot', 500);
    assert.equal(findBox(img, magenta), null, 'magenta left after the click');
  });

  it('types into a field and presses Return', LONG, async () => {
    // The field is 200 px below the button's top left on the page.
    await computer({ action: 'left_click', coordinate: [button.x0 + 150, button.y0 + 220] });
    await computer({ action: 'type', text: 'hello desk' });
    await computer({ action: 'key', text: 'Return' });
    await titleIs('typed hello desk');
    // Select all and type over it, with a key combination.
    await computer({ action: 'key', text: 'ctrl+a' });
    await computer({ action: 'type', text: 'again' });
    await computer({ action: 'key', text: 'KP_Enter' });
    await titleIs('typed again');
  });

  it('other actions: double and right click, drag, scroll, wait, hold_key', LONG, async () => {
    for (const args of [
      { action: 'double_click', coordinate: [900, 700] },
      { action: 'triple_click', coordinate: [900, 700] },
      { action: 'key', text: 'Escape' },
      { action: 'left_click_drag', start_coordinate: [800, 650], coordinate: [850, 700] },
      { action: 'scroll', coordinate: [500, 500], scroll_direction: 'down', scroll_amount: 2 },
      { action: 'left_mouse_down', coordinate: [900, 600] },
      { action: 'left_mouse_up' },
      { action: 'hold_key', text: 'shift', duration: 0.2 },
    ]) {
      const r = await computer(args);
      assert.equal(r.structuredContent.action, args.action);
    }
    const t0 = Date.now();
    await computer({ action: 'wait', duration: 1.5 });
    assert.ok(Date.now() - t0 >= 1400, `wait took ${Date.now() - t0} ms`);
    const pos = (await computer({ action: 'cursor_position' })).structuredContent;
    assert.deepEqual([pos.x, pos.y], [900, 600]);
  });

  it('viewer: a URL through the tunnel listener serves noVNC and relays the VNC server', LONG, async () => {
    const v = (await computer({ action: 'viewer' })).structuredContent;
    assert.equal(v.view_only, true);
    assert.match(v.viewer_url, /^http:\/\/127\.0\.0\.1:\d+\/tunnel\/6080-[a-z0-9]+\/vnc\.html\?autoconnect=1&/);
    const res = await fetch(v.viewer_url);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /noVNC/);
    // noVNC's WebSocket: same origin, the path it is given.
    const u = new URL(v.viewer_url);
    const wsPath = u.searchParams.get('path');
    assert.match(wsPath, /^tunnel\/6080-[a-z0-9]+\/websockify$/);
    const msg = await firstWsMessage(`http://${u.host}/${wsPath}`);
    assert.equal(msg.opcode, 2, 'a binary frame');
    assert.match(msg.payload.toString('latin1'), /^RFB 003\.\d{3}\n$/);
    // The VNC server asks for the password the URL's fragment gives noVNC
    // (VNC authentication, type 2; never None, type 1): another port's URL
    // through the same open tunnel does not show the display.
    const pw = u.hash.match(/^#password=([A-Za-z0-9]{8})$/);
    assert.ok(pw, `no password in the URL's fragment: ${u.hash}`);
    const rfb = await rfbLogin(`http://${u.host}/${wsPath}`, pw[1]);
    assert.deepEqual(rfb.types, [2], `security types ${JSON.stringify(rfb)}`);
    assert.equal(rfb.result, 0, 'the password from the URL is accepted');
    // Asked again: the same tunnel, the viewer already running.
    const again = (await computer({ action: 'viewer' })).structuredContent;
    assert.equal(again.viewer_url, v.viewer_url);
  });

  it('a suspended and resumed devbox starts its display again', LONG, async () => {
    ok(await call('suspend_devbox', { devbox_id: devbox }));
    ok(await call('resume_devbox', { devbox_id: devbox }));
    // Processes are gone, /tmp (and the X server's stale lock) stays.
    const r = await computer({ action: 'screenshot' });
    const img = imageOf(r);
    assert.deepEqual([img.width, img.height], [1024, 768]);
    assert.equal(findBox(img, green), null, 'the page is gone with Chromium');
    const ps = ok(await call('execute_command', { devbox_id: devbox, command: 'pgrep -c -x Xvfb' })).structuredContent;
    assert.equal(ps.stdout.trim(), '1');
    // The page again, in a new Chromium.
    const up = ok(await call('execute_command_async', {
      devbox_id: devbox, command: 'cd /home/user/site && exec python3 -m http.server 8000 --bind 127.0.0.1',
    }));
    assert.ok(up);
    let again = imageOf(await computer({ action: 'wait', duration: 0.5, url: 'http://127.0.0.1:8000/', screenshot: true }));
    await waitFor(async () => {
      if (findBox(again, magenta)) return true;
      again = imageOf(await computer({ action: 'screenshot' }));
      return false;
    }, 120000, 'the button after the resume', 500);
  });

  it('bad input: each refused with what to fix', LONG, async () => {
    let e = await fails({ action: 'fly', devbox_id: devbox }, 'invalid_argument', /action/);
    assert.match(e.message, /left_click/);
    e = await fails({ action: 'left_click', devbox_id: devbox, coordinate: [1024, 100] }, 'invalid_argument',
      /'coordinate' \[1024, 100\] is outside the display \(1024x768\): x must be 0-1023 and y 0-767/);
    assert.match(e.remedy, /screenshot/);
    await fails({ action: 'mouse_move', devbox_id: devbox, coordinate: [5, 9000] }, 'invalid_argument',
      /outside the display/);
    await fails({ action: 'type', devbox_id: devbox }, 'invalid_argument',
      /action type needs argument 'text' \(the text to type\)/);
    await fails({ action: 'key', devbox_id: devbox }, 'invalid_argument', /action key needs argument 'text' \(key names/);
    await fails({ action: 'mouse_move', devbox_id: devbox }, 'invalid_argument', /needs argument 'coordinate'/);
    await fails({ action: 'left_click_drag', devbox_id: devbox, coordinate: [1, 1] }, 'invalid_argument',
      /needs argument 'start_coordinate'/);
    await fails({ action: 'scroll', devbox_id: devbox }, 'invalid_argument', /needs argument 'scroll_direction'/);
    // Only xdotool knows its key names: the devbox answers for this one.
    await fails({ action: 'key', devbox_id: devbox, text: 'ctrl+nosuchkey' }, 'invalid_argument',
      /unknown key in 'ctrl\+nosuchkey'/);
    // A click holding an unknown key presses none: typing after it is not
    // shifted.
    await fails({ action: 'left_click', devbox_id: devbox, coordinate: [button.x0 + 150, button.y0 + 220],
      text: 'shift+nosuchkey' }, 'invalid_argument', /unknown key in 'shift\+nosuchkey'/);
    await fails({ action: 'hold_key', devbox_id: devbox, text: 'shift nosuchkey', duration: 0.1 },
      'invalid_argument', /unknown key/);
    await computer({ action: 'left_click', coordinate: [button.x0 + 150, button.y0 + 220] });
    await computer({ action: 'key', text: 'ctrl+a' });
    await computer({ action: 'type', text: 'low' });
    await computer({ action: 'key', text: 'Return' });
    await titleIs('typed low');
    await fails({ action: 'screenshot', devbox_id: 'dbx_no_such_devbox' }, 'not_found', /dbx_no_such_devbox/);
    // A devbox without the desktop image's tools.
    const plain = ok(await call('create_devbox', { name: 'not-a-desktop' })).structuredContent;
    const pid = plain.devbox_id ?? plain.id;
    e = await fails({ action: 'screenshot', devbox_id: pid }, 'invalid_argument', /not a desktop devbox/);
    assert.match(e.remedy, /runloop-mcp-desktop/);
    // The display is still there after all that.
    const pos = (await computer({ action: 'cursor_position' })).structuredContent;
    assert.equal(pos.display_width, 1024);
  });
});
