// eras.test.mjs — the 2026-07-28 era through mcpmux: the official v2 TypeScript client
// (@modelcontextprotocol/client 2.4.0), pinned to 2026-07-28, through `mcpmux connect` in front
// of legacy servers (fake_mcp_server and server-everything, SDK 1.x): discover, tools, a call,
// progress, a server's elicitation answered through MRTR, a list change on a listen stream —
// and everything mcpmux sent the client validated against the 2026-07-28 schema.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyHTTP } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { startDaemon, fakeServer, resultText, within, sleep, waitFor, freePort, NODE, TAP_BRIDGE, MCPMUX, EVERYTHING_JS } from './harness.mjs';
import { validateMessages, assertReport, readMessages } from './schema.mjs';
import { ElicitRequestSchema, ResourceUpdatedNotificationSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { HERE } from './harness.mjs';

const MODERN_JS = path.join(HERE, 'modern_server.mjs');

const MODERN = '2026-07-28';

/** A v2 client on `mcpmux connect` (through tap_bridge when `capture` names a file). */
async function connectV2(daemon, { mode = { pin: MODERN }, capture, capabilities = {}, setup } = {}) {
  const bridge = [MCPMUX, '--socket', daemon.socket, 'connect'];
  const file = capture ? daemon.path(capture) : null;
  const transport = file
    ? new StdioClientTransport({ command: NODE, args: [TAP_BRIDGE, file, '--', ...bridge], stderr: 'pipe' })
    : new StdioClientTransport({ command: bridge[0], args: bridge.slice(1), stderr: 'pipe' });
  const client = new Client({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode }, capabilities });
  setup?.(client);
  await within(15000, client.connect(transport), 'v2 client connect');
  client.captureFile = file;
  return client;
}

/** A v2 client's listen stream hears of a legacy server's tool list change (`changed` collects
 *  the client's tools/list_changed notifications). */
async function listChangeOnStream(client, changed) {
  const sub = await client.listen({ toolsListChanged: true });
  assert.equal(sub.honoredFilter?.toolsListChanged, true);
  await client.callTool({ name: 'fake__list_changed', arguments: {} });
  assert.ok(await waitFor(() => changed.length > 0), 'no tools/list_changed on the listen stream');
  await sub.close();
}

