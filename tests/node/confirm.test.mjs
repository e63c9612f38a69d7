// confirm.test.mjs — calls a person confirms first (`confirm`, issue 46 point 3), with the
// official SDK clients: over `mcpmux connect` and over /mcp a legacy client is asked with a real
// elicitation/create (accept, decline, cancel, allow for the session, a client without the
// capability refused naming the key); a 2026-07-28 client gets input_required and its retry with
// the answer runs the call; declined calls are audited `declined`; the client cancelling while
// it is asked withdraws the question.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { startDaemon, fakeServer, freePort, mcpmux, resultText, waitFor, within, MCPMUX, NODE, TAP_BRIDGE } from './harness.mjs';
import { readMessages } from './schema.mjs';

const TOKEN = 'confirm-test-token-8f2d61-0a9b7c3e5d4f6a18';

/** A legacy SDK client; `answer(params)` answers each elicitation (none: no capability). */
async function legacyClient(transport, answer) {
  const client = new Client({ name: 'confirm-test', version: '1.0.0' }, { capabilities: answer ? { elicitation: {} } : {} });
  if (answer) client.setRequestHandler(ElicitRequestSchema, async (req) => answer(req.params));
  await within(10000, client.connect(transport), 'connect');
  return client;
}

function overSocket(d, profile = 'careful') {
  return new StdioClientTransport({ command: MCPMUX, args: ['--socket', d.socket, 'connect', '--profile', profile], stderr: 'pipe' });
}

