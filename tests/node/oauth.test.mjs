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

async function serverState(d) {
  const st = await d.status();
  return st?.servers?.find((s) => s.name === 'oauth');
}
async function login(d) {
  const r = await mcpmux(d.socket, ['auth', 'login', 'oauth'], { env: { BROWSER }, timeout: 30000 });
  assert.equal(r.code, 0, `auth login failed: ${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /open this URL in a browser/);
  assert.match(r.stdout, /logged in to 'oauth'/);
  assert.ok(await waitFor(async () => (await serverState(d))?.state === 'ready', 10000), 'ready after the login');
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