describe('2026-07-28 client through mcpmux connect, legacy servers behind', () => {
  let daemon;
  let client;
  const elicited = [];
  const changed = [];

  before(async () => {
    daemon = await startDaemon((dir) => ({
      daemon: { timeout_ms: 20000 },
      servers: {
        fake: fakeServer({ log: `${dir}/fake-received.jsonl`, on_change: 'accept' }),
        everything: { command: NODE, args: [EVERYTHING_JS, 'stdio'], on_change: 'accept' },
      },
    }));
    client = await connectV2(daemon, {
      capture: 'modern.jsonl',
      capabilities: { elicitation: { form: {} } },
      setup(c) {
        c.setRequestHandler('elicitation/create', async (req) => {
          elicited.push(req.params);
          return { action: 'accept', content: { answer: 'from the v2 client' } };
        });
        c.setNotificationHandler('notifications/tools/list_changed', () => changed.push(Date.now()));
      },
    });
  });

  after(async () => {
    await client?.close().catch(() => {});
    await daemon?.stop();
  });

  it('the client speaks 2026-07-28 with mcpmux (no fallback to initialize)', () => {
    assert.equal(client.getProtocolEra(), 'modern');
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    const sent = readMessages(client.captureFile + '.sent');
    assert.ok(!sent.some((m) => m.method === 'initialize'), 'the client sent initialize');
  });

  it('tools/list: both servers tools, in a deterministic order', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    assert.ok(names.includes('fake__echo') && names.includes('everything__echo'), names.join(' '));
    assert.deepEqual(names, [...names].sort(), 'sorted by name');
  });

  it('tools/call on a legacy server', async () => {
    const r = await client.callTool({ name: 'everything__echo', arguments: { message: 'modern hello' } });
    assert.match(resultText(r), /modern hello/);
  });

  it('progress of a legacy server reaches the modern client', async () => {
    const seen = [];
    const r = await client.callTool(
      { name: 'fake__progress', arguments: { steps: 3, ms: 30 } },
      { onprogress: (p) => seen.push(p.progress) },
    );
    assert.match(resultText(r), /progress done 3/);
    // (client 2.4.0 may drop a progress that arrives in the same read as the result)
    assert.ok(seen.length >= 2, `progress seen: ${JSON.stringify(seen)}`);
  });

  it('a legacy server asks for elicitation; the v2 client answers through MRTR', async () => {
    const r = await client.callTool({ name: 'fake__elicit', arguments: { message: 'who are you?' } });
    assert.equal(elicited.length, 1);
    assert.equal(elicited[0].message, 'who are you?');
    assert.match(resultText(r), /from the v2 client/);
    const got = readMessages(client.captureFile);
    assert.ok(got.some((m) => m.result?.resultType === 'input_required'), 'no input_required was sent');
  });

  it('a list change arrives on the listen stream', () => listChangeOnStream(client, changed));

  it('schema: everything mcpmux sent the v2 client is valid MCP 2026-07-28', async () => {
    await sleep(100);
    const asked = new Map();
    for (const m of readMessages(client.captureFile + '.sent'))
      if (typeof m.method === 'string' && m.id !== undefined) asked.set(JSON.stringify(m.id), m.method);
    const report = validateMessages(client.captureFile, {
      version: MODERN,
      who: 'mcpmux → v2 client',
      asked,
      requests: {},
      notifications: {
        'notifications/progress': 'ProgressNotification',
        'notifications/subscriptions/acknowledged': 'SubscriptionsAcknowledgedNotification',
        'notifications/tools/list_changed': 'ToolListChangedNotification',
      },
      results: {
        'server/discover': 'DiscoverResult',
        'tools/list': 'ListToolsResult',
        'tools/call': 'CallToolResult',
        'subscriptions/listen': 'SubscriptionsListenResult',
        input_required: 'InputRequiredResult',
      },
    });
    assertReport(report, ['ListToolsResult', 'CallToolResult', 'InputRequiredResult', 'ProgressNotification']);
  });

  it('a v2 client in auto mode also lands on 2026-07-28', async () => {
    const auto = await connectV2(daemon, { mode: 'auto' });
    assert.equal(auto.getProtocolEra(), 'modern');
    const r = await auto.callTool({ name: 'fake__echo', arguments: { text: 'auto' } });
    assert.equal(resultText(r), 'auto');
    await auto.close();
  });
});

/** An SDK 1.x client that accepts elicitations with ok=true (recording them in `elicited`) and
 *  counts tools/list_changed in `changed`, and a v2 client pinned to 2026-07-28 that answers
 *  ok=false: the two sides of a modern server behind mcpmux. */
async function legacyAndModernClients(daemon, elicited, changed, capture) {
  const legacy = await daemon.connect({
    capture,
    capabilities: { elicitation: {} },
    setup(c) {
      c.setRequestHandler(ElicitRequestSchema, (req) => {
        elicited.push(req.params);
        return { action: 'accept', content: { ok: true } };
      });
      c.setNotificationHandler(ToolListChangedNotificationSchema, () => changed.push(Date.now()));
    },
  });
  const modern = await connectV2(daemon, {
    capabilities: { elicitation: { form: {} } },
    setup(c) {
      c.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { ok: false } }));
    },
  });
  return { legacy, modern };
}