async function history(d) {
  const r = await mcpmux(d.socket, ['history', '--json']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

describe('confirm: a person says yes before a destructive call runs', () => {
  let d;
  let port;
  const clients = [];
  const asked = [];

  before(async () => {
    port = await freePort();
    d = await startDaemon((dir) => ({
      daemon: { timeout_ms: 5000, http: `127.0.0.1:${port}`, http_tokens: { editor: TOKEN } },
      servers: {
        // echo is read-only; slow is destructive by the spec's defaults (no annotations).
        f: fakeServer({ log: `${dir}/f.jsonl`, args: ['--annotate', 'echo=readOnlyHint'] }),
      },
      profiles: { careful: { confirm: ['destructive', 'f__echo'] }, free: { confirm: [] } },
    }));
  });

  after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await d?.stop();
  });

  const received = () => readMessages(d.path('f.jsonl')).filter((m) => m.method === 'tools/call').map((m) => m.params.name);

  it('accept runs the call; the question names the tool and its arguments', async () => {
    const c = await legacyClient(overSocket(d), (p) => (asked.push(p), { action: 'accept', content: { allow_for_session: false } }));
    clients.push(c);
    const r = await c.callTool({ name: 'f__slow', arguments: { ms: 5 } });
    assert.equal(r.isError, undefined, resultText(r));
    assert.match(resultText(r), /slept 5/);
    assert.equal(asked.length, 1);
    assert.equal(asked[0].message, 'Allow f__slow with {"ms":5}?');
    assert.equal(asked[0].requestedSchema.properties.allow_for_session.type, 'boolean');
    // Without allow_for_session the next call is asked again.
    await c.callTool({ name: 'f__slow', arguments: { ms: 2 } });
    assert.equal(asked.length, 2);
    // A read-only tool is not destructive, but a glob names it.
    await c.callTool({ name: 'f__echo', arguments: { text: 'hi' } });
    assert.equal(asked.length, 3);
  });

  it('decline and cancel do not run it: a tool error, audited declined', async () => {
    let action = 'decline';
    const c = await legacyClient(overSocket(d), () => ({ action }));
    clients.push(c);
    const before = received().length;
    const declined = await c.callTool({ name: 'f__slow', arguments: { ms: 14 } });
    assert.equal(declined.isError, true);
    assert.match(resultText(declined), /declined the call of f__slow \(confirm in \[profiles\.careful\]\)/);
    action = 'cancel';
    const cancelled = await c.callTool({ name: 'f__slow', arguments: { ms: 16 } });
    assert.equal(cancelled.isError, true);
    assert.match(resultText(cancelled), /cancelled/);
    assert.equal(received().length, before, 'a declined call reached the server');
    let rows = [];
    assert.ok(await waitFor(async () => (rows = (await history(d)).filter((e) => e.outcome === 'declined')).length >= 2),
      'no declined rows in the audit log');
    assert.equal(rows[0].name, 'f__slow');
    assert.equal(rows[0].profile, 'careful');
  });

  it('allow for the rest of the session: asked once per connection', async () => {
    let n = 0;
    const c = await legacyClient(overSocket(d), () => (n++, { action: 'accept', content: { allow_for_session: true } }));
    clients.push(c);
    for (let i = 0; i < 3; i++) assert.equal((await c.callTool({ name: 'f__slow', arguments: { ms: i + 1 } })).isError, undefined);
    assert.equal(n, 1);
    const other = await legacyClient(overSocket(d), () => (n++, { action: 'accept' }));
    clients.push(other);
    await other.callTool({ name: 'f__slow', arguments: { ms: 2 } });
    assert.equal(n, 2, 'another connection was not asked');
  });

  it('a client without elicitation is refused with the key that would allow the call', async () => {
    const c = await legacyClient(overSocket(d), null);
    clients.push(c);
    const r = await c.callTool({ name: 'f__slow', arguments: { ms: 3 } });
    assert.equal(r.isError, true);
    assert.match(resultText(r), /did not declare the elicitation capability.*Remove it from confirm in \[profiles\.careful\]/s);
    // A profile whose confirm is empty asks nothing.
    const free = await legacyClient(overSocket(d, 'free'), null);
    clients.push(free);
    assert.match(resultText(await free.callTool({ name: 'f__slow', arguments: { ms: 3 } })), /slept 3/);
  });

  it('the client cancelling while it is asked withdraws the question', async () => {
    let release;
    const seen = new Promise((r) => (release = r));
    const c = await legacyClient(new StdioClientTransport({
      command: NODE, args: [TAP_BRIDGE, d.path('cancel.jsonl'), '--', MCPMUX, '--socket', d.socket, 'connect', '--profile', 'careful'], stderr: 'pipe',
    }), () => (release(), new Promise(() => {})));  // never answers
    clients.push(c);
    const abort = new AbortController();
    const call = c.callTool({ name: 'f__slow', arguments: { ms: 8 } }, undefined, { signal: abort.signal });
    await within(5000, seen, 'the question');
    abort.abort('changed my mind');
    await assert.rejects(call);
    assert.ok(await waitFor(() => readMessages(d.path('cancel.jsonl')).some((m) => m.method === 'notifications/cancelled')),
      'the question was not withdrawn');
    assert.ok(await waitFor(async () => (await history(d)).some((e) => e.name === 'f__slow' && e.outcome === 'cancelled')));
  });

  it('over /mcp: decline, then accept', async () => {
    let action = 'decline';
    const c = await legacyClient(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp/careful`), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }),
      () => ({ action }));
    clients.push(c);
    assert.equal((await c.callTool({ name: 'f__slow', arguments: { ms: 2 } })).isError, true);
    action = 'accept';
    assert.match(resultText(await c.callTool({ name: 'f__slow', arguments: { ms: 42 } })), /slept 42/);
  });

  it('a 2026-07-28 client gets input_required; its retry with the answer runs or refuses the call', async () => {
    let action = 'accept';
    const v2asked = [];
    const capture = d.path('v2.jsonl');
    const client = new ClientV2({ name: 'v2-confirm', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler('elicitation/create', async (req) => (v2asked.push(req.params), { action }));
    await within(15000, client.connect(new StdioV2({
      command: NODE, args: [TAP_BRIDGE, capture, '--', MCPMUX, '--socket', d.socket, 'connect', '--profile', 'careful'], stderr: 'pipe',
    })), 'v2 connect');
    clients.push(client);
    assert.match(resultText(await client.callTool({ name: 'f__slow', arguments: { ms: 42 } })), /slept 42/);
    assert.equal(v2asked.length, 1);
    assert.equal(v2asked[0].message, 'Allow f__slow with {"ms":42}?');
    assert.ok(readMessages(capture).some((m) => m.result?.resultType === 'input_required'), 'no input_required was sent');
    action = 'decline';
    const r = await client.callTool({ name: 'f__slow', arguments: { ms: 2 } });
    assert.equal(r.isError, true);
    assert.match(resultText(r), /declined/);
  });
});
