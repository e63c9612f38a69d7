// Per-server filters (issue 15): `tools = ["*", "!tool_1*"]` hides tools before naming; a
// hidden tool is not listed and cannot be called by any route (it is an unknown tool); another
// server's tools of the same name are not affected. A real mcpmuxd and the official SDK client.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fakeServer, resultText, startDaemon } from './harness.mjs';

test('hidden tools are neither listed nor callable; the rest work', async () => {
  const d = await startDaemon({
    servers: {
      a: fakeServer({ args: ['--tools', '3', '--no-builtins'], tools: ['*', '!tool_1'] }),
      b: fakeServer({ args: ['--tools', '2', '--no-builtins'] }),
    },
  });
  try {
    const client = await d.connect();
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['a__tool_0', 'a__tool_2', 'b__tool_0', 'b__tool_1']);
    assert.equal(resultText(await client.callTool({ name: 'a__tool_2', arguments: {} })), 'tool_2 ok');
    await assert.rejects(client.callTool({ name: 'a__tool_1', arguments: {} }), /Unknown tool|-32602/);
    assert.equal(resultText(await client.callTool({ name: 'b__tool_1', arguments: {} })), 'tool_1 ok');
  } finally {
    await d.stop();
  }
});