describe('a 2026-07-28 server (v2 SDK, modern only) behind mcpmux', () => {
  let daemon;
  let legacy;
  let modern;
  const legacyElicited = [];
  const legacyChanged = [];

  before(async () => {
    daemon = await startDaemon((dir) => ({
      daemon: { timeout_ms: 20000 },
      servers: {
        // Through tap_bridge: `.sent` holds what mcpmux sent the server.
        // (Their list changes are accepted: under the default on_change, added tools are held.)
        modern: { command: NODE, args: [TAP_BRIDGE, path.join(dir, 'modern-upstream.jsonl'), '--', NODE, MODERN_JS], on_change: 'accept' },
        pinned: { command: NODE, args: [MODERN_JS], era: 'modern', on_change: 'accept' },
        fake: fakeServer({ on_change: 'accept' }),
      },
    }));
    ({ legacy, modern } = await legacyAndModernClients(daemon, legacyElicited, legacyChanged, 'legacy.jsonl'));
  });

  after(async () => {
    await modern?.close().catch(() => {});
    await daemon?.stop();
  });

  it('auto detects the era (server/discover) and status shows it', async () => {
    const st = await daemon.status();
    const by = Object.fromEntries(st.servers.map((s) => [s.name, s]));
    assert.equal(by.modern.era, 'modern');
    assert.equal(by.modern.era_setting, 'auto');
    assert.equal(by.pinned.era, 'modern');
    assert.equal(by.fake.era, 'legacy');
  });

  it('a legacy client lists and calls the modern server', async () => {
    const { tools } = await legacy.listTools();
    const names = tools.map((t) => t.name);
    assert.ok(names.includes('modern__echo') && names.includes('fake__echo'), names.join(' '));
    const r = await legacy.callTool({ name: 'modern__echo', arguments: { text: 'from 2025' } });
    assert.equal(resultText(r), 'from 2025');
  });

  it('progress of the modern server reaches the legacy client', async () => {
    const seen = [];
    const r = await legacy.callTool({ name: 'modern__slow', arguments: { steps: 3 } }, undefined, {
      onprogress: (p) => seen.push(p.progress),
    });
    assert.equal(resultText(r), 'done 3');
    assert.deepEqual(seen, [1, 2, 3]);
  });

  it('the modern server asks for input: the legacy client gets a real elicitation, never MRTR', async () => {
    const r = await legacy.callTool({ name: 'modern__confirm', arguments: { what: 'deploy' } });
    assert.equal(legacyElicited.length, 1);
    assert.equal(legacyElicited[0].message, 'Really deploy?');
    assert.equal(resultText(r), 'confirmed=true state=confirm:deploy');
    const got = readMessages(legacy.captureFile);
    assert.ok(!got.some((m) => m.result?.resultType === 'input_required'), 'the legacy client saw input_required');
  });

  it('a modern client gets the server s own input_required and retries through mcpmux', async () => {
    const r = await modern.callTool({ name: 'modern__confirm', arguments: { what: 'ship' } });
    assert.equal(resultText(r), 'confirmed=false state=confirm:ship');
  });

  it('a list change of the modern server reaches legacy clients as list_changed', async () => {
    legacyChanged.length = 0;
    await legacy.callTool({ name: 'modern__add_tool', arguments: {} });
    let names = [];
    const added = await waitFor(async () => {
      names = (await legacy.listTools()).tools.map((t) => t.name);
      return names.some((n) => n.startsWith('modern__added_'));
    }, 5000, 50);
    assert.ok(added, names.join(' '));
    assert.ok(legacyChanged.length > 0, 'no tools/list_changed');
  });

  it('a legacy client subscribes to a resource of the modern server (its listen stream)', async () => {
    const updated = [];
    legacy.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updated.push(n.params.uri));
    await legacy.subscribeResource({ uri: 'fixture://counter' });
    await legacy.callTool({ name: 'modern__touch', arguments: {} });
    await waitFor(() => updated.length > 0);
    assert.deepEqual(updated, ['fixture://counter']);
    await legacy.unsubscribeResource({ uri: 'fixture://counter' });
  });

  it('schema: everything mcpmux sent the modern server is valid MCP 2026-07-28', async () => {
    const report = validateMessages(daemon.path('modern-upstream.jsonl.sent'), {
      version: MODERN,
      who: 'mcpmux → modern server',
      asked: new Map(),
      requests: {
        'server/discover': 'DiscoverRequest',
        'tools/list': 'ListToolsRequest',
        'tools/call': 'CallToolRequest',
        'resources/list': 'ListResourcesRequest',
        'resources/templates/list': 'ListResourceTemplatesRequest',
        'subscriptions/listen': 'SubscriptionsListenRequest',
      },
      notifications: { 'notifications/cancelled': 'CancelledNotification' },
      results: {},
    });
    assertReport(report, ['DiscoverRequest', 'ListToolsRequest', 'CallToolRequest', 'SubscriptionsListenRequest']);
    const sent = readMessages(daemon.path('modern-upstream.jsonl.sent'));
    assert.ok(!sent.some((m) => m.method === 'initialize' || m.method === 'ping'), 'a legacy request went to the modern server');
    // The subscription went on a listen stream (the earlier stream cancelled), not resources/subscribe.
    assert.ok(sent.some((m) => m.method === 'subscriptions/listen' && m.params.notifications.resourceSubscriptions?.includes('fixture://counter')));
    assert.ok(!sent.some((m) => m.method === 'resources/subscribe'));
  });
});


