// RUN --mount and the other Dockerfile flags of a buildah build, through
// the official Runloop SDK against a real devboxd. buildah 1.28 (Debian
// 12's) joins a cache mount's id to its cache dir unchecked
// (CVE-2024-9675) and follows a stage's symlinks out of a bind mount's
// source (CVE-2024-1753): a Dockerfile could list the host's /, read the
// host's /proc, write into a host dir and have the host's root make a dir
// with an owner of its choosing. Each of those is a 400 at create naming
// the line and what is allowed, nothing of it reaches the host, and the
// parser's tricks (continuation lines, quotes, ARG values) do not carry one
// past the check. What is allowed still works: a cache mount is kept
// between builds of the same engine (and not seen by another engine's), a
// bind mount reads the build context, read-only.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { describe, test } from 'node:test';
import { Devboxd, blueprintLog, blueprintSettled, rejectsWith, useEngine, waitFor } from './devboxd.mjs';

let client;
const engine = useEngine(new Devboxd({ env: { RLMCP_BUILDER: 'buildah' } }), (c) => { client = c; });
const other = new Devboxd({ env: { RLMCP_BUILDER: 'buildah' } });
const FROM = 'FROM runloop/starter-x86_64';
const SB_RANGE_BASE = 1048576;
const CACHE_ROOT = '/var/tmp/devboxd-buildah/cache';
const tag = randomBytes(6).toString('hex');
let otherCache = null; // the other engine's cache dir, gone after its state dir

// The cache dir of the engine on stateDir (its .owner file names it).
function cacheOf(stateDir) {
  const real = realpathSync(stateDir);
  const own = readdirSync(CACHE_ROOT).find((n) => n.endsWith('.owner')
    && readFileSync(`${CACHE_ROOT}/${n}`, 'utf8') === real);
  return own ? `${CACHE_ROOT}/${own.slice(0, -'.owner'.length)}` : null;
}

async function build(c, name, dockerfile, extra = {}) {
  const b = await c.blueprints.create({ name, ...(dockerfile ? { dockerfile } : {}), ...extra });
  const done = await blueprintSettled(c, b.id);
  const logs = await blueprintLog(c, b.id);
  return { done, logs };
}

