'use strict';
// run_browser's driver: one long-lived Node process inside a browser devbox.
// It launches the system Chromium through playwright-core, keeps one browser
// context and page alive, and answers one JSON action at a time on an HTTP
// server bound to a unix socket (reached with curl through the devbox's
// exec API). The browser runs without Chromium's own sandbox: the devbox is
// the sandbox, and it allows no user namespaces inside.
//
//   node driver.cjs --dir DIR [--executable PATH] [--width W] [--height H]
//                   [--idle-seconds N]
//
// DIR/driver.sock appears once the browser is up; DIR/driver.failed holds
// the reason when it could not start. The plugin embeds this file
// (plugins/browser/CMakeLists.txt) and runs it as the session devbox's
// entrypoint, so the session's end is the devbox's: the driver exits after a
// close (once the plugin had time to shut the devbox down itself), after N
// seconds without an action, and a while after its browser died (so the
// next action can still read why); the devbox then shuts down.
const fs = require('fs');
const http = require('http');
const path = require('path');

function option(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}

const dir = option('dir', '/tmp/rlmcp-browser');
const sock = path.join(dir, 'driver.sock');
const failed = path.join(dir, 'driver.failed');
const width = Number(option('width', '1280'));
const height = Number(option('height', '720'));
const idleMs = Number(option('idle-seconds', '0')) * 1000;
// How long the driver lingers after a failure or a close before it exits
// (which ends the devbox): a failed start is read by the waiting action.
const LINGER_MS = 60000;

// Blocks the thread (no more actions are taken) and then exits.
function lingerAndExit(code) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, LINGER_MS);
  process.exit(code);
}

function fail(message) {
  try { fs.writeFileSync(failed, `${message}\n`); } catch { /* reported below */ }
  fs.rmSync(sock, { force: true });
  process.stderr.write(`driver: ${message}\n`);
  lingerAndExit(1);
}

function loadPlaywright() {
  const tries = [process.env.RLMCP_PLAYWRIGHT, 'playwright-core',
    '/usr/local/lib/node_modules/playwright-core', '/usr/lib/node_modules/playwright-core'];
  for (const t of tries) {
    if (!t) continue;
    try { return require(t); } catch { /* next */ }
  }
  return fail('playwright-core is not installed in this devbox (looked in ' +
    '/usr/local/lib/node_modules and /usr/lib/node_modules); use the browser image or blueprint');
}

