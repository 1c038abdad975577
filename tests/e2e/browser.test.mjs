// End-to-end: run_browser through the built host and the official MCP SDK
// client over stdio, against a real devboxd. A session is a devbox from the
// browser image (Chromium, Node, playwright-core); the test serves a page
// from inside that devbox (a node HTTP server on localhost) and drives it
// through every action, then checks the bad-input cases.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { checkStdioHostExit, closeStdioHost, connectStdioHost, pluginDir, sourceDir, waitFor } from './lib/host.mjs';
import { engineRequest, startEngineAndHost } from './lib/engine.mjs';

const conf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'browser-local.yaml');
const LONG = { timeout: 600000 };

const page = `<!doctype html>
<html><head><title>Form</title></head><body>
<h1 id="h">Hello browser</h1>
<a id="next" href="/next.html">next page</a>
<input id="name"> <button id="btn" onclick="out.textContent = 'clicked ' + document.getElementById('name').value">Go</button>
<div id="out"></div>
<input id="typed" oninput="typed_out.textContent = this.value"><div id="typed_out"></div>
<input type="checkbox" id="agree" onchange="agree_out.textContent = String(this.checked)"><div id="agree_out"></div>
<select id="color" onchange="color_out.textContent = this.value"><option value="r">Red</option><option value="g">Green</option></select>
<div id="color_out"></div>
<div id="hov" onmouseover="this.textContent = 'hovered'">hover me</div>
<form id="f" onsubmit="event.preventDefault(); form_out.textContent = 'submitted ' + q.value"><input id="q"></form>
<div id="form_out"></div>
<div id="late"></div>
<script>setTimeout(() => { late.innerHTML = '<span id="appeared">here now</span>'; }, 500);</script>
<div id="bottom" style="margin-top: 3000px">the end</div>
</body></html>
`;
const next = '<!doctype html><html><head><title>Next</title></head><body><p id="p">second page</p></body></html>\n';
const server = `const http = require('http'); const fs = require('fs');
http.createServer((q, s) => {
  const f = q.url === '/next.html' ? 'next.html' : 'index.html';
  s.writeHead(200, { 'content-type': 'text/html' });
  s.end(fs.readFileSync('/home/user/' + f));
}).listen(8080, '127.0.0.1', () => console.log('serving'));
`;

// The web app another devbox serves (python http.server): a script and a
// link by absolute path, as real apps have.
const appPage = '<!doctype html><html><head><title>Served</title><script src="/app.js" defer></script></head>' +
  '<body><h1 id="h">from another devbox</h1><div id="js">no script</div><a id="more" href="/more.html">more</a></body></html>\n';
const appJs = "document.getElementById('js').textContent = 'script ran';\n";
const morePage = '<!doctype html><html><head><title>More</title></head><body><p id="m">more page</p></body></html>\n';

