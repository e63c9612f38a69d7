// The audit log end to end: the official SDK client's calls through `mcpmux connect` — answered,
// tool errors, refused names, timeouts, cancelled — and every spawn are in `mcpmux history`
// with who, profile, server, outcome, duration and sizes; arguments only with audit_arguments,
// secrets redacted; `mcpmux history` filters; a daemon killed with -9 while it writes leaves
// a store the next one reads.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { fakeServer, freePort, MCPMUX, mcpmux, startDaemon, waitFor, within } from './harness.mjs';

const SECRET = 'sk-audit-5e1f0a9c3d77';

async function history(d, args = []) {
  const r = await mcpmux(d.socket, ['history', '--json', ...args]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

async function connect(d) {
  const client = new Client({ name: 'audit-test', version: '1.0.0' });
  await within(
    10000,
    client.connect(new StdioClientTransport({ command: MCPMUX, args: ['--socket', d.socket, 'connect'], stderr: 'pipe' })),
    'connect',
  );
  d.clients.push(client);
  return client;
}

test('every call, refusal and spawn is in the audit log, with arguments redacted', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mcpmux-audit-'));
  const secrets = path.join(dir, 'secrets.json');
  writeFileSync(secrets, JSON.stringify({ KEY: SECRET }), { mode: 0o600 });
  const d = await startDaemon(
    {
      daemon: { audit_arguments: true, timeout_ms: 300 },
      servers: { f: fakeServer({ env: { API_KEY: '${secret:KEY}' } }) },
    },
    { env: { MCPMUX_SECRETS_FILE: secrets } },
  );
  try {
    const client = await connect(d);
    assert.equal((await client.callTool({ name: 'f__echo', arguments: { text: `key ${SECRET}` } })).isError, undefined);
    assert.equal((await client.callTool({ name: 'f__error_result', arguments: {} })).isError, true);
    await assert.rejects(client.callTool({ name: 'f__hidden', arguments: {} }), /Unknown tool/);
    await assert.rejects(client.callTool({ name: 'f__slow', arguments: { ms: 2000 } }), /did not answer tools\/call within 300ms/);
    const abort = new AbortController();
    const cancelled = client.callTool({ name: 'f__slow', arguments: { ms: 250 } }, undefined, { signal: abort.signal });
    setTimeout(() => abort.abort('changed my mind'), 50);
    await assert.rejects(cancelled);

    let entries = [];
    assert.ok(
      await waitFor(async () => {
        entries = await history(d);
        return entries.filter((e) => e.kind === 'tools/call').length >= 5;
      }, 5000),
      JSON.stringify(entries),
    );
    const calls = entries.filter((e) => e.kind === 'tools/call');
    const by = (name, outcome) => calls.find((e) => e.name === name && e.outcome === outcome);
    const ok = by('f__echo', 'ok');
    assert.ok(ok, JSON.stringify(calls));
    assert.equal(ok.server, 'f');
    assert.match(ok.client, new RegExp(`^socket uid ${process.getuid()} pid \\d+ .*node`));  // the agent behind mcpmux connect
    assert.ok(ok.request_bytes > 0 && ok.response_bytes > 0, JSON.stringify(ok));
    assert.ok(ok.duration_us > 0);
    assert.equal(ok.detail, JSON.stringify({ text: 'key [redacted]' }));
    assert.ok(by('f__error_result', 'tool_error'));
    assert.equal(by('f__hidden', 'refused')?.server, '');
    const slow = calls.filter((e) => e.name === 'f__slow').map((e) => e.outcome).sort();
    assert.deepEqual(slow, ['cancelled', 'timeout']);
    const spawn = entries.find((e) => e.kind === 'spawn');
    assert.ok(spawn, JSON.stringify(entries));
    assert.equal(spawn.server, 'f');
    assert.match(spawn.detail, /fake_mcp_server/);
    assert.ok(!JSON.stringify(entries).includes(SECRET), 'the secret is in the audit log');

    // Filters: by tool, by server, by age, by count.
    assert.deepEqual((await history(d, ['f__error_result'])).map((e) => e.outcome), ['tool_error']);
    assert.equal((await history(d, ['--server', 'nope'])).length, 0);
    assert.equal((await history(d, ['-n', '2'])).length, 2);
    assert.ok((await history(d, ['--since', '1h'])).length >= 6);
    const bad = await mcpmux(d.socket, ['history', '--since', 'yesterday']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /90s, 15m, 1h or 2d/);
    const table = await mcpmux(d.socket, ['history'], { env: { COLUMNS: '200' } });
    assert.match(table.stdout, /tools\/call +f +f__error_result +tool_error/);

    const store = path.join(d.dir, 'state', 'mcpmux', 'state.db');
    assert.equal(statSync(store).mode & 0o777, 0o600);
  } finally {
    await d.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a daemon killed with -9 while it writes the audit log leaves a store the next one reads', async () => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'mcpmux-audit-state-'));
  try {
    const d = await startDaemon({ servers: { f: fakeServer() } }, { stateDir });
    const client = await connect(d);
    // Calls in flight all the time while the daemon dies.
    let stop = false;
    const load = (async () => {
      while (!stop) await Promise.all(Array.from({ length: 16 }, () => client.callTool({ name: 'f__echo', arguments: { text: 'x' } }).catch(() => {})));
    })();
    await new Promise((r) => setTimeout(r, 700));
    d.proc.kill('SIGKILL');
    stop = true;
    await load;
    await d.stop().catch(() => {});

    const restarted = Date.now();
    const again = await startDaemon({ servers: { f: fakeServer() } }, { stateDir });
    try {
      const before = await history(again, ['-n', '100']);
      assert.ok(before.filter((e) => e.kind === 'tools/call' && e.time_ms < restarted).length > 16,
        `${before.length} entries survived`);
      // And it goes on writing.
      const c2 = await connect(again);
      await c2.callTool({ name: 'f__echo', arguments: { text: 'after' } });
      assert.ok(await waitFor(async () => {
        const [last] = await history(again, ['f__echo', '-n', '1']);
        return last?.time_ms >= restarted;
      }, 5000));
    } finally {
      await again.stop();
    }
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
});

test('an HTTP client is audited and listed under the name of its token', async () => {
  const port = await freePort();
  const editor = 'ed-7d0c4b1e9a2f4c68b35e0a1d2c3b4a59';
  const d = await startDaemon({
    daemon: { http: `127.0.0.1:${port}`, http_tokens: { editor } },
    servers: { f: fakeServer() },
  });
  try {
    const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`),
      { requestInit: { headers: { Authorization: `Bearer ${editor}` } } });
    const client = new Client({ name: 'token-test', version: '1.0.0' });
    await within(10000, client.connect(transport), 'connect over HTTP');
    d.clients.push(client);
    await client.callTool({ name: 'f__echo', arguments: { text: 'hi' } });
    const session = (await d.status()).sessions.find((s) => s.transport === 'http');
    assert.equal(session?.token, 'editor', JSON.stringify((await d.status()).sessions));
    assert.ok(await waitFor(async () => (await history(d, ['f__echo']))[0]?.client === 'http token editor'),
      JSON.stringify(await history(d)));
    // The default token still passes and is named so; a wrong one is refused.
    const token = readFileSync((await d.status()).http.token_file, 'utf8').trim();
    const post = (bearer) => fetch(`http://127.0.0.1:${port}/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${bearer}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal((await post(`${editor}x`)).status, 401);
    assert.notEqual((await post(token)).status, 401);
    assert.ok(!d.log().includes(editor), 'the token is in the daemon log');
  } finally {
    await d.stop();
  }
});
