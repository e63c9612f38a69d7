// Code mode (issue 47) end to end: a real mcpmuxd with server-memory and server-everything, the
// official SDK client through `mcpmux connect --profile`, programs run by the sandboxed runner.
// The listing of `exposure = "code"` and of `code = true`; TypeScript declarations from the
// search; a program that calls three tools of two servers, its inner calls audited under the
// run; bad programs answered clearly (syntax, exception, endless loop, memory bomb, flood of
// output, hidden tool, run_code inside a program, calls never awaited, a cancelled run) while
// another client's direct calls go on undisturbed and no runner is left behind.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { EVERYTHING_JS, MCPMUX, MEMORY_JS, NODE, mcpmux, resultText, startDaemon, waitFor, within } from './harness.mjs';

const RUN = 'mcpmux__run_code';
const SEARCH = 'mcpmux__search_tools';

let d;
before(async () => {
  d = await startDaemon((dir) => ({
    daemon: {},
    servers: {
      everything: { command: NODE, args: [EVERYTHING_JS, 'stdio'] },
      memory: { command: NODE, args: [MEMORY_JS], env: { MEMORY_FILE_PATH: `${dir}/memory.jsonl` } },
    },
    profiles: {
      code: { exposure: 'code', code_timeout_ms: 4000, tools: ['*', '!memory__delete_*'] },
      listed: { servers: ['everything'], code: true },
      // Near its heap limit V8 collects again and again before it gives up: seconds on a busy
      // machine, which the short timeout above must not cut.
      roomy: { exposure: 'code' },
    },
  }));
});
after(async () => d && (await d.stop()));

async function connect(profile) {
  const transport = new StdioClientTransport({ command: MCPMUX, args: ['--socket', d.socket, 'connect', '--profile', profile] });
  const client = new Client({ name: `code-mode-${profile}`, version: '1.0.0' }, { capabilities: {} });
  await within(10000, client.connect(transport), `connect --profile ${profile}`);
  d.clients.push(client);
  return client;
}

const run = (client, code, options) => client.callTool({ name: RUN, arguments: { code } }, undefined, options);

test('exposure = "code" lists search and run_code; code = true adds run_code to the tools', async () => {
  const code = await connect('code');
  const names = (await code.listTools()).tools.map((t) => t.name).sort();
  assert.deepEqual(names, [RUN, SEARCH]);
  const tool = (await code.listTools()).tools.find((t) => t.name === RUN);
  assert.match(tool.description, /format.*typescript/);
  assert.match(tool.description, /4 s, 100 tool calls/);
  const listed = await connect('listed');
  const tools = (await listed.listTools()).tools.map((t) => t.name);
  assert.ok(tools.includes('everything__echo'));
  assert.equal(tools.at(-1), RUN);
  assert.ok(!tools.includes(SEARCH));
  // The program of a listing profile calls its listed tools.
  const r = await run(listed, 'return await tools.everything.echo({ message: "listed" });');
  assert.equal(resultText(r), 'Echo: listed');
});

