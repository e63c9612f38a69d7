// OAuth logins end to end, against a loopback authorization server (oauth_server.mjs): what the
// conformance suite does not cover. A real mcpmuxd; `mcpmux auth login` with a $BROWSER that
// follows the redirect as a person's browser would; the official SDK client on the socket.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { HERE, mcpmux, resultText, sleep, startDaemon, waitFor } from './harness.mjs';
import { startOAuthServer } from './oauth_server.mjs';

const BROWSER = path.join(HERE, '../conformance/browser.mjs');
const config = (url) => ({ servers: { oauth: { type: 'http', url, era: 'legacy', oauth: true } } });

async function serverState(d, name = 'oauth') {
  const st = await d.status();
  return st?.servers?.find((s) => s.name === name);
}
async function login(d, name = 'oauth') {
  const r = await mcpmux(d.socket, ['auth', 'login', name], { env: { BROWSER }, timeout: 30000 });
  assert.equal(r.code, 0, `auth login failed: ${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /open this URL in a browser/);
  assert.match(r.stdout, new RegExp(`logged in to '${name}'`));
  assert.ok(await waitFor(async () => (await serverState(d, name))?.state === 'ready', 10000), 'ready after the login');
}
const whoami = (client) => client.callTool({ name: 'oauth__whoami', arguments: {} });
// No token, refresh token or code may appear where people and logs look.
function assertNoSecrets(text, what) {
  assert.doesNotMatch(text, /(at|rt|code)-\d+-SECRET/, `${what} shows a secret`);
}

test('a server that wants a login waits for it, gets it from `mcpmux auth login`, keeps it across a restart', async () => {
  const as = await startOAuthServer();
  // The logins' directory outlives the first daemon (whose temp dir goes when it stops).
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'mcpmux-oauth-state-'));
  const d = await startDaemon(config(as.url), { waitReady: false, stateDir });
  let d2;
  try {
    // Needs login: said in status (state and the command), no reconnect loop.
    assert.ok(await waitFor(async () => (await serverState(d))?.state === 'needs_login', 10000));
    const before = await serverState(d);
    assert.match(before.last_error, /mcpmux auth login oauth/);
    assert.equal(before.auth.state, 'needs_login');
    assert.equal(before.auth.command, 'mcpmux auth login oauth');
    await sleep(1500);
    assert.equal((await serverState(d)).attempt, 0, 'no reconnect attempts while waiting for a login');

    const client = await d.connect();
    await login(d);
    assert.equal(as.stats.registrations, 1);
    assert.equal(resultText(await whoami(client)), 'login 1');

    const st = await mcpmux(d.socket, ['auth', 'status', '--json']);
    assert.equal(st.code, 0, st.stderr);
    const auth = JSON.parse(st.stdout).servers[0];
    assert.equal(auth.state, 'logged_in');
    assert.equal(auth.logged_in, true);
    assert.equal(auth.method, 'authorization_code');
    assert.ok(auth.expires_at > Date.now() / 1000);
    assertNoSecrets(st.stdout, 'auth status');
    assertNoSecrets(JSON.stringify(await d.status()), 'status');

    // Kept on disk, private.
    const dir = path.join(stateDir, 'mcpmux/oauth');
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    const file = path.join(dir, readdirSync(dir)[0]);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const firstLog = d.log();
    await d.stop();

    // A new daemon on the same state: logged in at once, no new registration or login.
    d2 = await startDaemon(config(as.url), { stateDir });
    const c2 = await d2.connect();
    assert.equal(resultText(await whoami(c2)), 'login 1');
    assert.equal(as.stats.registrations, 1);
    assert.equal(as.stats.authorizations, 1);
    assertNoSecrets(firstLog + d2.log(), 'the daemon log');
  } finally {
    await d2?.stop();
    await d.stop().catch(() => {});
    await as.close();
    rmSync(stateDir, { recursive: true, force: true });
  }
});

test('a refused token is refreshed once (rotation), a revoked login becomes needs login, logout revokes', async () => {
  const as = await startOAuthServer();
  const d = await startDaemon(config(as.url), { waitReady: false });
  try {
    assert.ok(await waitFor(async () => (await serverState(d))?.state === 'needs_login', 10000));
    const client = await d.connect();
    await login(d);
    assert.equal(resultText(await whoami(client)), 'login 1');

    // The provider stops taking the access token mid-use: one refresh, the call retried.
    await as.admin('expire-access');
    assert.equal(resultText(await whoami(client)), 'login 2');
    assert.equal(as.stats.refreshes, 1);
    const kept = readFileSync(path.join(d.dir, 'state/mcpmux/oauth', readdirSync(path.join(d.dir, 'state/mcpmux/oauth'))[0]), 'utf8');
    assert.match(kept, /rt-2-SECRET/, 'the rotated refresh token is kept');
    assert.doesNotMatch(kept, /rt-1-SECRET/);

    // Revoked at the provider: the refresh is refused once, then needs login — never a loop.
    await as.admin('revoke-all');
    await assert.rejects(whoami(client), /needs login: run `mcpmux auth login oauth`/);
    assert.ok(await waitFor(async () => (await serverState(d))?.state === 'needs_login', 5000));
    await assert.rejects(whoami(client), /mcpmux auth login oauth/);
    await sleep(500);
    assert.equal(as.stats.refused, 1, 'one refused refresh, not a loop');

    // Logged in again: back to work without a restart of anything.
    await login(d);
    assert.equal(resultText(await whoami(client)), 'login 3');

    // Logout revokes the refresh token where the server offers revocation, then forgets it.
    const out = await mcpmux(d.socket, ['auth', 'logout', 'oauth']);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /logged out of 'oauth' \(token revocation: requested\)/);
    assert.ok(await waitFor(() => as.stats.revoked.includes('rt-3-SECRET'), 5000), 'revocation sent');
    assert.ok(await waitFor(async () => (await serverState(d))?.state === 'needs_login', 5000));
    assertNoSecrets(d.log(), 'the daemon log');
  } finally {
    await d.stop();
    await as.close();
  }
});

test('tokens are refreshed in the background before they expire', async () => {
  const as = await startOAuthServer({ expiresIn: 4 }); // refreshed at half its life
  const d = await startDaemon(config(as.url), { waitReady: false });
  try {
    assert.ok(await waitFor(async () => (await serverState(d))?.state === 'needs_login', 10000));
    const client = await d.connect();
    await login(d);
    assert.ok(await waitFor(() => as.stats.refreshes >= 2, 8000), `refreshes: ${as.stats.refreshes}`);
    assert.match(resultText(await whoami(client)), /^login [3-9]/);
    assert.ok(as.stats.refreshes <= 4, `no refresh storm: ${as.stats.refreshes}`);
  } finally {
    await d.stop();
    await as.close();
  }
});

test('a server configured with only its URL is found to want OAuth by its 401; `oauth = false` keeps the 401 an error', async () => {
  const named = await startOAuthServer(); // its 401 names its resource metadata
  const wellKnown = await startOAuthServer({ challenge: false }); // metadata at the RFC 9728 URL only
  const plain = await startOAuthServer();
  const d = await startDaemon(
    { servers: { oauth: { type: 'http', url: named.url }, found: { type: 'http', url: wellKnown.url }, off: { type: 'http', url: plain.url, oauth: false } } },
    { waitReady: false },
  );
  try {
    for (const name of ['oauth', 'found']) {
      assert.ok(await waitFor(async () => (await serverState(d, name))?.state === 'needs_login', 10000), `${name}: needs_login`);
      const s = await serverState(d, name);
      assert.match(s.last_error, new RegExp(`needs login: run \`mcpmux auth login ${name}\``));
      assert.equal(s.auth.state, 'needs_login');
      assert.equal(s.auth.command, `mcpmux auth login ${name}`);
    }
    // Opted out: the 401 stays an error, retried with backoff; no login is offered for it.
    assert.ok(await waitFor(async () => /HTTP 401/.test((await serverState(d, 'off'))?.last_error ?? ''), 10000));
    const off = await serverState(d, 'off');
    assert.notEqual(off.state, 'needs_login');
    assert.equal(off.auth, undefined);
    const refusedLogin = await mcpmux(d.socket, ['auth', 'login', 'off']);
    assert.notEqual(refusedLogin.code, 0);
    assert.match(refusedLogin.stderr + refusedLogin.stdout, /logs in with OAuth/);
    // While `off` retries, the servers waiting for a login try nothing.
    const asked = named.stats.unauthorized;
    const offTries = plain.stats.unauthorized;
    assert.ok(await waitFor(() => plain.stats.unauthorized >= offTries + 2, 10000), '`off` retried');
    assert.equal(named.stats.unauthorized, asked, 'no retries while waiting for a login');
    assert.equal((await serverState(d, 'oauth')).attempt, 0);
    const st = await mcpmux(d.socket, ['auth', 'status', '--json']);
    assert.deepEqual(JSON.parse(st.stdout).servers.map((s) => s.server).sort(), ['found', 'oauth']);

    // The login is the one of an `oauth = true` server; then the tools are served.
    const client = await d.connect();
    await login(d, 'oauth');
    await login(d, 'found');
    assert.equal(resultText(await whoami(client)), 'login 1');
    assert.equal(resultText(await client.callTool({ name: 'found__whoami', arguments: {} })), 'login 1');
    assert.equal(named.stats.registrations, 1);
    assert.equal((await serverState(d, 'oauth')).auth.state, 'logged_in');
  } finally {
    await d.stop();
    await Promise.all([named.close(), wellKnown.close(), plain.close()]);
  }
});

test('a 401 to the token a config gives (headers, token_command) is a bad token, not a login', async () => {
  const as = await startOAuthServer();
  const d = await startDaemon(
    {
      servers: {
        header: { type: 'http', url: as.url, headers: { Authorization: 'Bearer wrong' } },
        command: { type: 'http', url: as.url, token_command: 'echo wrong' },
      },
    },
    { waitReady: false },
  );
  try {
    for (const [name, said] of [['header', /refused the Authorization header given in headers/], ['command', /refused the token from token_command/]]) {
      assert.ok(await waitFor(async () => said.test((await serverState(d, name))?.last_error ?? ''), 10000), `${name}: ${(await serverState(d, name))?.last_error}`);
      const s = await serverState(d, name);
      assert.match(s.last_error, /HTTP 401/);
      assert.notEqual(s.state, 'needs_login');
      assert.equal(s.auth, undefined);
    }
  } finally {
    await d.stop();
    await as.close();
  }
});