describe('run_browser end to end (local engine, browser image)', () => {
  let stack;
  let client;
  let session;
  let sock;

  const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 590000 });
  const diag = (r) => `${JSON.stringify(r.content).slice(0, 2000)}\n--- host:\n${stack.host.err.slice(-3000)}\n--- devboxd:\n${stack.engine.stderr().slice(-3000)}`;
  const ok = (r) => {
    assert.notEqual(r.isError, true, diag(r));
    return r.structuredContent;
  };
  const browse = async (args) => ok(await call('run_browser', { session_id: session, ...args }));
  const fails = async (args, code, re) => {
    const r = await call('run_browser', args);
    assert.equal(r.isError, true, `expected an error: ${JSON.stringify(r.structuredContent)}`);
    const e = JSON.parse(r.content[0].text).error;
    if (code) assert.equal(e.code, code, e.message);
    if (re) assert.match(e.message, re);
    return e;
  };

  before(async () => {
    stack = await startEngineAndHost({ name: 'browser', conf, plugins: ['browser'] });
    ({ client } = stack);
    sock = stack.engine.sock;
  });

  after(() => stack?.stop());

  it('starts a session with a data: URL and serves a page inside its devbox', LONG, async () => {
    const first = ok(await call('run_browser', {
      action: 'navigate', value: 'data:text/html,<title>Inline</title><p id="x">inline page</p>',
    }));
    assert.equal(first.new_session, true);
    assert.equal(first.title, 'Inline');
    assert.match(first.session_id, /^[A-Za-z0-9_.-]+$/);
    session = first.session_id;
    // The session id is its devbox: the page and its server go there.
    for (const [f, contents] of [['index.html', page], ['next.html', next], ['server.js', server]]) {
      ok(await call('write_file', { devbox_id: session, file_path: `/home/user/${f}`, contents }));
    }
    ok(await call('execute_command_async', { devbox_id: session, command: 'cd /home/user && node server.js' }));
    const up = ok(await call('execute_command', {
      devbox_id: session,
      command: 'for i in $(seq 1 300); do curl -sf -o /dev/null http://127.0.0.1:8080/ && exit 0; sleep 0.1; done; exit 1',
    }));
    assert.equal(up.exit_code, 0, up.stderr);
  });

  it('navigate, get_text, get_attribute on the served page', LONG, async () => {
    const nav = await browse({ action: 'navigate', value: 'http://127.0.0.1:8080/' });
    assert.equal(nav.new_session, false);
    assert.equal(nav.session_id, session);
    assert.equal(nav.title, 'Form');
    assert.equal(nav.status, 200);
    assert.equal((await browse({ action: 'get_text', selector: '#h' })).text, 'Hello browser');
    // As the Python runloop-mcp sends it: the selector as value.
    assert.equal((await browse({ action: 'get_text', value: '#h' })).text, 'Hello browser');
    const attr = await browse({ action: 'get_attribute', selector: '#next', value: 'href' });
    assert.equal(attr.text, '/next.html');
    assert.match((await browse({ action: 'get_text' })).text, /hover me/);
  });

  it('fill, click, type, press', LONG, async () => {
    await browse({ action: 'fill', selector: '#name', value: 'Ada' });
    await browse({ action: 'click', selector: '#btn' });
    assert.equal((await browse({ action: 'get_text', selector: '#out' })).text, 'clicked Ada');
    await browse({ action: 'type', selector: '#typed', value: 'xyz' });
    assert.equal((await browse({ action: 'get_text', selector: '#typed_out' })).text, 'xyz');
    await browse({ action: 'fill', selector: '#q', value: 'query' });
    await browse({ action: 'press', selector: '#q', value: 'Enter' });
    assert.equal((await browse({ action: 'get_text', selector: '#form_out' })).text, 'submitted query');
    // press without a selector goes to the focused element.
    await browse({ action: 'fill', selector: '#q', value: 'again' });
    await browse({ action: 'click', selector: '#q' });
    await browse({ action: 'press', value: 'Enter' });
    assert.equal((await browse({ action: 'get_text', selector: '#form_out' })).text, 'submitted again');
  });

  it('check, uncheck, select_option, hover, wait_for_selector', LONG, async () => {
    await browse({ action: 'check', selector: '#agree' });
    assert.equal((await browse({ action: 'get_text', selector: '#agree_out' })).text, 'true');
    await browse({ action: 'uncheck', selector: '#agree' });
    assert.equal((await browse({ action: 'get_text', selector: '#agree_out' })).text, 'false');
    const sel = await browse({ action: 'select_option', selector: '#color', value: 'Green' });
    assert.deepEqual(sel.selected, ['g']);
    assert.equal((await browse({ action: 'get_text', selector: '#color_out' })).text, 'g');
    await browse({ action: 'hover', selector: '#hov' });
    assert.equal((await browse({ action: 'get_text', selector: '#hov' })).text, 'hovered');
    await browse({ action: 'wait_for_selector', selector: '#appeared' });
    assert.equal((await browse({ action: 'get_text', selector: '#appeared' })).text, 'here now');
  });

  it('scroll by value and to an element', LONG, async () => {
    const down = await browse({ action: 'scroll', value: 'bottom' });
    assert.ok(down.scroll.y > 1000, JSON.stringify(down.scroll));
    const up = await browse({ action: 'scroll', value: '-500' });
    assert.equal(up.scroll.y, down.scroll.y - 500);
    const top = await browse({ action: 'scroll', value: 'top' });
    assert.equal(top.scroll.y, 0);
    const el = await browse({ action: 'scroll', selector: '#bottom' });
    assert.ok(el.scroll.y > 1000, JSON.stringify(el.scroll));
  });

  it('screenshot comes back as an image and is saved in the devbox', LONG, async () => {
    const r = await call('run_browser', { session_id: session, action: 'screenshot', value: '/home/user/shot.png' });
    assert.notEqual(r.isError, true, diag(r));
    const img = r.content.find((c) => c.type === 'image');
    assert.ok(img, JSON.stringify(r.content.map((c) => c.type)));
    assert.equal(img.mimeType, 'image/png');
    const png = Buffer.from(img.data, 'base64');
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.equal(r.structuredContent.path, '/home/user/shot.png');
    assert.equal(r.structuredContent.bytes, png.length);
    const size = ok(await call('execute_command', { devbox_id: session, command: 'stat -c %s /home/user/shot.png' }));
    assert.equal(Number(size.stdout.trim()), png.length);
    // full_page: taller than the 720-pixel viewport (PNG height at bytes 20-23).
    const full = await call('run_browser', { session_id: session, action: 'screenshot', full_page: true });
    assert.notEqual(full.isError, true, diag(full));
    const fpng = Buffer.from(full.content.find((c) => c.type === 'image').data, 'base64');
    assert.ok(fpng.readUInt32BE(20) > 720, `full page height ${fpng.readUInt32BE(20)}`);
    const el = await call('run_browser', { session_id: session, action: 'screenshot', selector: '#h' });
    assert.notEqual(el.isError, true, diag(el));
    assert.ok(el.content.some((c) => c.type === 'image' && c.mimeType === 'image/png'));
  });

  it('click a link, wait_for_navigation', LONG, async () => {
    await browse({ action: 'click', selector: '#next' });
    const nav = await browse({ action: 'wait_for_navigation', value: '**/next.html' });
    assert.match(nav.url, /\/next\.html$/);
    assert.equal(nav.title, 'Next');
    assert.equal((await browse({ action: 'get_text', selector: '#p' })).text, 'second page');
    // Without a pattern: until the page has loaded.
    const loaded = await browse({ action: 'wait_for_navigation' });
    assert.equal(loaded.title, 'Next');
  });

  it('a selector that matches nothing is a clear error within the action timeout', LONG, async () => {
    const e = await fails({ session_id: session, action: 'click', selector: '#nope', timeout_ms: 1500 }, 'not_found',
      /no element matches selector "#nope" \(waited 1500 ms\)/);
    assert.match(e.remedy, /wait_for_selector/);
    // The session is still usable afterwards.
    assert.equal((await browse({ action: 'get_text', selector: '#p' })).text, 'second page');
  });

  it('bad input is refused before it reaches a devbox', LONG, async () => {
    await fails({ session_id: session, action: 'click' }, 'invalid_argument', /missing selector/);
    await fails({ session_id: session, action: 'fill', selector: '#q' }, 'invalid_argument', /missing value/);
    await fails({ session_id: session, action: 'navigate', value: 'javascript:alert(1)' }, 'invalid_argument', /URL/);
    for (const p of ['shot.png', '../shot.png', '/home/user/../../etc/x.png', '/proc/self/x.png', 'file:///tmp/x.png', '/tmp/x.gif']) {
      await fails({ session_id: session, action: 'screenshot', value: p }, 'invalid_argument', /cannot save the screenshot/);
    }
    const unknown = await call('run_browser', { session_id: session, action: 'teleport' });
    assert.equal(unknown.isError, true);
    assert.match(unknown.content[0].text, /action/);
    await fails({ action: 'close' }, 'invalid_argument', /session_id/);
    await fails({ session_id: 'dbx_no_such_session', action: 'get_text' }, 'not_found', /unknown session_id/);
    await fails({ session_id: '../etc', action: 'get_text' }, 'invalid_argument');
  });

  it('a devbox that is not a browser session is refused', LONG, async () => {
    const box = ok(await call('create_devbox', { name: 'plain' }));
    await fails({ session_id: box.id, action: 'get_text' }, 'invalid_argument', /not a browser session/);
    ok(await call('shutdown_devbox', { devbox_id: box.id }));
  });

  // The browser runs in its own devbox, whose 127.0.0.1 is its own: devboxd
  // listens on its tunnel port inside every devbox, so the URLs the API
  // returns for another devbox's tunnel open there as on the host.
  it("opens a web app another devbox serves, through the tunnel URLs the API returns", LONG, async () => {
    const box = ok(await call('create_devbox', { name: 'webapp' }));
    try {
      for (const [f, contents] of [['index.html', appPage], ['app.js', appJs], ['more.html', morePage]]) {
        ok(await call('write_file', { devbox_id: box.id, file_path: `/home/user/site/${f}`, contents }));
      }
      ok(await call('execute_command_async', { devbox_id: box.id,
        command: 'cd /home/user/site && exec python3 -m http.server 8080 --bind 0.0.0.0' }));
      const up = ok(await call('execute_command', { devbox_id: box.id,
        command: 'for i in $(seq 1 300); do curl -sf -o /dev/null http://127.0.0.1:8080/ && exit 0; sleep 0.1; done; exit 1' }));
      assert.equal(up.exit_code, 0, up.stderr);
      const tv = await engineRequest(sock, 'POST', `/v1/devboxes/${box.id}/enable_tunnel`, { auth_mode: 'open' });
      const fill = (t) => t.replace('{port}', '8080').replace('{tunnel_key}', tv.tunnel_key);
      // The path form: the page, its /app.js and its /more.html link by absolute path.
      const url = `${fill(tv.path_url_template)}/`;
      const nav = await browse({ action: 'navigate', value: url });
      assert.equal(nav.status, 200, JSON.stringify(nav));
      assert.equal(nav.title, 'Served');
      assert.equal((await browse({ action: 'get_text', selector: '#h' })).text, 'from another devbox');
      assert.equal((await browse({ action: 'get_text', selector: '#js' })).text, 'script ran');
      await browse({ action: 'click', selector: '#more' });
      const more = await browse({ action: 'wait_for_navigation', value: '**/more.html' });
      assert.equal(more.title, 'More');
      assert.equal(more.url, `${fill(tv.path_url_template)}/more.html`);
      // The *.localhost form: Chromium resolves it to its devbox's loopback.
      const sub = await browse({ action: 'navigate', value: `${fill(tv.url_template)}/` });
      assert.equal(sub.status, 200, JSON.stringify(sub));
      assert.equal(sub.title, 'Served');
      assert.equal((await browse({ action: 'get_text', selector: '#js' })).text, 'script ran');
    } finally {
      ok(await call('shutdown_devbox', { devbox_id: box.id }));
    }
  });

  it('close shuts the devbox down; the closed session refuses actions', LONG, async () => {
    const c = await browse({ action: 'close' });
    assert.equal(c.closed, true);
    assert.equal(c.devbox_status, 'shutdown');
    // The engine's own view: shut down, not suspended.
    const view = await engineRequest(sock, 'GET', `/v1/devboxes/${session}`);
    assert.equal(view.status, 'shutdown', JSON.stringify(view));
    await fails({ session_id: session, action: 'get_text' }, 'devbox_not_running', /is closed/);
    await fails({ session_id: session, action: 'close' }, 'devbox_not_running', /is closed/);
  });

  it('sessions opened and closed leave no devbox behind, suspended or running', LONG, async () => {
    const ids = [];
    for (let i = 0; i < 2; i++) {
      const s = ok(await call('run_browser', { action: 'navigate', value: `data:text/html,<title>S${i}</title>` }));
      assert.equal(s.new_session, true);
      assert.equal(s.title, `S${i}`);
      ids.push(s.session_id);
    }
    // A later action in each, then close.
    for (const id of ids) {
      assert.match(ok(await call('run_browser', { session_id: id, action: 'get_text' })).url, /^data:/);
      const c = ok(await call('run_browser', { session_id: id, action: 'close' }));
      assert.equal(c.devbox_status, 'shutdown');
    }
    // A session left suspended (closed by an older version, or by hand):
    // close shuts it down too.
    const left = ok(await call('run_browser', { action: 'navigate', value: 'about:blank' })).session_id;
    ids.push(left);
    await engineRequest(sock, 'POST', `/v1/devboxes/${left}/suspend`);
    await waitFor(async () => (await engineRequest(sock, 'GET', `/v1/devboxes/${left}`)).status === 'suspended',
      120000, 'the session to be suspended', 100);
    const c = ok(await call('run_browser', { session_id: left, action: 'close' }));
    assert.equal(c.closed, true);
    assert.equal(c.devbox_status, 'shutdown');
    // A session nobody closes (its agent forgot, or its host exited) ends
    // after idle_seconds without an action (5 s in this host's config).
    const idle = await connectStdioHost({
      name: 'browser-e2e-idle',
      args: ['--config', path.join(sourceDir, 'tests', 'e2e', 'conf', 'browser-idle.yaml')],
      env: { PATH: process.env.PATH, HOME: stack.tmp, RLMCP_PLUGIN_DIR: pluginDir, RLMCP_TEST_STATE_DIR: stack.state },
    });
    let forgotten;
    try {
      const first = await idle.client.callTool({ name: 'run_browser', arguments: { action: 'navigate', value: 'about:blank' } },
        undefined, { timeout: 590000 });
      assert.notEqual(first.isError, true, `${JSON.stringify(first.content)}\n--- idle host:\n${idle.err.slice(-3000)}`);
      forgotten = first.structuredContent.session_id;
      ids.push(forgotten);
      // Still usable before the idle time is up.
      ok(await call('run_browser', { session_id: forgotten, action: 'get_text' }));
    } finally {
      await closeStdioHost(idle);
    }
    await checkStdioHostExit(idle);
    const ended = await waitFor(async () => {
      const v = await engineRequest(sock, 'GET', `/v1/devboxes/${forgotten}`);
      return v.status === 'shutdown' ? v : null;
    }, 180000, 'the idle session to end', 250);
    assert.equal(ended.shutdown_reason, 'entrypoint_exit', JSON.stringify(ended));
    await fails({ session_id: forgotten, action: 'get_text' }, 'devbox_not_running', /ended by itself/);
    // Every browser session of this run, by the engine's API.
    const list = await engineRequest(sock, 'GET', '/v1/devboxes?limit=100');
    const mine = list.devboxes.filter((d) => d.metadata?.managed_by === 'runloop-mcp.browser');
    assert.deepEqual(mine.map((d) => d.id).sort(), [session, ...ids].sort());
    for (const d of mine) {
      assert.equal(d.status, 'shutdown', JSON.stringify({ id: d.id, status: d.status }));
    }
  });
});