test('search_tools with format "typescript" declares the tools it found', async () => {
  const client = await connect('code');
  const r = await client.callTool({ name: SEARCH, arguments: { query: 'create entities in the knowledge graph', format: 'typescript', limit: 2 } });
  const text = resultText(r);
  assert.match(text, /interface Tools \{/);
  assert.match(text, /create_entities\(args: \{/);
  assert.match(text, /tools\["memory__create_entities"\]/);
  assert.match(text, /declare const tools: Tools/);
  const bad = await client.callTool({ name: SEARCH, arguments: { query: 'x', format: 'yaml' } });
  assert.equal(bad.isError, true);
});

test('a program calls three tools of two servers; its inner calls are audited under its run', async () => {
  const client = await connect('code');
  const r = await run(client, `
    await tools.memory.create_entities({ entities: [
      { name: "gateway", entityType: "project", observations: ["multiplexes MCP servers"] },
      { name: "runner", entityType: "component", observations: ["runs programs"] } ] });
    const [graph, echo] = await Promise.all([
      tools["memory__search_nodes"]({ query: "runner" }),
      tools.everything.echo({ message: "three calls" }),
    ]);
    console.log(echo);
    return { found: graph.entities.map((e) => e.name) };`);
  assert.equal(r.isError, undefined, resultText(r));
  assert.equal(resultText(r), 'Echo: three calls\n{"found":["runner"]}');
  const h = await mcpmux(d.socket, ['history', '--json', '-n', '50']);
  assert.equal(h.code, 0, h.stderr);
  const rows = JSON.parse(h.stdout);
  const outer = rows.filter((e) => e.name === RUN && e.outcome === 'ok').at(-1);
  assert.ok(outer?.run, 'the run_code row carries the run id');
  const inner = rows.filter((e) => e.run === outer.run && e.name !== RUN).map((e) => `${e.server} ${e.name} ${e.outcome}`);
  assert.deepEqual(inner.sort(), ['everything everything__echo ok', 'memory memory__create_entities ok', 'memory memory__search_nodes ok']);
  // `mcpmux history --run ID`: that run's rows and no other.
  const one = await mcpmux(d.socket, ['history', '--run', outer.run, '--json']);
  assert.equal(one.code, 0, one.stderr);
  const runRows = JSON.parse(one.stdout);
  assert.equal(runRows.length, 4);
  assert.ok(runRows.every((e) => e.run === outer.run));
});

test('bad programs get clear answers and disturb nobody', async () => {
  const client = await connect('code');
  const other = await connect('listed');
  const cases = [
    ['const x = ;', /did not compile: Unexpected token ';' \(line 1, column 11\)/],
    ['function f() { throw new TypeError("bad input"); }\nf();', /threw TypeError: bad input \(line 1, column 22\)\n.*at f \(program\.js:1:22\)/s],
    ['while (true) {}', /stopped at its timeout limit/],
    ['for (;;) console.log("x".repeat(1000));', /stopped at its output limit/],
    ['return await tools["memory__delete_entities"]({ entityNames: ["gateway"] });', /unknown tool memory__delete_entities/],
    [`return await tools["${RUN}"]({ code: "1" });`, /cannot be called from inside a program/],
  ];
  // Another client's direct calls meanwhile are answered as ever.
  let direct = 0;
  let stop = false;
  const beside = (async () => {
    while (!stop) {
      const r = await other.callTool({ name: 'everything__echo', arguments: { message: 'beside' } });
      assert.equal(resultText(r), 'Echo: beside');
      direct++;
    }
  })();
  for (const [code, expected] of cases) {
    const r = await run(client, code);
    assert.equal(r.isError, true, `${code}: ${resultText(r)}`);
    assert.match(resultText(r), expected, code);
  }
  const bomb = await run(await connect('roomy'), 'const a = []; for (;;) a.push(new Array(1e5).fill(1.5));');
  assert.match(resultText(bomb), /stopped at its memory limit/);
  // Calls a program never awaits: it answers at once and they are dropped.
  const r = await run(client, 'tools.everything.echo({ message: "late" }); tools.memory.read_graph({}); return "done";');
  assert.equal(resultText(r), 'done');
  stop = true;
  await beside;
  assert.ok(direct > 0);
  // The client cancels a run: the next one runs as ever.
  const controller = new AbortController();
  const cancelled = run(client, 'await new Promise((r) => setTimeout(r, 1500)); return 1;', { signal: controller.signal });
  setTimeout(() => controller.abort(), 300);
  await assert.rejects(cancelled);
  assert.equal(resultText(await run(client, 'return 2 + 2;')), '4');
  // No runner is left: the daemon's children are its two servers and the one started ahead.
  await waitFor(() => d.children().filter((c) => c.cmdline.join(' ').includes('runner.mjs')).length <= 1, 5000);
  const st = await d.status();
  assert.ok(st, 'the daemon still answers');
});