describe('Dockerfile flags of buildah builds', () => {
  test('the host escapes are a 400 at create, naming the line and what is allowed', async () => {
    const hostTmp = `/tmp/devboxd-escape-${tag}`;
    const attacks = [
      // The published one: the host's / (and /var, four levels up).
      [`${FROM}\nRUN --mount=type=cache,id=../../../../..,target=/h ls /h\n`, 2, /cache id "\.\.\/\.\.\/\.\.\/\.\.\/\.\." must be a plain name/],
      [`${FROM}\nRUN --mount=type=cache,id=../../../..,target=/h ls /h\n`, 2, /cache id/],
      // The host's /proc: every process's command line.
      [`${FROM}\nRUN true\nRUN --mount=type=cache,id=../../../../../proc,target=/p cat /p/1/cmdline\n`, 3, /cache id/],
      // A write into a host dir, and a dir made by the host's root with an owner.
      [`${FROM}\nRUN --mount=type=cache,id=../../../../..${hostTmp},target=/t touch /t/written\n`, 2, /cache id/],
      [`${FROM}\nRUN --mount=type=cache,id=../../../../..${hostTmp}-owned,target=/t,uid=4242,gid=4242 true\n`, 2, /cache id/],
      // A stage's symlink out of a bind mount, the host's / as a bind source.
      [`${FROM} AS s\nRUN ln -s /proc /evil\n${FROM}\nRUN --mount=type=bind,from=s,source=evil,target=/h cat /h/1/cmdline\n`, 4, /a bind mount takes no from=/],
      [`${FROM}\nRUN --mount=type=bind,source=../../../../..,target=/h ls /h\n`, 2, /must be a path in the build context/],
      [`${FROM}\nRUN --mount=type=bind,source=/,target=/h ls /h\n`, 2, /must be a path in the build context/],
      // The same through the parser's tricks.
      [`${FROM}\nRUN \\\n  --mount=type=cache,id=../../../../..,target=/h \\\n  ls /h\n`, 2, /cache id/],
      [`${FROM}\nRUN --mount="type=cache,id=../../../../..,target=/h" ls /h\n`, 2, /no quote, backslash or variable/],
      [`${FROM}\nARG X=../../../../..\nRUN --mount=type=cache,id=$X,target=/h ls /h\n`, 3, /no quote, backslash or variable/],
      [`${FROM}\nRUN --mount=type=cache,ID=../../../../..,target=/h ls /h\n`, 2, /"ID=\.\.\/\.\.\/\.\.\/\.\.\/\.\." is not allowed in a cache mount/],
      [`${FROM}\nRUN --mount=type=tmpfs,target=/t --mount=type=cache,id=../../../../..,target=/h ls /h\n`, 2, /cache id/],
      [`${FROM}\nRUN --mount=type=cache,id=../../../../..,target=/h <<EOF\nls /h\nEOF\n`, 2, /cache id/],
      [`${FROM}\nONBUILD RUN --mount=type=cache,id=../../../../..,target=/h ls /h\n`, 2, /ONBUILD is not supported/],
      // Other flags that reach past the build.
      [`${FROM}\nRUN --network=host curl http://127.0.0.1:1/\n`, 2, /RUN --network is not allowed: a RUN step takes only --mount/],
      [`${FROM}\nRUN --security=insecure true\n`, 2, /RUN --security is not allowed/],
      [`${FROM}\nRUN --mount=type=secret,id=t cat /run/secrets/t\n`, 2, /type=secret is not supported/],
      [`${FROM}\nCOPY --link a /b\n`, 2, /COPY --link is not allowed: COPY takes only --from/],
    ];
    for (const [dockerfile, line, re] of attacks) {
      const err = await rejectsWith(assert, client.blueprints.create({ name: 'escape', dockerfile }), 400, re);
      assert.match(String(err.error?.message ?? err.message), new RegExp(`^line ${line}: `), dockerfile);
    }
    assert.equal(existsSync(hostTmp), false);
    assert.equal(existsSync(`${hostTmp}-owned`), false);
    // Refused before any build: none was queued.
    const list = await client.blueprints.list();
    assert.deepEqual((list.blueprints ?? []).filter((b) => b.name === 'escape'), []);
  });

  test('a system_setup_command that reads as a RUN flag is run as a shell command', async () => {
    const r = await build(client, 'setup-flag', null, {
      system_setup_commands: ['--mount=type=cache,id=../../../../..,target=/h ls /h'] });
    assert.equal(r.done.status, 'failed', r.logs);
    // buildah got a shell script (sh refuses a command line starting
    // with --), not a mount: nothing of the host was listed.
    assert.match(r.logs, /STEP "RUN sh -c "\$\(printf %b '--mount=type=cache/);
    assert.match(r.logs, /system_setup_commands\[0\] .* failed: command exited with code [1-9]/);
    assert.doesNotMatch(r.logs, /^info: (bin|boot|etc|proc|usr)$/m);
  });

  test('a cache mount is kept between builds of an engine, not seen by another engine', async () => {
    const stamp = `stamp-${tag}`;
    const first = await build(client, 'cache-1', [
      FROM,
      'RUN --mount=type=cache,id=pkgs,target=/var/cache/pkgs \\',
      `    echo ${stamp} > /var/cache/pkgs/stamp && echo wrote`,
      'USER user',
      'RUN --mount=type=cache,target=/home/user/.cache,uid=1000,gid=1000 touch /home/user/.cache/u && echo user-wrote',
    ].join('\n'));
    assert.equal(first.done.status, 'build_complete', first.logs);
    assert.match(first.logs, /^info: wrote$/m);
    assert.match(first.logs, /^info: user-wrote$/m);

    const second = await build(client, 'cache-2', [
      FROM,
      'RUN --mount=type=cache,id=pkgs,target=/c cat /c/stamp && test ! -e /var/cache/pkgs/stamp && echo not-in-image',
      'RUN --mount=type=cache,target=/home/user/.cache,uid=1000 ls -n /home/user/.cache',
    ].join('\n'));
    assert.equal(second.done.status, 'build_complete', second.logs);
    assert.match(second.logs, new RegExp(`info: ${stamp}`), 'the second build did not see the cache');
    assert.match(second.logs, /^info: not-in-image$/m);
    // In the build's own range: the file the step's user 1000 made is 1000's.
    assert.match(second.logs, /-rw-r--r-- +1 1000 1000 +0 .* u/);

    // On the host: the cache is owned by a build's id range, not by root.
    const owners = readdirSync(CACHE_ROOT).filter((n) => /^[0-9a-f]{16}$/.test(n))
      .map((n) => statSync(`${CACHE_ROOT}/${n}`));
    assert.ok(owners.length > 0);
    for (const st of owners) {
      assert.ok(st.uid >= SB_RANGE_BASE, `a cache dir is owned by host uid ${st.uid}`);
      assert.equal(st.mode & 0o777, 0o700);
    }

    await other.start();
    try {
      const c2 = other.client();
      const third = await build(c2, 'cache-other', [
        FROM,
        'RUN --mount=type=cache,id=pkgs,target=/c if test -e /c/stamp; then echo leaked; else echo fresh-cache; fi',
      ].join('\n'));
      assert.equal(third.done.status, 'build_complete', third.logs);
      assert.match(third.logs, /^info: fresh-cache$/m);
      assert.doesNotMatch(third.logs, /^info: leaked$/m);
      otherCache = cacheOf(other.stateDir);
      assert.ok(otherCache && existsSync(otherCache), 'the other engine has no cache dir of its own');
      assert.notEqual(otherCache, cacheOf(engine.stateDir));
    } finally {
      await other.cleanup();
    }
  });

  test('a bind mount reads the build context, read-only; tmpfs works', async () => {
    const r = await build(client, 'bind', [
      FROM,
      'RUN --mount=type=bind,source=app,target=/src --mount=type=tmpfs,target=/scratch \\',
      '    cat /src/data.txt && (touch /src/new 2>/dev/null && echo src-writable || echo src-read-only) \\',
      '    && touch /scratch/x && echo tmpfs-ok',
      'RUN --mount=type=bind,target=/ctx cat /ctx/app/data.txt | tr a-z A-Z',
    ].join('\n'), { file_mounts: { '/app/data.txt': `context-data-${tag}\n` } });
    assert.equal(r.done.status, 'build_complete', r.logs);
    assert.match(r.logs, new RegExp(`info: context-data-${tag}`));
    assert.match(r.logs, /^info: src-read-only$/m);
    assert.doesNotMatch(r.logs, /^info: src-writable$/m);
    assert.match(r.logs, /^info: tmpfs-ok$/m);
    assert.match(r.logs, new RegExp(`CONTEXT-DATA-${tag.toUpperCase()}`));
  });

  test('one build at a time holds the cache; a build meanwhile gets an empty one of its own', async () => {
    const holder = await client.blueprints.create({ name: 'cache-holder', dockerfile: [
      FROM,
      `RUN --mount=type=cache,id=busy,target=/c echo held-${tag} > /c/held && echo holding && sleep 30`,
    ].join('\n') });
    await waitFor(async () => /^info: holding$/m.test(await blueprintLog(client, holder.id)) || null,
      { timeoutMs: 300000, stepMs: 200, what: 'the holder to run its step' });
    const meanwhile = await build(client, 'cache-meanwhile', [
      FROM,
      'RUN --mount=type=cache,id=busy,target=/c if test -e /c/held; then echo saw-held; else echo empty-cache; fi; echo mine > /c/mine',
    ].join('\n'));
    assert.equal(meanwhile.done.status, 'build_complete', meanwhile.logs);
    assert.match(meanwhile.logs, /the build cache is in use by another build; this build's cache mounts start empty/);
    assert.match(meanwhile.logs, /^info: empty-cache$/m);
    assert.equal(existsSync(`/var/tmp/devboxd-buildah/${meanwhile.done.id}`), false, 'the build left its temp dir');
    const held = await blueprintSettled(client, holder.id);
    assert.equal(held.status, 'build_complete', await blueprintLog(client, holder.id));
    // The owner's cache has the holder's file, not the other build's.
    const after = await build(client, 'cache-after', [
      FROM,
      'RUN --mount=type=cache,id=busy,target=/c cat /c/held; test -e /c/mine && echo has-mine || echo no-mine',
    ].join('\n'));
    assert.equal(after.done.status, 'build_complete', after.logs);
    assert.match(after.logs, new RegExp(`^info: held-${tag}$`, 'm'));
    assert.match(after.logs, /^info: no-mine$/m);
    // The cache of the other engine, whose state dir is gone, was removed
    // by a build since.
    if (otherCache) assert.equal(existsSync(otherCache), false, `${otherCache} was left`);
  });
});
