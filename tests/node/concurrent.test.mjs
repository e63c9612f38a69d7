// concurrent.test.mjs — two official SDK clients, each through its own tap_bridge.mjs +
// `mcpmux connect`, call tools of server-everything and a fake server at the same time. Both
// clients number their requests from 0, so mcpmux must rewrite ids; slow calls with different
// delays make answers come back out of order. Every answer must reach the right client with
// the right content; all traffic is then schema-checked (both clients and the fake upstream).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startDaemon, NODE, EVERYTHING_JS, fakeServer, resultText } from './harness.mjs';
import { validateDownstream, validateUpstream, assertReport, readMessages } from './schema.mjs';

describe('two SDK clients calling tools concurrently', () => {
  let daemon;
  let a;
  let b;

  before(async () => {
    daemon = await startDaemon((dir) => ({
      servers: {
        everything: { command: NODE, args: [EVERYTHING_JS, 'stdio'] },
        fake: fakeServer({ log: `${dir}/fake-received.jsonl` }),
      },
    }));
    [a, b] = await Promise.all([
      daemon.connect({ capture: 'client-a.jsonl', name: 'client-a' }),
      daemon.connect({ capture: 'client-b.jsonl', name: 'client-b' }),
    ]);
    await Promise.all([a.listTools(), b.listTools()]); // caches output schemas for validation
  });

  after(async () => {
    await daemon?.stop();
  });

  // A batch of calls for one client; each returns [promise, check].
  function batch(client, tag) {
    const calls = [];
    for (let i = 0; i < 8; i++) {
      calls.push([
        client.callTool({ name: 'everything__get-sum', arguments: { a: i, b: tag === 'A' ? 1000 : 2000 } }),
        (r) => assert.equal(resultText(r), `The sum of ${i} and ${tag === 'A' ? 1000 : 2000} is ${i + (tag === 'A' ? 1000 : 2000)}.`),
      ]);
      calls.push([
        client.callTool({ name: 'everything__echo', arguments: { message: `${tag}-${i}` } }),
        (r) => assert.equal(resultText(r), `Echo: ${tag}-${i}`),
      ]);
      // Later calls sleep less, so the fake answers them in reverse order.
      const ms = (8 - i) * 40 + (tag === 'A' ? 0 : 20);
      calls.push([client.callTool({ name: 'fake__slow', arguments: { ms } }), (r) => assert.equal(resultText(r), `slept ${ms}`)]);
      calls.push([
        client.callTool({ name: 'fake__echo', arguments: { text: `${tag}:${i}` } }),
        (r) => assert.deepEqual(r.structuredContent, { echo: `${tag}:${i}` }),
      ]);
    }
    return calls;
  }

  it('every call of both clients gets its own correct answer', async () => {
    const calls = [...batch(a, 'A'), ...batch(b, 'B')];
    const results = await Promise.all(calls.map(([p]) => p));
    results.forEach((r, i) => calls[i][1](r));
  });

  it('the clients can keep going after the concurrent burst', async () => {
    const [ra, rb] = await Promise.all([
      a.callTool({ name: 'everything__echo', arguments: { message: 'still A' } }),
      b.callTool({ name: 'everything__echo', arguments: { message: 'still B' } }),
    ]);
    assert.equal(resultText(ra), 'Echo: still A');
    assert.equal(resultText(rb), 'Echo: still B');
  });

  it('upstream request ids were unique although both clients used the same ids', () => {
    const ids = readMessages(daemon.path('fake-received.jsonl'))
      .filter((m) => m.method === 'tools/call')
      .map((m) => JSON.stringify(m.id));
    assert.equal(ids.length, 32);
    assert.equal(new Set(ids).size, ids.length, `duplicate upstream ids: ${ids.join(' ')}`);
  });

  it('schema: traffic to both clients and to the fake server is valid MCP 2025-11-25', () => {
    assertReport(validateDownstream(a.captureFile), ['InitializeResult', 'ListToolsResult', 'CallToolResult']);
    assertReport(validateDownstream(b.captureFile), ['InitializeResult', 'ListToolsResult', 'CallToolResult']);
    assertReport(validateUpstream(daemon.path('fake-received.jsonl')), ['InitializeRequest', 'InitializedNotification', 'ListToolsRequest', 'CallToolRequest']);
  });
});
