// reference_servers.test.mjs — the official reference servers server-everything and
// server-memory (run with node from node_modules, stdio mode) behind one mcpmuxd, used by the
// official TypeScript SDK client through tap_bridge.mjs; everything mcpmux sent the client is
// then validated against the MCP 2025-11-25 schema.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startDaemon, NODE, EVERYTHING_JS, MEMORY_JS, resultText } from './harness.mjs';
import { validateDownstream, assertReport, readMessages } from './schema.mjs';

const TINY_IMAGE = readFileSync(new URL('./node_modules/@modelcontextprotocol/server-everything/dist/tools/get-tiny-image.js', import.meta.url), 'utf8').match(
  /MCP_TINY_IMAGE\s*=\s*"([^"]+)"/,
)[1];

describe('server-everything and server-memory behind one mcpmuxd', () => {
  let daemon;
  let client;
  let tools;

  before(async () => {
    daemon = await startDaemon((dir) => ({
      servers: {
        everything: { command: NODE, args: [EVERYTHING_JS, 'stdio'] },
        memory: { command: NODE, args: [MEMORY_JS], env: { MEMORY_FILE_PATH: `${dir}/memory.jsonl` } },
      },
    }));
    client = await daemon.connect({ capture: 'client.jsonl' });
  });

  after(async () => {
    await daemon?.stop();
  });

  it('initialize: mcpmux is the server, with tools capability', () => {
    assert.ok(client.getServerCapabilities()?.tools);
    assert.equal(typeof client.getServerVersion()?.name, 'string');
  });

  it('tools/list: both servers’ tools, prefixed everything__ and memory__', async () => {
    ({ tools } = await client.listTools());
    const names = tools.map((t) => t.name);
    for (const n of ['everything__echo', 'everything__get-sum', 'everything__get-tiny-image', 'everything__trigger-long-running-operation',
      'memory__create_entities', 'memory__read_graph', 'memory__search_nodes'])
      assert.ok(names.includes(n), `${n} missing from ${names.join(', ')}`);
    assert.ok(names.every((n) => /^(everything|memory)__/.test(n)), `unprefixed tool in ${names.join(', ')}`);
    assert.deepEqual(names, [...names].sort());
    // Tool metadata passes through (title, annotations, schema).
    const echo = tools.find((t) => t.name === 'everything__echo');
    assert.equal(echo.title, 'Echo Tool');
    assert.equal(echo.annotations?.readOnlyHint, true);
    assert.equal(echo.inputSchema.properties.message.type, 'string');
  });

  it('everything__echo echoes the message', async () => {
    const r = await client.callTool({ name: 'everything__echo', arguments: { message: 'hello through mcpmux ✓' } });
    assert.deepEqual(r.content, [{ type: 'text', text: 'Echo: hello through mcpmux ✓' }]);
  });

  it('everything__get-sum adds', async () => {
    const r = await client.callTool({ name: 'everything__get-sum', arguments: { a: 19, b: 23.5 } });
    assert.equal(resultText(r), 'The sum of 19 and 23.5 is 42.5.');
  });

  it('everything__get-tiny-image: the image content passes through unchanged', async () => {
    const r = await client.callTool({ name: 'everything__get-tiny-image', arguments: {} });
    assert.deepEqual(r.content, [
      { type: 'text', text: "Here's the image you requested:" },
      { type: 'image', data: TINY_IMAGE, mimeType: 'image/png' },
      { type: 'text', text: 'The image above is the MCP logo.' },
    ]);
  });

  it('everything__get-structured-content: structuredContent passes through', async () => {
    const r = await client.callTool({ name: 'everything__get-structured-content', arguments: { location: 'New York' } });
    assert.equal(typeof r.structuredContent, 'object');
    assert.ok(r.structuredContent !== null);
    assert.deepEqual(JSON.parse(resultText(r)), r.structuredContent);
  });

  it('everything: invalid arguments give an error, not a hang', async () => {
    let r;
    try {
      r = await client.callTool({ name: 'everything__get-sum', arguments: { a: 'x' } });
    } catch (e) {
      return; // a JSON-RPC error is fine too
    }
    assert.equal(r.isError, true, `expected isError for bad arguments: ${JSON.stringify(r)}`);
  });

  it('memory: create_entities, then read_graph returns the entity', async () => {
    const entity = { name: 'mcpmux', entityType: 'project', observations: ['multiplexes MCP servers', 'written in C++20'] };
    const c = await client.callTool({ name: 'memory__create_entities', arguments: { entities: [entity] } });
    assert.ok(!c.isError, resultText(c));
    assert.deepEqual(c.structuredContent, { entities: [entity] });
    const g = await client.callTool({ name: 'memory__read_graph', arguments: {} });
    assert.ok(!g.isError, resultText(g));
    assert.deepEqual(g.structuredContent.entities, [entity]);
    assert.deepEqual(JSON.parse(resultText(g)).entities, [entity]);
    // And the memory server persisted it where the config's env told it to.
    const stored = readFileSync(daemon.path('memory.jsonl'), 'utf8');
    assert.match(stored, /"name":"mcpmux"/);
  });

  it('memory: search_nodes finds the entity', async () => {
    const r = await client.callTool({ name: 'memory__search_nodes', arguments: { query: 'C++20' } });
    assert.deepEqual(r.structuredContent.entities.map((e) => e.name), ['mcpmux']);
  });

  it('schema: everything mcpmux sent the SDK client is valid MCP 2025-11-25', () => {
    const report = validateDownstream(client.captureFile);
    assertReport(report, ['InitializeResult', 'ListToolsResult', 'CallToolResult']);
    // Every request the client made was answered exactly once.
    const answered = readMessages(client.captureFile).filter((m) => m.id !== undefined && !m.method).map((m) => m.id);
    const asked = readMessages(`${client.captureFile}.sent`).filter((m) => m.id !== undefined && m.method).map((m) => m.id);
    assert.deepEqual([...answered].sort(), [...asked].sort());
  });
});
