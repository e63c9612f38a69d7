// ${secret:NAME} from the desktop's Secret Service: a private session bus with GNOME Keyring on
// it (as a desktop session has), `mcpmux secret set` keeps the value there (secret-tool finds
// it, no secrets file is written), the daemon resolves it for a server and redacts it from the
// server's stderr; `mcpmux secret rm` forgets it. Without a service the file is used.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createInterface } from 'node:readline';
import { FAKE_MCP_SERVER, MCPMUX, mcpmux, startDaemon, waitFor, within } from './harness.mjs';

const VALUE = 'ss-4c2e9f0b7d1a63';

/** Runs a program with `env` over ours and `input` on stdin: {code, stdout, stderr}. */
function run(program, args, env, input = '') {
  return new Promise((resolve) => {
    const child = execFile(program, args, { env: { ...process.env, ...env } },
      (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr }));
    child.stdin.on('error', () => {}); // a command that reads no input may be gone already
    child.stdin.end(input);
  });
}

describe('the Secret Service behind ${secret:NAME}', () => {
  let dir, bus, keyring, env;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'mcpmux-keyring-'));
    for (const d of ['home', 'config', 'data']) mkdirSync(path.join(dir, d));
    const base = { HOME: path.join(dir, 'home'), XDG_CONFIG_HOME: path.join(dir, 'config'), XDG_DATA_HOME: path.join(dir, 'data') };
    // A session bus of our own; its address is its first line.
    bus = spawn('dbus-daemon', ['--session', '--nofork', '--print-address=1'], { stdio: ['ignore', 'pipe', 'ignore'] });
    const address = await within(5000, new Promise((resolve) => createInterface({ input: bus.stdout }).once('line', resolve)), 'dbus-daemon address');
    env = { ...base, DBUS_SESSION_BUS_ADDRESS: address.trim(), MCPMUX_SECRETS_FILE: '' };
    // GNOME Keyring on it, its login keyring unlocked with a password on stdin.
    keyring = spawn('gnome-keyring-daemon', ['--foreground', '--unlock', '--components=secrets'],
      { env: { ...process.env, ...env }, stdio: ['pipe', 'ignore', 'pipe'] });
    let said = '';
    keyring.stderr.on('data', (d) => (said += d));
    keyring.stdin.end('test-password');
    // Up once its login collection takes an item (it is made just after the unlock).
    const probe = ['store', '--label=probe', 'application', 'probe'];
    let last;
    assert.ok(await waitFor(async () => (last = await run("secret-tool", probe, env, "x")).code === 0, 20000, 100),
      `the keyring did not come up: ${last?.stderr} ${said}`);
    await run('secret-tool', ['clear', 'application', 'probe'], env);
  });

  after(() => {
    keyring?.kill();
    bus?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps a secret there, resolves it for a server, redacts it, and forgets it', async () => {
    const set = await run(MCPMUX, ['secret', 'set', 'TOKEN'], env, `${VALUE}\n`);
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stderr, /kept TOKEN in the Secret Service/);
    assert.ok(!existsSync(path.join(dir, 'config/mcpmux/secrets.json')), 'a secrets file was written');
    // It is a real item of the service: secret-tool finds it by its attributes.
    assert.equal((await run('secret-tool', ['lookup', 'application', 'mcpmux', 'name', 'TOKEN'], env)).stdout, VALUE);
    assert.equal((await run(MCPMUX, ['secret', 'list'], env)).stdout, 'TOKEN\n');

    const d = await startDaemon({
      servers: {
        leaky: {
          command: '/bin/sh',
          args: ['-c', `echo "token is $TOKEN" >&2; exec "${FAKE_MCP_SERVER}"`],
          env: { TOKEN: '${secret:TOKEN}' },
        },
      },
    }, { env });
    try {
      const logs = async () => (await mcpmux(d.socket, ['logs', 'leaky'])).stdout;
      assert.ok(await waitFor(async () => (await logs()).includes('token is [redacted]')), await logs());
      assert.ok(!(await logs()).includes(VALUE));
      assert.ok(!d.log().includes(VALUE));
    } finally {
      await d.stop();
    }

    const rm = await run(MCPMUX, ['secret', 'rm', 'TOKEN'], env);
    assert.equal(rm.code, 0, rm.stderr);
    assert.match(rm.stderr, /removed TOKEN from the Secret Service/);
    assert.notEqual((await run('secret-tool', ['lookup', 'application', 'mcpmux', 'name', 'TOKEN'], env)).code, 0);
    const again = await run(MCPMUX, ['secret', 'rm', 'TOKEN'], env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /no secret named "TOKEN"/);
  });

  it('a missing secret names both places; no service at all falls back to the file', async () => {
    const config = path.join(dir, 'missing.toml');
    writeFileSync(config, '[servers.x]\ncommand = "true"\nenv = { A = "${secret:MISSING}" }\n');
    const check = await run(path.join(path.dirname(MCPMUX), 'mcpmuxd'), ['--check-config', '--config', config], env);
    assert.notEqual(check.code, 0);
    assert.match(check.stdout + check.stderr, /no secret named "MISSING" in the Secret Service or .*secrets\.json/);

    // A bus nobody serves secrets on: the file is used, with a note.
    const noService = { ...env, DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/bus' };
    const set = await run(MCPMUX, ['secret', 'set', 'FILED'], noService, 'v-123456\n');
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stderr, /Secret Service did not answer.*using .*secrets\.json/);
    assert.match(set.stderr, /kept FILED in .*secrets\.json/);
    assert.equal((await run(MCPMUX, ['secret', 'list'], noService)).stdout, 'FILED\n');
  });
});
