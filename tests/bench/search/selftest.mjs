// selftest.mjs — checks this folder without the daemon: every fixture is well formed, the
// fixture server lists its tools exactly as recorded and answers calls, and tasks.json labels
// only tools that exist. Exit 1 on any failure.
//
// usage: node tests/bench/search/selftest.mjs
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FIXTURE_SERVER, connectRaw, isHeldOut, loadFixtures, loadTasks } from './common.mjs';

let failed = 0;
async function check(what, fn) {
  try {
    await fn();
    console.log(`ok    ${what}`);
  } catch (e) {
    ++failed;
    console.log(`FAIL  ${what}\n      ${String(e.message).split('\n').join('\n      ')}`);
  }
}

const fixtures = loadFixtures();
let total = 0;
for (const f of fixtures) {
  total += f.tools.length;
  await check(`${f.server}: ${f.tools.length} tools from ${f.source}, served unchanged, calls answered`, async () => {
    assert.match(f.server, /^[a-z0-9_-]+$/, 'server name');
    assert.match(f.source, /^(@[^/]+\/)?[^@]+@\d[^@]*$|^https?:\/\//, 'source is pkg@version or a URL');
    assert.match(f.captured, /^\d{4}-\d{2}-\d{2}$/, 'captured date');
    assert.ok(f.tools.length > 0, 'has tools');
    const names = f.tools.map((t) => t.name);
    assert.equal(new Set(names).size, names.length, 'tool names are unique');
    for (const t of f.tools) assert.equal(typeof t.inputSchema, 'object', `${t.name}: inputSchema`);

    const { client, listRawTools } = await connectRaw({ command: process.execPath, args: [FIXTURE_SERVER, f.file] });
    try {
      assert.deepEqual(await listRawTools(), f.tools, 'tools/list as recorded');
      // The SDK's own parse of the list must accept it too.
      assert.equal((await client.listTools()).tools.length, f.tools.length);
      // One tool with an outputSchema (the client checks structuredContent against it) and one without.
      const picks = [f.tools.find((t) => t.outputSchema), f.tools.find((t) => !t.outputSchema)].filter(Boolean);
      for (const t of picks) {
        const args = { probe: 1, text: 'héllo "q"' };
        const r = await client.callTool({ name: t.name, arguments: args });
        assert.equal(r.content[0].text, `called ${t.name} with ${JSON.stringify(args)}`);
        assert.equal(r.isError, undefined);
      }
    } finally {
      await client.close();
    }
  });
}
console.log(`      ${fixtures.length} fixtures, ${total} tools`);

await check('tasks.json: every label names a fixture tool; no duplicates', () => {
  const tasks = loadTasks(fixtures);
  const covered = new Set(tasks.map((t) => `${t.server}/${t.tool}`));
  console.log(`      ${tasks.length} tasks, ${covered.size}/${total} tools covered`);
});

await check('tasks.json: the held-out half is about half of the tasks', () => {
  const tasks = loadTasks(fixtures);
  const held = tasks.filter(isHeldOut).length;
  console.log(`      ${held} held out, ${tasks.length - held} to tune on`);
  assert.ok(held > 0.4 * tasks.length && held < 0.6 * tasks.length, `${held} of ${tasks.length} held out`);
});

await check('a bad label is refused', () => {
  const f = fixtures[0];
  const tmp = path.join(os.tmpdir(), `mcpmux-search-badtasks-${process.pid}.json`);
  writeFileSync(tmp, JSON.stringify([{ task: 'x', server: f.server, tool: 'no_such_tool' }]));
  try {
    assert.throws(() => loadTasks(fixtures, tmp), /has no tool "no_such_tool"/);
  } finally {
    rmSync(tmp);
  }
});

console.log(failed ? `${failed} failed` : 'all passed');
process.exit(failed ? 1 : 0);