describe('a 2026-07-28 server over Streamable HTTP (v2 SDK, modern only) behind mcpmux', () => {
  let daemon;
  let server;
  let webUrl;
  let legacy;
  let modern;
  const elicited = [];
  const changed = [];

  before(async () => {
    const port = await freePort();
    server = spawn(NODE, [MODERN_JS, '--http', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
    const listening = new Promise((resolve) => server.stderr.on('data', (d) => String(d).includes('http on') && resolve()));
    await within(10000, listening, 'modern HTTP server start');
    webUrl = `http://127.0.0.1:${port}/mcp`;
    daemon = await startDaemon(() => ({
      daemon: { timeout_ms: 20000 },
      servers: { web: { type: 'http', url: webUrl, on_change: 'accept' } },
    }));
    ({ legacy, modern } = await legacyAndModernClients(daemon, elicited, changed));
  });

  after(async () => {
    await modern?.close().catch(() => {});
    await daemon?.stop();
    server?.kill('SIGKILL');
  });

  it('auto detects the era over HTTP and status shows it', async () => {
    const web = (await daemon.status()).servers.find((s) => s.name === 'web');
    assert.equal(web.state, 'ready');
    assert.equal(web.era, 'modern');
  });

  it('a legacy client calls it, with progress', async () => {
    const seen = [];
    const r = await legacy.callTool({ name: 'web__slow', arguments: { steps: 3 } }, undefined, {
      onprogress: (p) => seen.push(p.progress),
    });
    assert.equal(resultText(r), 'done 3');
    assert.deepEqual(seen, [1, 2, 3]);
  });

  it('its input_required becomes a real elicitation for the legacy client; a modern client retries itself', async () => {
    const r = await legacy.callTool({ name: 'web__confirm', arguments: { what: 'deploy' } });
    assert.equal(elicited.length, 1);
    assert.equal(resultText(r), 'confirmed=true state=confirm:deploy');
    const m = await modern.callTool({ name: 'web__confirm', arguments: { what: 'ship' } });
    assert.equal(resultText(m), 'confirmed=false state=confirm:ship');
  });

  it('its list change (on mcpmux s listen stream over HTTP) reaches the legacy client', async () => {
    changed.length = 0;
    await legacy.callTool({ name: 'web__add_tool', arguments: {} });
    let names = [];
    const added = await waitFor(async () => {
      names = (await legacy.listTools()).tools.map((t) => t.name);
      return names.some((n) => n.startsWith('web__added_'));
    }, 5000, 50);
    assert.ok(added, names.join(' '));
    assert.ok(changed.length > 0, 'no tools/list_changed');
  });

  it('a resource subscription of the legacy client rides the listen stream', async () => {
    const updated = [];
    legacy.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updated.push(n.params.uri));
    await legacy.subscribeResource({ uri: 'fixture://counter' });
    await sleep(300); // the listen stream reopens with the resource in its filter
    await legacy.callTool({ name: 'web__touch', arguments: {} });
    assert.ok(await waitFor(() => updated.length > 0), 'no resources/updated');
    assert.deepEqual(updated, ['fixture://counter']);
  });

  it('x-mcp-header arguments go as Mcp-Param-* headers, also for tools from the cache', async () => {
    // The v2 server refuses a call whose header is missing (-32020).
    const r = await legacy.callTool({ name: 'web__where', arguments: { region: 'eu west' } });
    assert.equal(resultText(r), 'region eu west');
    // A second daemon on the same tool cache: its tools are the cached ones, not listed afresh.
    const again = await startDaemon(() => ({ daemon: { timeout_ms: 20000 }, servers: { web: { type: 'http', url: webUrl } } }),
      { stateDir: path.join(daemon.dir, 'state') });
    try {
      assert.match(again.log(), /serving \d+ cached tools/);
      const c = await again.connect();
      const r2 = await c.callTool({ name: 'web__where', arguments: { region: 'ap south' } });
      assert.equal(resultText(r2), 'region ap south');
    } finally {
      await again.stop();
    }
  });

  it('a cancelled call closes its HTTP stream and the server goes on', async () => {
    const ac = new AbortController();
    const call = legacy.callTool({ name: 'web__slow', arguments: { steps: 50 } }, undefined, { signal: ac.signal });
    await sleep(100);
    ac.abort();
    await assert.rejects(call);
    const r = await legacy.callTool({ name: 'web__echo', arguments: { text: 'after' } });
    assert.equal(resultText(r), 'after');
    const web = (await daemon.status()).servers.find((s) => s.name === 'web');
    assert.equal(web.restarts, 0);
  });
});

describe('2026-07-28 on /mcp: the v2 client over HTTP, beside a legacy HTTP client', () => {
  let daemon;
  let url;
  let client;
  const elicited = [];
  const changed = [];

  // A raw modern POST: the headers a 2026-07-28 client sends unless `headers` overrides them.
  async function post(body, headers = {}) {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN,
        'mcp-method': body.method,
        ...(body.params?.name ? { 'mcp-name': body.params.name } : {}),
        ...headers,
      },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, text, json: text.startsWith('{') ? JSON.parse(text) : null, headers: res.headers };
  }
  const meta = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} };

  before(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}/mcp`;
    daemon = await startDaemon({
      daemon: { timeout_ms: 20000, http: `127.0.0.1:${port}`, http_auth: 'none' },
      servers: { fake: fakeServer({ on_change: 'accept' }), modern: { command: NODE, args: [MODERN_JS], on_change: 'accept' } },
    });
    client = new Client({ name: 'v2-http', version: '1.0.0' }, {
      versionNegotiation: { mode: { pin: MODERN } },
      capabilities: { elicitation: { form: {} } },
    });
    client.setRequestHandler('elicitation/create', async (req) => {
      elicited.push(req.params);
      return { action: 'accept', content: { answer: 'http answer', ok: true } };
    });
    client.setNotificationHandler('notifications/tools/list_changed', () => changed.push(Date.now()));
    await within(15000, client.connect(new StreamableHTTPClientTransport(new URL(url))), 'v2 http connect');
  });

  after(async () => {
    await client?.close().catch(() => {});
    await daemon?.stop();
  });

  it('the v2 client speaks 2026-07-28 over HTTP: tools, a call, progress', async () => {
    assert.equal(client.getProtocolEra(), 'modern');
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('fake__echo') && names.includes('modern__echo'), names.join(' '));
    assert.equal(resultText(await client.callTool({ name: 'fake__echo', arguments: { text: 'over http' } })), 'over http');
    const seen = [];
    const r = await client.callTool({ name: 'modern__slow', arguments: { steps: 3 } }, { onprogress: (p) => seen.push(p.progress) });
    assert.equal(resultText(r), 'done 3');
    assert.deepEqual(seen, [1, 2, 3]);
  });

  it('elicitation both ways over HTTP: a legacy server (MRTR by mcpmux) and a modern one', async () => {
    const a = await client.callTool({ name: 'fake__elicit', arguments: { message: 'name?' } });
    assert.match(resultText(a), /http answer/);
    const b = await client.callTool({ name: 'modern__confirm', arguments: { what: 'merge' } });
    assert.equal(resultText(b), 'confirmed=true state=confirm:merge');
    assert.equal(elicited.length, 2);
  });

  it('a list change arrives on a listen stream (SSE)', () => listChangeOnStream(client, changed));

  it('the HTTP rules: headers checked, no session, no GET, unknown method 404', async () => {
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta } };
    const ok = await post(list);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.headers.get('mcp-session-id'), null);
    assert.equal(ok.json.result.resultType, 'complete');
    // The modern server behind says ttlMs 0, private (its server/discover): the combined lists
    // take the smallest TTL and the stricter scope.
    assert.equal(ok.json.result.ttlMs, 0);
    assert.equal(ok.json.result.cacheScope, 'private');
    let r = await post(list, { 'mcp-protocol-version': '' });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.code, -32020);
    r = await post(list, { 'mcp-method': 'tools/call' });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.code, -32020);
    const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'fake__echo', arguments: { text: 'x' }, _meta: meta } };
    r = await post(call, { 'mcp-name': 'other' });
    assert.equal(r.status, 400);
    assert.match(r.json.error.message, /Mcp-Name/);
    r = await post(call, { 'mcp-name': `=?base64?${Buffer.from('fake__echo').toString('base64')}?=` });
    assert.equal(r.status, 200, r.text);
    r = await post({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: { ...meta, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } }, { 'mcp-protocol-version': '2099-01-01' });
    assert.equal(r.status, 400);
    r = await post({ jsonrpc: '2.0', id: 4, method: 'nope/nothing', params: { _meta: meta } });
    assert.equal(r.status, 404);
    assert.equal(r.json.error.code, -32601);
    r = await post({ jsonrpc: '2.0', id: 5, method: 'tools/list', params: {} });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.code, -32602);
    const get = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-protocol-version': MODERN } });
    assert.equal(get.status, 405);
    await get.text();
  });

  it('a legacy HTTP client (SDK 1.x, sessions) keeps working beside it', async () => {
    const legacy = new LegacyClient({ name: 'legacy-http', version: '1' });
    await legacy.connect(new LegacyHTTP(new URL(url)));
    const r = await legacy.callTool({ name: 'modern__echo', arguments: { text: 'legacy over http' } });
    assert.equal(resultText(r), 'legacy over http');
    await legacy.close();
  });
});

// The era matrix: both client eras (SDK 1.x; the v2 client pinned to 2026-07-28) over both
// doors (`mcpmux connect`, /mcp), against both server eras (server-everything, SDK 1.x; the v2
// server with legacy: 'reject'; the fake for a legacy list change): tools/list, a call,
// progress, an elicitation round trip and a list change, for every pair.
describe('the era matrix: every client era over every door, against every server era', () => {
  let daemon;
  let url;
  const clients = [];

  // What a person answers to either server's form.
  const answer = (params) => {
    const props = params.requestedSchema?.properties ?? {};
    return { action: 'accept', content: 'ok' in props ? { ok: true } : { name: 'Ada' } };
  };

  // One client behind a uniform face: calls, progress, its elicitations and list changes.
  async function matrixClient(era, door) {
    const face = { label: `${era} client over ${door}`, elicited: [], changed: [] };
    if (era === '2025-11-25') {
      const setup = (c) => {
        c.setRequestHandler(ElicitRequestSchema, (req) => (face.elicited.push(req.params), answer(req.params)));
        c.setNotificationHandler(ToolListChangedNotificationSchema, () => face.changed.push(Date.now()));
      };
      let c;
      if (door === 'connect') {
        // Through tap_bridge too: the 1.x client runs notification handlers a microtask later
        // than it settles a response, so a progress notification read together with its
        // result may never reach onprogress; what mcpmux sent is counted where it was sent.
        c = await daemon.connect({ capabilities: { elicitation: {} }, setup, capture: 'matrix-v1.jsonl' });
        face.progressSent = () => readMessages(c.captureFile).filter((m) => m.method === 'notifications/progress').length;
      } else {
        c = new LegacyClient({ name: 'matrix-v1-http', version: '1' }, { capabilities: { elicitation: {} } });
        setup(c);
        await c.connect(new LegacyHTTP(new URL(url)));
      }
      face.call = (name, args, onprogress) => c.callTool({ name, arguments: args }, undefined, onprogress ? { onprogress } : {});
      face.listen = async () => ({ close: async () => {} }); // list_changed comes unasked
      face.client = c;
    } else {
      const setup = (c) => {
        c.setRequestHandler('elicitation/create', async (req) => (face.elicited.push(req.params), answer(req.params)));
        c.setNotificationHandler('notifications/tools/list_changed', () => face.changed.push(Date.now()));
      };
      let c;
      if (door === 'connect') {
        // Through tap_bridge: the v2 client over stdio may drop a progress notification that
        // comes right before its result, so what mcpmux sent is counted where it was sent.
        c = await connectV2(daemon, { capabilities: { elicitation: { form: {} } }, setup, capture: 'matrix-v2.jsonl' });
        face.progressSent = () => readMessages(c.captureFile).filter((m) => m.method === 'notifications/progress').length;
      } else {
        c = new Client({ name: 'matrix-v2-http', version: '1.0.0' }, {
          versionNegotiation: { mode: { pin: MODERN } },
          capabilities: { elicitation: { form: {} } },
        });
        setup(c);
        await within(15000, c.connect(new StreamableHTTPClientTransport(new URL(url))), 'v2 http connect');
      }
      face.call = (name, args, onprogress) => c.callTool({ name, arguments: args }, onprogress ? { onprogress } : {});
      face.listen = () => c.listen({ toolsListChanged: true });
      face.client = c;
    }
    clients.push(face);
    return face;
  }

  // The same checks for each server era, through one client.
  const servers = {
    '2025-11-25 (server-everything)': {
      tool: 'everything__echo',
      echo: (f) => f.call('everything__echo', { message: 'matrix' }),
      echoed: /matrix/,
      progress: (f, on) => f.call('everything__trigger-long-running-operation', { duration: 0.3, steps: 3 }, on),
      elicit: (f) => f.call('everything__trigger-elicitation-request', {}),
      elicited: /Ada/,
      change: (f) => f.call('fake__list_changed', {}),
    },
    '2026-07-28 (v2 server)': {
      tool: 'modern__echo',
      echo: (f) => f.call('modern__echo', { text: 'matrix' }),
      echoed: /^matrix$/,
      progress: (f, on) => f.call('modern__slow', { steps: 3 }, on),
      elicit: (f) => f.call('modern__confirm', { what: 'matrix' }),
      elicited: /confirmed=true/,
      change: (f) => f.call('modern__add_tool', {}),
    },
  };

  before(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}/mcp`;
    daemon = await startDaemon({
      daemon: { timeout_ms: 20000, http: `127.0.0.1:${port}`, http_auth: 'none' },
      servers: {
        everything: { command: NODE, args: [EVERYTHING_JS, 'stdio'], on_change: 'accept' },
        fake: fakeServer({ on_change: 'accept' }),
        modern: { command: NODE, args: [MODERN_JS], on_change: 'accept' },
      },
    });
  });

  after(async () => {
    for (const f of clients) await f.client.close().catch(() => {});
    await daemon?.stop();
  });

  for (const era of ['2025-11-25', '2026-07-28'])
    for (const door of ['connect', '/mcp'])
      it(`${era} client over ${door}`, async () => {
        const f = await matrixClient(era, door);
        const names = (await f.client.listTools()).tools.map((t) => t.name);
        for (const [serverEra, s] of Object.entries(servers)) {
          const what = `${f.label} × ${serverEra}`;
          assert.ok(names.includes(s.tool), `${what}: tools/list lacks ${s.tool}`);
          assert.match(resultText(await s.echo(f)), s.echoed, `${what}: call`);
          const seen = [];
          const sentBefore = f.progressSent?.();
          await s.progress(f, (p) => seen.push(p.progress));
          if (f.progressSent) {
            assert.ok(await waitFor(() => f.progressSent() - sentBefore === 3), `${what}: progress sent ${f.progressSent() - sentBefore}`);
            assert.ok(seen.length >= 2, `${what}: progress ${JSON.stringify(seen)}`);
          } else {
            assert.equal(seen.length, 3, `${what}: progress ${JSON.stringify(seen)}`);
          }
          const asked = f.elicited.length;
          assert.match(resultText(await s.elicit(f)), s.elicited, `${what}: elicitation`);
          assert.equal(f.elicited.length, asked + 1, `${what}: the client was asked once`);
          const sub = await f.listen();
          const before = f.changed.length;
          await s.change(f);
          assert.ok(await waitFor(() => f.changed.length > before, 5000), `${what}: no tools/list_changed`);
          await sub.close();
        }
      });
});
