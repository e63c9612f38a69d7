// Per-server filters (issue 15): `tools = ["*", "!tool_1*"]` hides tools before naming; a
// hidden tool is not listed and cannot be called by any route (it is an unknown tool); another
// server's tools of the same name are not affected. A real mcpmuxd and the official SDK client.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { fakeServer, mcpmux, resultText, startDaemon, waitFor } from './harness.mjs';

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

test('a reload that changes only the filters keeps the server running and tells clients', async () => {
  const d = await startDaemon({
    servers: { a: fakeServer({ args: ['--tools', '3', '--no-builtins'] }) },
  });
  try {
    let changed = 0;
    const client = await d.connect({
      setup: (c) => c.setNotificationHandler(ToolListChangedNotificationSchema, () => changed++),
    });
    assert.equal((await client.listTools()).tools.length, 3);
    const pid = (await d.status()).servers[0].pid;
    writeFileSync(d.configFile, readFileSync(d.configFile, 'utf8').replace('[servers.a]', '[servers.a]\ntools = ["tool_0"]'));
    const out = await mcpmux(d.socket, ['reload', '--json']);
    assert.equal(out.code, 0, out.stderr);
    assert.deepEqual(JSON.parse(out.stdout).refiltered, ['a']);
    assert.ok(await waitFor(() => changed > 0, 5000), 'list_changed');
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['a__tool_0']);
    assert.equal((await d.status()).servers[0].pid, pid, 'the same process');
  } finally {
    await d.stop();
  }
});
