// ${secret:NAME} end to end: `mcpmux secret set` keeps a value in a 0600 file, the daemon gives
// it to a server, and the value never shows where a person looks — `mcpmux logs` (the server
// printed it to stderr), `mcpmux status`, the daemon's own log. A secrets file others can read
// is refused.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { FAKE_MCP_SERVER, MCPMUX, MCPMUXD, mcpmux, startDaemon, waitFor } from './harness.mjs';

const execFileP = promisify(execFile);
const VALUE = 'sk-test-4f9d2c71e0b8a6';

/** `mcpmux secret ARGS` with the secrets file at `file`, `input` on stdin. */
function secret(file, args, input = '') {
  return new Promise((resolve) => {
    const child = execFile(
      MCPMUX,
      ['secret', ...args],
      { env: { ...process.env, MCPMUX_SECRETS_FILE: file } },
      (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr }),
    );
    child.stdin.on('error', () => {}); // a command that reads no input may be gone already
    child.stdin.end(input);
  });
}

test('a secret reaches its server and is redacted from logs, status and the daemon log', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mcpmux-secrets-'));
  const file = path.join(dir, 'secrets.json');
  try {
    const set = await secret(file, ['set', 'TOKEN'], `${VALUE}\n`);
    assert.equal(set.code, 0, set.stderr);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal((await secret(file, ['list'])).stdout, 'TOKEN\n');
    assert.ok(!(await secret(file, ['list'])).stdout.includes(VALUE));

    const d = await startDaemon(
      {
        servers: {
          leaky: {
            command: '/bin/sh',
            // The server prints what it was given, as a careless one would.
            args: ['-c', `echo "token is $TOKEN" >&2; exec "${FAKE_MCP_SERVER}"`],
            env: { TOKEN: '${secret:TOKEN}' },
          },
        },
      },
      { env: { MCPMUX_SECRETS_FILE: file } },
    );
    try {
      // The line is there, so the server got the value; the value is not.
      const logged = async () => (await mcpmux(d.socket, ['logs', 'leaky'])).stdout;
      assert.ok(await waitFor(async () => (await logged()).includes('token is [redacted]')), await logged());
      const all = [
        (await mcpmux(d.socket, ['logs', 'leaky'])).stdout,
        (await mcpmux(d.socket, ['status', '--json'])).stdout,
        (await mcpmux(d.socket, ['status'])).stdout,
        readFileSync(d.logFile, 'utf8'),
      ].join('\n');
      assert.ok(!all.includes(VALUE), 'the secret leaked');
      const call = await mcpmux(d.socket, ['call', 'leaky__echo', '{"text":"still works"}']);
      assert.equal(call.code, 0, call.stderr);
      assert.match(call.stdout, /still works/);
    } finally {
      await d.stop();
    }

    // A secrets file others can read is refused, with the fix in the message.
    chmodSync(file, 0o644);
    const cfg = path.join(dir, 'config.toml');
    writeFileSync(cfg, '[servers.a]\ncommand = "x"\nenv = { T = "${secret:TOKEN}" }\n');
    const check = await execFileP(MCPMUXD, ['--config', cfg, '--check-config'], {
      env: { ...process.env, MCPMUX_SECRETS_FILE: file },
    }).catch((e) => e);
    assert.equal(check.code, 1);
    assert.match(check.stderr, /servers\.a\.env\.T: .*readable by others.*chmod 600/);
    assert.ok(!check.stderr.includes(VALUE));
    const listed = await secret(file, ['list']);
    assert.equal(listed.code, 1);
    assert.match(listed.stderr, /chmod 600/);

    chmodSync(file, 0o600);
    assert.equal((await secret(file, ['rm', 'TOKEN'])).code, 0);
    assert.equal((await secret(file, ['list'])).stdout, '');
    assert.equal((await secret(file, ['rm', 'TOKEN'])).code, 1);
    assert.equal((await secret(file, ['set', 'bad name'])).code, 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
