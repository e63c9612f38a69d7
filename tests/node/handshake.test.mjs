// handshake.test.mjs — the MCP handshake and core tool traffic between the official TypeScript
// SDK client and mcpmuxd with one fake_mcp_server upstream, with every message schema-checked:
// what mcpmux sends the client (captured by tap_bridge.mjs) and what it sends the fake server
// (the fake's --log FILE), against the MCP 2025-11-25 schema.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ToolListChangedNotificationSchema, ListRootsRequestSchema, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { startDaemon, fakeServer, resultText, within, sleep } from './harness.mjs';
import { validateDownstream, validateUpstream, assertReport, readMessages } from './schema.mjs';

describe('handshake and tools through mcpmux (fake server, schema-checked)', () => {
  let daemon;
  let client;
  let upstreamLog;
  const listChanged = [];
  const rootsAsked = [];

  before(async () => {
    daemon = await startDaemon((dir) => ({
      daemon: { timeout_ms: 20000 },
      servers: {
        fake: fakeServer({ log: `${dir}/fake-received.jsonl`, args: ['--instructions', 'fake instructions'], cwd: dir, on_change: 'accept' }),
      },
    }));
    upstreamLog = daemon.path('fake-received.jsonl');
    client = await daemon.connect({
      capture: 'client.jsonl',
      capabilities: { roots: { listChanged: true } },
      setup(c) {
        c.setNotificationHandler(ToolListChangedNotificationSchema, (n) => listChanged.push(n));
        c.setRequestHandler(ListRootsRequestSchema, () => {
          rootsAsked.push(Date.now());
          return { roots: [{ uri: 'file:///tmp/sdk-root', name: 'sdk root' }] };
        });
      },
    });
  });

  after(async () => {
    await daemon?.stop();
  });

  it('initialize: mcpmux answers as a tools server with the negotiated protocol', () => {
    const info = client.getServerVersion();
    assert.ok(info && typeof info.name === 'string' && info.name.length > 0, `serverInfo: ${JSON.stringify(info)}`);
    assert.ok(client.getServerCapabilities()?.tools, `capabilities: ${JSON.stringify(client.getServerCapabilities())}`);
    const init = readMessages(client.captureFile).find((m) => m.result?.protocolVersion);
    assert.equal(init.result.protocolVersion, LATEST_PROTOCOL_VERSION);
  });

  it('tools/list: the fake tools are exposed as fake__<tool>, sorted by name', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of ['fake__echo', 'fake__slow', 'fake__content_types', 'fake__ping_client', 'fake__roots'])
      assert.ok(names.includes(n), `${n} missing from ${names.join(', ')}`);
    assert.deepEqual(names, [...names].sort(), 'tool list is sorted by name');
    const echo = tools.find((t) => t.name === 'fake__echo');
    assert.deepEqual(echo.inputSchema, { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
    assert.deepEqual(echo.outputSchema, { type: 'object', properties: { echo: { type: 'string' } }, required: ['echo'] });
  });

  it('tools/call: echo returns text and structuredContent', async () => {
    const r = await client.callTool({ name: 'fake__echo', arguments: { text: 'héllo "wörld"\n' } });
    assert.deepEqual(r.content, [{ type: 'text', text: 'héllo "wörld"\n' }]);
    assert.deepEqual(r.structuredContent, { echo: 'héllo "wörld"\n' });
  });

  it('tools/call: every content type passes through unchanged', async () => {
    const r = await client.callTool({ name: 'fake__content_types', arguments: {} });
    assert.deepEqual(r, {
      content: [
        { type: 'text', text: 'plain text' },
        { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
        { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' },
        { type: 'resource_link', uri: 'file:///tmp/x.txt', name: 'x.txt' },
        { type: 'resource', resource: { uri: 'file:///tmp/y.txt', mimeType: 'text/plain', text: 'y' } },
      ],
      structuredContent: { a: 1, b: [true, null] },
      _meta: { 'fake/trace': 'abc' },
    });
  });

  it('tools/call: isError results and JSON-RPC errors reach the client', async () => {
    const r = await client.callTool({ name: 'fake__error_result', arguments: {} });
    assert.equal(r.isError, true);
    assert.equal(resultText(r), 'it failed');
    await assert.rejects(client.callTool({ name: 'fake__rpc_error', arguments: {} }), (e) => {
      assert.equal(e.code, -32042, `error: ${e.message}`);
      assert.match(e.message, /fake failure/);
      return true;
    });
    await assert.rejects(client.callTool({ name: 'fake__no_such_tool', arguments: {} }), /no_such_tool/);
  });

  it('server->client ping is answered (ping_client)', async () => {
    const r = await client.callTool({ name: 'fake__ping_client', arguments: {} });
    assert.ok(!r.isError, `ping_client: ${resultText(r)}`);
    assert.deepEqual(JSON.parse(resultText(r)), {});
  });

  it('server->client roots/list goes to the client whose call is in flight (roots)', async () => {
    const before = rootsAsked.length;
    const r = await client.callTool({ name: 'fake__roots', arguments: {} });
    assert.ok(!r.isError, `roots: ${resultText(r)}`);
    assert.deepEqual(JSON.parse(resultText(r)), { roots: [{ uri: 'file:///tmp/sdk-root', name: 'sdk root' }] });
    assert.equal(rootsAsked.length, before + 1, 'the SDK client was asked exactly once');
  });

  it('notifications/tools/list_changed reaches the client and the new tool is listed', async () => {
    const r = await client.callTool({ name: 'fake__list_changed', arguments: {} });
    assert.equal(resultText(r), 'added added_0');
    const deadline = Date.now() + 5000;
    while (listChanged.length === 0 && Date.now() < deadline) await sleep(50);
    assert.ok(listChanged.length > 0, 'no notifications/tools/list_changed within 5 s');
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'fake__added_0'), 'fake__added_0 listed after list_changed');
  });

  it('cancelling a call sends notifications/cancelled upstream for the upstream request id', async () => {
    const ac = new AbortController();
    const call = client.callTool({ name: 'fake__slow', arguments: { ms: 10000 } }, undefined, { signal: ac.signal });
    // Wait until the fake server has the call, then abort.
    let upstreamCall;
    const deadline = Date.now() + 5000;
    while (!upstreamCall && Date.now() < deadline) {
      await sleep(50);
      upstreamCall = readMessages(upstreamLog).find((m) => m.method === 'tools/call' && m.params?.name === 'slow');
    }
    assert.ok(upstreamCall, 'the slow call never reached the fake server');
    ac.abort('test cancels');
    await assert.rejects(within(5000, call, 'aborted call'));
    let cancel;
    const deadline2 = Date.now() + 5000;
    while (!cancel && Date.now() < deadline2) {
      await sleep(50);
      cancel = readMessages(upstreamLog).find((m) => m.method === 'notifications/cancelled');
    }
    assert.ok(cancel, `no notifications/cancelled reached the fake server\n--- daemon log:\n${daemon.logTail()}`);
    assert.deepEqual(cancel.params.requestId, upstreamCall.id, 'cancel names the upstream request id');
    // The session still works afterwards.
    const r = await client.callTool({ name: 'fake__echo', arguments: { text: 'after cancel' } });
    assert.equal(resultText(r), 'after cancel');
  });

  it('notifications/progress for a call reaches the calling client', async () => {
    const progress = [];
    const r = await client.callTool({ name: 'fake__progress', arguments: { steps: 3, ms: 50 } }, undefined, {
      onprogress: (p) => progress.push(p),
    });
    assert.equal(resultText(r), 'progress done 3');
    // mcpmux sent all three, in order, under the token the SDK chose (the SDK itself may drop the
    // last one: it handles notifications a microtask later than the response that ends the call).
    const sent = readMessages(client.captureFile).filter((m) => m.method === 'notifications/progress');
    assert.deepEqual(sent.slice(-3).map((m) => m.params.progress), [1, 2, 3]);
    const tokens = new Set(sent.slice(-3).map((m) => m.params.progressToken));
    assert.equal(tokens.size, 1);
    assert.ok(progress.length >= 2, `the SDK saw ${progress.length} progress notifications`);
    progress.forEach((p, i) => assert.deepEqual(p, { progress: i + 1, total: 3, message: `step ${i + 1}` }));
  });

  it('ping from the client is answered', async () => {
    assert.deepEqual(await client.ping(), {});
  });

  it('schema: everything mcpmux sent the SDK client is valid MCP 2025-11-25', () => {
    const report = validateDownstream(client.captureFile);
    assertReport(report, ['InitializeResult', 'ListToolsResult', 'CallToolResult', 'ToolListChangedNotification', 'JSONRPCErrorResponse', 'EmptyResult']);
  });

  it('schema: everything mcpmux sent the fake server is valid MCP 2025-11-25', () => {
    // The fake numbers its own requests srv-1, srv-2, ... : ping_client ran first, then roots.
    const report = validateUpstream(upstreamLog, { 'srv-1': 'ping', 'srv-2': 'roots/list' });
    assertReport(report, ['InitializeRequest', 'InitializedNotification', 'ListToolsRequest', 'CallToolRequest', 'CancelledNotification', 'ListRootsResult']);
    // ping answer: EmptyResult is checked when mcpmux answered the fake's ping.
    assert.ok(report.count('EmptyResult') > 0, `ping answer not validated (${report.summary()})`);
    // Method order: the era probe (refused by this legacy server), initialize, then
    // notifications/initialized, then tools/list.
    const methods = readMessages(upstreamLog).map((m) => m.method ?? 'response');
    assert.deepEqual(methods.slice(0, 4), ['server/discover', 'initialize', 'notifications/initialized', 'tools/list']);
  });
});