function findExecutable() {
  const given = option('executable', '');
  const tries = given ? [given] : ['/usr/bin/chromium', '/usr/bin/chromium-browser',
    '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];
  for (const t of tries) {
    if (fs.existsSync(t)) return t;
  }
  return fail(`no Chromium found (looked for ${tries.join(', ')})`);
}

// Text cut to at most max UTF-8 bytes, never inside a character.
function capText(text, max) {
  const buf = Buffer.from(text ?? '', 'utf8');
  if (buf.length <= max) return { text: text ?? '', truncated: false, bytes: buf.length };
  let end = max;
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--;
  return { text: buf.subarray(0, end).toString('utf8'), truncated: true, bytes: buf.length };
}

class ActionError extends Error {
  constructor(kind, message) { super(message); this.kind = kind; }
}

// Playwright's message without its call log, colour codes or stack.
function shortMessage(e) {
  const m = String(e && e.message ? e.message : e).replace(/\x1b\[[0-9;]*m/g, '');
  const cut = m.split('\nCall log:')[0].split('\n=====')[0].trim();
  return cut.length > 1000 ? `${cut.slice(0, 1000)}…` : cut;
}

async function main() {
  const { chromium } = loadPlaywright();
  const executablePath = findExecutable();
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.rmSync(sock, { force: true });
  fs.rmSync(failed, { force: true });
  let browser;
  try {
    browser = await chromium.launch({
      executablePath,
      headless: true,
      // /dev/shm in a devbox is small; Chromium then uses /tmp.
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
      // Minutes on a loaded machine; the plugin waits as long.
      timeout: 300000,
    });
  } catch (e) {
    return fail(`Chromium (${executablePath}) did not start: ${shortMessage(e)}`);
  }
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  let closing = false;
  let busy = 0;
  let lastAction = Date.now();
  const stop = async () => {
    closing = true;
    fs.rmSync(sock, { force: true });
    await context.close().catch(() => {});
    await browser.close().catch(() => {});
  };
  // A session nobody acts on any more (its agent forgot to close it, or its
  // host exited) ends by itself.
  if (idleMs > 0) {
    setInterval(async () => {
      if (closing || busy > 0 || Date.now() - lastAction < idleMs) return;
      process.stderr.write(`driver: no action for ${idleMs / 1000} s; ending the session\n`);
      await stop();
      process.exit(0);
    }, Math.min(5000, Math.max(500, idleMs / 4)));
  }

  const act = async (req) => {
    const timeout = Math.max(1, Math.min(Number(req.timeout_ms) || 10000, 600000));
    const maxText = Math.max(1, Number(req.max_text_bytes) || 65536);
    const sel = req.selector;
    const value = req.value;
    const loc = () => page.locator(sel).first();
    const out = {};
    // A selector that never matches is named as such, not as a timeout.
    const onElement = async (fn) => {
      try {
        return await fn();
      } catch (e) {
        if (e && e.name === 'TimeoutError') {
          let n = -1;
          try { n = await page.locator(sel).count(); } catch { /* invalid selector */ }
          if (n === 0) {
            throw new ActionError('no_match',
              `no element matches selector ${JSON.stringify(sel)} (waited ${timeout} ms)`);
          }
          throw new ActionError('timeout', `${shortMessage(e)} (an element matches ` +
            `${JSON.stringify(sel)} but did not become ready for ${req.action} within ${timeout} ms)`);
        }
        throw e;
      }
    };
    switch (req.action) {
      case 'navigate': {
        const resp = await page.goto(value, { timeout, waitUntil: 'load' });
        out.status = resp ? resp.status() : null;
        break;
      }
      case 'click': await onElement(() => loc().click({ timeout })); break;
      case 'hover': await onElement(() => loc().hover({ timeout })); break;
      case 'check': await onElement(() => loc().check({ timeout })); break;
      case 'uncheck': await onElement(() => loc().uncheck({ timeout })); break;
      case 'fill': await onElement(() => loc().fill(value, { timeout })); break;
      case 'type': await onElement(() => loc().pressSequentially(value, { timeout })); break;
      case 'press':
        if (sel) await onElement(() => loc().press(value, { timeout }));
        else await page.keyboard.press(value);
        break;
      case 'select_option':
        out.selected = await onElement(() => loc().selectOption(value, { timeout }));
        break;
      case 'get_text': {
        const t = await onElement(() => loc().innerText({ timeout }));
        const c = capText(t, maxText);
        out.text = c.text;
        out.text_truncated = c.truncated;
        out.text_bytes = c.bytes;
        break;
      }
      case 'get_attribute': {
        const a = await onElement(() => loc().getAttribute(value, { timeout }));
        out.attribute = value;
        out.text = a;
        break;
      }
      case 'wait_for_selector':
        await onElement(() => loc().waitFor({ state: value || 'visible', timeout }));
        break;
      case 'wait_for_navigation':
        if (value) await page.waitForURL(value, { timeout });
        else await page.waitForLoadState('load', { timeout });
        break;
      case 'scroll':
        if (sel) {
          await onElement(() => loc().scrollIntoViewIfNeeded({ timeout }));
        } else {
          await page.evaluate((v) => {
            if (v === 'top') window.scrollTo(0, 0);
            else if (v === 'bottom') window.scrollTo(0, document.documentElement.scrollHeight);
            else window.scrollBy(0, v === null ? window.innerHeight : Number(v));
          }, value ?? null);
        }
        out.scroll = await page.evaluate(() => ({ x: window.scrollX, y: window.scrollY }));
        break;
      case 'screenshot': {
        fs.mkdirSync(path.dirname(req.path), { recursive: true });
        const type = /\.jpe?g$/i.test(req.path) ? 'jpeg' : 'png';
        if (sel) await onElement(() => loc().screenshot({ path: req.path, type, timeout }));
        else await page.screenshot({ path: req.path, type, fullPage: !!req.full_page, timeout });
        out.path = req.path;
        out.bytes = fs.statSync(req.path).size;
        out.mime_type = `image/${type}`;
        break;
      }
      case 'close':
        closing = true;
        break;
      default:
        throw new ActionError('invalid', `unknown action ${JSON.stringify(req.action)}`);
    }
    out.url = page.url();
    // The title is read within the action's own bound: a short fixed bound
    // gave '' on a loaded machine.
    out.title = closing ? '' : await Promise.race([
      page.title().catch(() => ''), new Promise((r) => setTimeout(() => r(''), Math.max(2000, timeout)))]);
    return out;
  };

  // One action at a time: a page is not shared between concurrent actions.
  let queue = Promise.resolve();
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => { body += d; });
    // In flight from arrival to the reply's end (or the client's going).
    busy++;
    res.on('close', () => { busy--; lastAction = Date.now(); });
    req.on('end', () => {
      queue = queue.then(async () => {
        let reply;
        if (req.url === '/health') {
          reply = { ok: true, browser: browser.version() };
        } else {
          try {
            const r = JSON.parse(body);
            reply = { ok: true, ...(await act(r)) };
          } catch (e) {
            const kind = e instanceof ActionError ? e.kind
              : e && e.name === 'TimeoutError' ? 'timeout'
                : e instanceof SyntaxError ? 'invalid' : 'failed';
            reply = { ok: false, error: { kind, message: shortMessage(e) } };
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`${JSON.stringify(reply)}\n`);
        if (closing) {
          await stop();
          server.close();
          // The plugin shuts the devbox down right after the reply; exiting
          // at once could end it under the close's own command.
          lingerAndExit(0);
        }
      });
    });
  });
  server.listen(sock, () => {
    fs.chmodSync(sock, 0o600);
    process.stderr.write(`driver: Chromium ${browser.version()} ready on ${sock}\n`);
  });
  browser.on('disconnected', () => {
    if (!closing) fail('Chromium exited');
  });
}

main().catch((e) => fail(shortMessage(e)));
