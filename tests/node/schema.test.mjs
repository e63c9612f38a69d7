// schema.test.mjs — self-test of schema.mjs, so that a green schema check means something: known
// good MCP messages pass, and broken ones fail with a message naming the definition and ajv's
// error. Needs no daemon.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { check, validateDownstream, validateUpstream, SCHEMA_FILE } from './schema.mjs';

describe('schema.mjs validator', () => {
  let dir;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'mcpmux-schema-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const write = (name, msgs) => {
    const f = path.join(dir, name);
    writeFileSync(f, msgs.map((m) => (typeof m === 'string' ? m : JSON.stringify(m))).join('\n') + '\n');
    return f;
  };

  it(`loads ${path.basename(SCHEMA_FILE)} and checks single definitions`, () => {
    assert.equal(check('CallToolResult', { content: [{ type: 'text', text: 'x' }] }), null);
    assert.match(check('CallToolResult', { content: [{ type: 'image', mimeType: 'image/png' }] }), /data/);
    assert.match(check('InitializeResult', { protocolVersion: '2025-11-25', capabilities: {} }), /serverInfo/);
    assert.match(check('ImageContent', { type: 'image', data: 'not base64!', mimeType: 'image/png' }), /format/);
    assert.match(check('ResourceLink', { type: 'resource_link', uri: 'no scheme', name: 'x' }), /format/);
  });

  it('a good downstream capture passes, with the method-specific definitions', () => {
    const cap = write('good.jsonl', [
      { jsonrpc: '2.0', id: 0, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'm', version: '1' } } },
      { jsonrpc: '2.0', id: 1, result: { tools: [{ name: 't', inputSchema: { type: 'object' } }] } },
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
      { jsonrpc: '2.0', id: 2, result: { content: [] } },
      { jsonrpc: '2.0', id: 3, error: { code: -32601, message: 'nope' } },
    ]);
    write('good.jsonl.sent', [
      { jsonrpc: '2.0', id: 0, method: 'initialize', params: {} },
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 't' } },
      { jsonrpc: '2.0', id: 3, method: 'foo' },
    ]);
    const r = validateDownstream(cap);
    assert.deepEqual(r.failures, []);
    for (const d of ['InitializeResult', 'ListToolsResult', 'CallToolResult', 'ToolListChangedNotification', 'JSONRPCErrorResponse'])
      assert.equal(r.count(d), 1, `${d} in ${r.summary()}`);
  });

  it('broken downstream messages are reported with the definition and the reason', () => {
    const cap = write('bad.jsonl', [
      { jsonrpc: '2.0', id: 0, result: { protocolVersion: '2025-11-25', capabilities: {} } }, // no serverInfo
      { jsonrpc: '2.0', id: 1, result: { tools: [{ name: 't' }] } }, // no inputSchema
      { jsonrpc: '2.0', id: 2, result: { content: 'text' } }, // content not an array
      { jsonrpc: '2.0', id: 99, result: {} }, // answers nothing
      { jsonrpc: '1.0', method: 'notifications/tools/list_changed' },
      'not json at all',
    ]);
    write('bad.jsonl.sent', [
      { jsonrpc: '2.0', id: 0, method: 'initialize', params: {} },
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 't' } },
    ]);
    const text = validateDownstream(cap).failures.join('\n');
    assert.match(text, /does not match InitializeResult:[\s\S]*serverInfo/);
    assert.match(text, /does not match ListToolsResult:[\s\S]*inputSchema/);
    assert.match(text, /does not match CallToolResult:[\s\S]*content/);
    assert.match(text, /id 99 that answers no request/);
    assert.match(text, /does not match ToolListChangedNotification/);
    assert.match(text, /not JSON/);
  });

  it('upstream: requests, notifications and answers to server requests are checked', () => {
    const log = write('up.jsonl', [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'm', version: '1' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { arguments: {} } }, // no name
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2 } },
      { jsonrpc: '2.0', id: 'srv-1', result: {} },
      { jsonrpc: '2.0', id: 'srv-2', result: { roots: [{ uri: 'file:///x' }, { name: 'no uri' }] } },
    ]);
    const r = validateUpstream(log, { 'srv-1': 'ping', 'srv-2': 'roots/list' });
    const text = r.failures.join('\n');
    assert.match(text, /does not match CallToolRequest:[\s\S]*name/);
    assert.match(text, /does not match ListRootsResult:[\s\S]*uri/);
    assert.doesNotMatch(text, /InitializeRequest|InitializedNotification|EmptyResult/);
    assert.equal(r.count('EmptyResult'), 1);
  });
});
