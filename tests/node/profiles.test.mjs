// Profiles and tool search (issue 15), end to end: a real mcpmuxd with two fake servers and
// [profiles.*] tables, official SDK clients through `mcpmux connect --profile`, through
// matching on the agent that launched `mcpmux connect` (this node process), and over HTTP on
// /mcp/NAME. Search mode (mcpmux__search_tools and mcpmux__call_tool), profiles limited to a
// server or hiding tools, description overrides, `mcpmux tools --profile`, `mcpmux status`
// sessions and profiles, and bad input: unknown profiles, config errors, reloads.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { Client as V2Client, StreamableHTTPClientTransport as V2HTTP } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { configToml, fakeServer, freePort, mcpmux, MCPMUX, MCPMUXD, resultText, startDaemon, waitFor, within } from './harness.mjs';

const execFileP = promisify(execFile);

const SEARCH = 'mcpmux__search_tools';
const CALL = 'mcpmux__call_tool';
const KLINGON = 'Translate Klingon poetry into haiku';

/** Two fake servers, alpha and beta, each with tool_0, tool_1 and the built-in tools. */
const SERVERS = {
  alpha: fakeServer({ args: ['--tools', '2', '--name', 'alpha'] }),
  beta: fakeServer({ args: ['--tools', '2', '--name', 'beta'] }),
};

/** The whole config text: {daemon, servers} as the harness writes them, plus `profiles`. */
function configWith(config, profiles) {
  return configToml({ ...config, profiles });
}

/**
 * mcpmuxd with `config` ({daemon, servers}) and `profiles`. The harness's startDaemon writes no
 * profile tables, so the daemon starts without them and `mcpmux reload` adds them.
 */
async function startWithProfiles(config, profiles) {
  const d = await startDaemon(config);
  try {
    writeFileSync(d.configFile, configWith(config, profiles));
    const r = await mcpmux(d.socket, ['reload', '--json']);
    assert.equal(r.code, 0, `reload adding the profiles: ${r.stderr}\n${d.logTail()}`);
    assert.deepEqual(JSON.parse(r.stdout).profiles.slice().sort(), Object.keys(profiles).sort());
    await d.waitReady();
  } catch (e) {
    await d.stop().catch(() => {});
    throw e;
  }
  return d;
}

/** An SDK 1.x client on `mcpmux --socket S connect ARGS...` (closed by d.stop()). */
async function connectWith(d, args = [], { name = 'profiles-test', setup } = {}) {
  const transport = new StdioClientTransport({ command: MCPMUX, args: ['--socket', d.socket, 'connect', ...args], stderr: 'pipe' });
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  setup?.(client);
  await within(10000, client.connect(transport), `connect ${args.join(' ')}`);
  d.clients.push(client);
  return client;
}

/** Counts a client's notifications/tools/list_changed (pass as connectWith's `setup`). */
function countListChanged(box) {
  return (c) => c.setNotificationHandler(ToolListChangedNotificationSchema, () => box.changed++);
}

const toolNames = async (client) => (await client.listTools()).tools.map((t) => t.name).sort();

/** The ranked hits of a mcpmux__search_tools result; its text is the same JSON. */
function searchHits(result) {
  assert.notEqual(result.isError, true, resultText(result));
  const tools = result.structuredContent?.tools;
  assert.ok(Array.isArray(tools), `no structuredContent.tools in ${JSON.stringify(result).slice(0, 400)}`);
  if (tools.length) assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent);
  return tools;
}

const search = async (client, args) => searchHits(await client.callTool({ name: SEARCH, arguments: args }));

test('search profile through the SDK client: two tools, search finds, call_tool calls, overrides are searched', async () => {
  const d = await startWithProfiles(
    { servers: SERVERS },
    {
      finder: {
        exposure: 'search',
        servers: ['alpha', 'beta'],
        tools: ['*', '!beta__tool_1'],
        descriptions: { alpha__tool_0: KLINGON },
      },
    },
  );
  try {
    const client = await connectWith(d, ['--profile', 'finder']);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [CALL, SEARCH]);
    const searchTool = tools.find((t) => t.name === SEARCH);
    assert.match(searchTool.description, /\balpha\b/);
    assert.match(searchTool.description, /\bbeta\b/);
    assert.ok(searchTool.inputSchema.properties.query, JSON.stringify(searchTool.inputSchema));

    // A search ranks the listed tool objects, best first, with their server and score.
    const hits = await search(client, { query: 'echo the text back' });
    assert.ok(hits.length > 0 && hits.length <= 5, `${hits.length} hits`);
    assert.ok(
      /^(alpha|beta)__echo$/.test(hits[0].name),
      `echo is not the best hit: ${hits.map((h) => h.name)}`,
    );
    for (const h of hits) {
      assert.equal(typeof h.description, 'string');
      assert.equal(h.inputSchema?.type, 'object', h.name);
      assert.ok(['alpha', 'beta'].includes(h.server), h.server);
      assert.equal(h.name.startsWith(`${h.server}__`), true, h.name);
      assert.equal(typeof h.score, 'number');
    }
    for (let i = 1; i < hits.length; i++) assert.ok(hits[i - 1].score >= hits[i].score, 'best first');
    const echo = hits.find((h) => /__echo$/.test(h.name));
    assert.equal(echo.description, 'Echo the text back');

    // `server` and `limit` narrow the search.
    const onBeta = await search(client, { query: 'echo the text back', server: 'beta', limit: 2 });
    assert.ok(onBeta.length >= 1 && onBeta.length <= 2, `${onBeta.length} hits`);
    assert.ok(onBeta.every((h) => h.server === 'beta'), onBeta.map((h) => h.name).join(' '));
    assert.equal(onBeta[0].name, 'beta__echo');

    // The hidden tool is not found; its visible twin on alpha is.
    const generic = await search(client, { query: 'Generic tool 1', limit: 50 });
    const genericNames = generic.map((h) => h.name);
    assert.ok(genericNames.includes('alpha__tool_1'), genericNames.join(' '));
    assert.ok(!genericNames.includes('beta__tool_1'), genericNames.join(' '));

    // The override is what is searched and what is shown.
    const klingon = await search(client, { query: 'klingon haiku' });
    assert.equal(klingon[0]?.name, 'alpha__tool_0', JSON.stringify(klingon));
    assert.equal(klingon[0].description, KLINGON);

    // Nothing matching: a text, no hits.
    const none = await client.callTool({ name: SEARCH, arguments: { query: 'zzyzx quuxplatz' } });
    assert.notEqual(none.isError, true);
    assert.equal(none.structuredContent?.tools?.length ?? 0, 0);
    assert.match(resultText(none), /No tool matches/);

    // call_tool calls a tool of the profile.
    const called = await client.callTool({ name: CALL, arguments: { name: 'alpha__echo', arguments: { text: 'found by search' } } });
    assert.notEqual(called.isError, true, resultText(called));
    assert.equal(resultText(called), 'found by search');
    assert.deepEqual(called.structuredContent, { echo: 'found by search' });
    assert.equal(resultText(await client.callTool({ name: CALL, arguments: { name: 'beta__tool_0', arguments: {} } })), 'tool_0 ok');

    // A tool outside the profile, or no tool at all, is a tool error (isError), not a call.
    const hidden = await client.callTool({ name: CALL, arguments: { name: 'beta__tool_1', arguments: {} } });
    assert.equal(hidden.isError, true, JSON.stringify(hidden));
    assert.doesNotMatch(resultText(hidden), /tool_1 ok/);
    const unknown = await client.callTool({ name: CALL, arguments: { name: 'gamma__nothing', arguments: {} } });
    assert.equal(unknown.isError, true, JSON.stringify(unknown));

    // The profile's tools can be called by name too; the hidden one cannot.
    assert.equal(resultText(await client.callTool({ name: 'beta__echo', arguments: { text: 'direct' } })), 'direct');
    await assert.rejects(client.callTool({ name: 'beta__tool_1', arguments: {} }), /Unknown tool/);

    // `mcpmux tools --profile` lists what searching can find (with the override), and says so.
    const cli = await mcpmux(d.socket, ['tools', '--profile', 'finder', '--json']);
    assert.equal(cli.code, 0, cli.stderr);
    const listed = JSON.parse(cli.stdout);
    const listedNames = listed.map((t) => t.name);
    assert.ok(listedNames.includes('alpha__echo') && listedNames.includes('beta__echo'), listedNames.join(' '));
    assert.ok(!listedNames.includes('beta__tool_1') && !listedNames.includes(SEARCH), listedNames.join(' '));
    assert.equal(listed.find((t) => t.name === 'alpha__tool_0').description, KLINGON);
    const table = await mcpmux(d.socket, ['tools', '--profile', 'finder']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /alpha__echo/);

    // status: the profile searches, lists its two tools, and has this one client.
    const st = await d.status();
    const prof = st.profiles.find((p) => p.name === 'finder');
    assert.equal(prof.exposure, 'search');
    assert.equal(prof.searching, true);
    assert.equal(prof.tools, listed.length);
    assert.ok(prof.estimated_tokens > 0, JSON.stringify(prof));
    assert.ok(prof.listing, JSON.stringify(prof));
    assert.equal(prof.clients, 1);
  } finally {
    await d.stop();
  }
});

test('a daemon that starts with profiles; found tools join the list with list_changed', async () => {
  // list_found_tools: a client that only calls listed tools gets what its searches found.
  const d = await startDaemon({
    servers: SERVERS,
    profiles: { finder: { exposure: 'search', list_found_tools: true, servers: ['alpha'] } },
  });
  try {
    const box = { changed: 0 };
    const client = await connectWith(d, ['--profile', 'finder'], { setup: countListChanged(box) });
    assert.deepEqual(await toolNames(client), [CALL, SEARCH]);
    const found = await client.callTool({ name: SEARCH, arguments: { query: 'echo the text back', limit: 1 } });
    assert.equal(found.structuredContent.tools[0].name, 'alpha__echo');
    assert.ok(await waitFor(() => box.changed >= 1, 5000), 'tools/list_changed after a search found a tool');
    assert.deepEqual(await toolNames(client), ['alpha__echo', CALL, SEARCH]);
    const echo = await client.callTool({ name: 'alpha__echo', arguments: { text: 'listed' } });
    assert.match(resultText(echo), /listed/);
    // The same tool found again changes nothing; another client's list is its own.
    await client.callTool({ name: SEARCH, arguments: { query: 'echo the text back', limit: 1 } });
    const other = await connectWith(d, ['--profile', 'finder']);
    assert.deepEqual(await toolNames(other), [CALL, SEARCH]);
    assert.equal(box.changed, 1);
  } finally {
    await d.stop();
  }
});

test('mcpmux tools --profile notes search mode on stderr', async () => {
    const d = await startWithProfiles({ servers: SERVERS }, { finder: { exposure: 'search' } });
    try {
      const table = await mcpmux(d.socket, ['tools', '--profile', 'finder']);
      assert.equal(table.code, 0, table.stderr);
      assert.match(table.stderr, /profile finder lists 2 tools \(search mode\)/);
    } finally {
      await d.stop();
    }
});

test('a profile of one server: the other server is neither listed nor callable; mcpmux tools agrees', async () => {
  const d = await startWithProfiles({ servers: SERVERS }, { solo: { servers: ['alpha'] } });
  try {
    const client = await connectWith(d, ['--profile', 'solo']);
    const names = await toolNames(client);
    assert.ok(names.includes('alpha__echo') && names.includes('alpha__tool_0'), names.join(' '));
    assert.deepEqual(names.filter((n) => !n.startsWith('alpha__')), [], 'only alpha tools');
    assert.ok(!names.includes(SEARCH) && !names.includes(CALL), 'not in search mode');

    assert.equal(resultText(await client.callTool({ name: 'alpha__echo', arguments: { text: 'solo' } })), 'solo');
    await assert.rejects(client.callTool({ name: 'beta__echo', arguments: { text: 'x' } }), /Unknown tool/);
    await assert.rejects(client.callTool({ name: SEARCH, arguments: { query: 'echo' } }), /Unknown tool/);

    const cli = await mcpmux(d.socket, ['tools', '--profile', 'solo', '--json']);
    assert.equal(cli.code, 0, cli.stderr);
    assert.deepEqual(JSON.parse(cli.stdout).map((t) => t.name).sort(), names);
    assert.doesNotMatch(cli.stderr, /search mode/);

    // A client without a profile (nothing matches, no `default`) sees both servers.
    const all = await toolNames(await connectWith(d));
    assert.ok(all.includes('alpha__echo') && all.includes('beta__echo'), all.join(' '));
    // (status lists its own connection too, not yet an MCP client: no `client`.)
    const st = await d.status();
    const clients = st.sessions.filter((s) => s.client);
    assert.deepEqual(clients.map((s) => s.profile).sort(), [null, 'solo'].sort());
  } finally {
    await d.stop();
  }
});

test('exposure auto: search when the tool list is estimated over tool_budget_tokens, else everything', async () => {
  const d = await startWithProfiles(
    { servers: SERVERS },
    {
      roomy: { exposure: 'auto', servers: ['alpha'], tool_budget_tokens: 100000 },
      tight: { exposure: 'auto', servers: ['alpha'], tool_budget_tokens: 100 },
    },
  );
  try {
    const { profiles } = await d.status();
    const roomy = profiles.find((p) => p.name === 'roomy');
    const tight = profiles.find((p) => p.name === 'tight');
    assert.equal(roomy.exposure, 'auto');
    assert.equal(roomy.searching, false, JSON.stringify(roomy));
    assert.equal(roomy.listing, undefined);
    assert.equal(tight.searching, true, JSON.stringify(tight));
    assert.equal(tight.listing, 2);
    assert.equal(tight.tool_budget_tokens, 100);
    assert.equal(tight.estimated_tokens, roomy.estimated_tokens, 'the same tools');
    assert.ok(tight.estimated_tokens > 100 && tight.estimated_tokens < 100000, JSON.stringify(tight));

    const roomyNames = await toolNames(await connectWith(d, ['--profile', 'roomy']));
    assert.equal(roomyNames.length, roomy.tools);
    assert.ok(roomyNames.includes('alpha__echo'), roomyNames.join(' '));
    const tightClient = await connectWith(d, ['--profile', 'tight']);
    assert.deepEqual(await toolNames(tightClient), [CALL, SEARCH]);
    const hits = await search(tightClient, { query: 'echo the text back' });
    assert.equal(hits[0].name, 'alpha__echo');
  } finally {
    await d.stop();
  }
});

test('/mcp/NAME over HTTP: the profile is served, an unknown one is 404, a session stays on its path', async () => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}/mcp`;
  const d = await startWithProfiles(
    { daemon: { http: `127.0.0.1:${port}` }, servers: SERVERS },
    { solo: { servers: ['alpha'] }, finder: { exposure: 'search' } },
  );
  const closers = [];
  try {
    // The endpoint wants the token mcpmuxd made next to its socket (status names the file).
    const tokenFile = (await d.status()).http.token_file;
    const auth = { Authorization: `Bearer ${readFileSync(tokenFile, 'utf8').trim()}` };
    const opts = { requestInit: { headers: auth } };
    // The 2.x client (2026-07-28) on /mcp/solo.
    const v2 = new V2Client({ name: 'v2-profile', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await within(15000, v2.connect(new V2HTTP(new URL(`${base}/solo`), opts)), 'v2 http connect');
    closers.push(() => v2.close());
    const v2names = (await v2.listTools()).tools.map((t) => t.name);
    assert.ok(v2names.includes('alpha__echo'), v2names.join(' '));
    assert.ok(v2names.every((n) => n.startsWith('alpha__')), v2names.join(' '));
    assert.equal(resultText(await v2.callTool({ name: 'alpha__echo', arguments: { text: 'v2 solo' } })), 'v2 solo');
    await assert.rejects(v2.callTool({ name: 'beta__echo', arguments: { text: 'x' } }), /Unknown tool/);

    // The 2.x client on /mcp/finder: search and call in the stateless era.
    const v2s = new V2Client({ name: 'v2-search', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await within(15000, v2s.connect(new V2HTTP(new URL(`${base}/finder`), opts)), 'v2 http connect (finder)');
    closers.push(() => v2s.close());
    assert.deepEqual((await v2s.listTools()).tools.map((t) => t.name).sort(), [CALL, SEARCH]);
    const v2hits = await search(v2s, { query: 'echo the text back', server: 'beta' });
    assert.equal(v2hits[0].name, 'beta__echo');
    const viaCall = await v2s.callTool({ name: CALL, arguments: { name: 'beta__echo', arguments: { text: 'v2 found' } } });
    assert.equal(resultText(viaCall), 'v2 found');

    // The 1.x client (a session) on /mcp/finder: search mode.
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/finder`), opts);
    const v1 = new Client({ name: 'v1-profile', version: '1.0.0' });
    await within(15000, v1.connect(transport), 'v1 http connect');
    closers.push(() => v1.close());
    assert.deepEqual(await toolNames(v1), [CALL, SEARCH]);
    const hits = await search(v1, { query: 'echo the text back' });
    assert.ok(hits.slice(0, 2).some((h) => /__echo$/.test(h.name)), hits.map((h) => h.name).join(' '));
    assert.ok(transport.sessionId, 'a session id');

    const post = (path, body, headers = {}) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...auth, ...headers },
        body: JSON.stringify(body),
      });
    // The session of /mcp/finder is unknown on /mcp/solo and on /mcp.
    const list = { jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} };
    const sessionHeaders = { 'mcp-session-id': transport.sessionId, 'mcp-protocol-version': '2025-06-18' };
    for (const path of ['/solo', '']) {
      const res = await post(path, list, sessionHeaders);
      const text = await res.text();
      assert.equal(res.status, 404, `${path}: ${text}`);
      assert.match(text, /Session not found/);
    }
    // ... and still good on its own path.
    const own = await post('/finder', list, sessionHeaders);
    assert.equal(own.status, 200, await own.clone().text());

    // An unknown profile: 404 with a JSON-RPC error naming it.
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fetch', version: '1' } },
    };
    const res = await post('/nope', init);
    assert.equal(res.status, 404);
    const body = await res.json();
    assert.equal(body.jsonrpc, '2.0');
    assert.match(body.error?.message ?? '', /Not Found: no profile named "nope"/, JSON.stringify(body));
    // Without the token nothing is served, not even whether a profile exists.
    const noToken = await post('/finder', init, { Authorization: '' });
    assert.equal(noToken.status, 401);

    const st = await d.status();
    const http = st.sessions.filter((s) => s.transport === 'http');
    assert.ok(http.some((s) => s.profile === 'finder' && s.client === 'v1-profile'), JSON.stringify(http));
  } finally {
    for (const close of closers) await close().catch(() => {});
    await d.stop();
  }
});

test('matching: a profile whose match names the agent (node) is chosen without --profile; --profile overrides it', async () => {
  const d = await startWithProfiles(
    { servers: SERVERS },
    {
      agent: { match: ['node'], servers: ['beta'] },
      default: { servers: ['alpha'], tools: ['alpha__echo'] },
      solo: { servers: ['alpha'] },
    },
  );
  try {
    const matched = await connectWith(d, [], { name: 'matched-client' });
    const names = await toolNames(matched);
    assert.ok(names.includes('beta__echo'), names.join(' '));
    assert.ok(names.every((n) => n.startsWith('beta__')), names.join(' '));

    const chosen = await connectWith(d, ['--profile', 'solo'], { name: 'chosen-client' });
    const soloNames = await toolNames(chosen);
    assert.ok(soloNames.includes('alpha__tool_0') && soloNames.every((n) => n.startsWith('alpha__')), soloNames.join(' '));

    const st = await d.status();
    const bySession = (client) => st.sessions.find((s) => s.client === client);
    const m = bySession('matched-client');
    assert.ok(m, JSON.stringify(st.sessions));
    assert.equal(m.profile, 'agent');
    assert.equal(m.transport, 'socket');
    assert.equal(m.agent_pid, process.pid);
    assert.match(m.agent_program, /node$/);
    assert.match(m.program ?? '', /mcpmux$/);
    assert.equal(typeof m.pid, 'number');
    const c = bySession('chosen-client');
    assert.equal(c.profile, 'solo');
    assert.equal(c.agent_pid, process.pid);
    const clientsOf = (name) => st.profiles.find((p) => p.name === name)?.clients;
    assert.equal(clientsOf('agent'), 1);
    assert.equal(clientsOf('solo'), 1);
    // The human table says the same: a row per MCP client (not this status command's own).
    const table = await mcpmux(d.socket, ['status'], { env: { COLUMNS: '200' } });
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, new RegExp(`socket +legacy +agent +matched-client +${m.pid} +node \\(pid ${process.pid}\\)`));
    assert.match(table.stdout, /socket +legacy +solo +chosen-client /);
    assert.match(table.stdout, /^agent +all +all +\d+ +\d+ +1$/m);
    assert.equal(table.stdout.match(/socket +(legacy|modern|unknown)/g).length, 2);

    // Once `match` no longer names node, a new client gets `default`.
    writeFileSync(
      d.configFile,
      configWith(
        { servers: SERVERS },
        {
          agent: { match: ['some-other-agent'], servers: ['beta'] },
          default: { servers: ['alpha'], tools: ['alpha__echo'] },
          solo: { servers: ['alpha'] },
        },
      ),
    );
    const r = await mcpmux(d.socket, ['reload', '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout).profiles, ['agent']);
    const fallback = await connectWith(d, [], { name: 'default-client' });
    assert.deepEqual(await toolNames(fallback), ['alpha__echo']);
    assert.equal((await d.status()).sessions.find((s) => s.client === 'default-client')?.profile, 'default');
  } finally {
    await d.stop();
  }
});

test('bad input: unknown profiles, config errors, refused and accepted reloads', async () => {
  const profiles = { finder: { exposure: 'search' }, solo: { servers: ['alpha'] } };
  const d = await startWithProfiles({ servers: SERVERS }, profiles);
  try {
    const solo = { changed: 0 };
    const finder = { changed: 0 };
    const soloClient = await connectWith(d, ['--profile', 'solo'], { setup: countListChanged(solo) });
    const finderClient = await connectWith(d, ['--profile', 'finder'], { setup: countListChanged(finder) });
    assert.ok((await toolNames(soloClient)).includes('alpha__tool_1'));

    // An unknown --profile: connect and tools refuse it, the daemon serves on.
    const message = 'mcpmux: unknown profile "nope" (configured: finder, solo)';
    const connect = await mcpmux(d.socket, ['connect', '--profile', 'nope']);
    assert.equal(connect.code, 1, connect.stderr);
    assert.ok(connect.stderr.includes(message), connect.stderr);
    const tools = await mcpmux(d.socket, ['tools', '--profile', 'nope']);
    assert.equal(tools.code, 1, tools.stderr);
    assert.ok(tools.stderr.includes('unknown profile "nope" (configured: finder, solo)'), tools.stderr);
    assert.equal(resultText(await soloClient.callTool({ name: 'alpha__echo', arguments: { text: 'still here' } })), 'still here');

    // --check-config: a profile naming a missing server, a glob matching none.
    const bad = d.path('bad.toml');
    writeFileSync(bad, configWith({ servers: SERVERS }, { ...profiles, broken: { servers: ['alpha', 'x', 'z*'] } }));
    const check = await execFileP(MCPMUXD, ['--check-config', '--config', bad]).then(
      () => ({ code: 0, stderr: '' }),
      (e) => ({ code: e.code, stderr: `${e.stdout}${e.stderr}` }),
    );
    assert.equal(check.code, 1, check.stderr);
    assert.ok(check.stderr.includes('profiles.broken.servers[1]: no server is named "x"'), check.stderr);
    assert.ok(check.stderr.includes('profiles.broken.servers[2]: "z*" matches no configured server'), check.stderr);
    const good = await execFileP(MCPMUXD, ['--check-config', '--config', d.configFile]).then(
      () => 0,
      (e) => `${e.code}: ${e.stderr}`,
    );
    assert.equal(good, 0);

    // A reload with that file is refused; nothing changes.
    const before = await d.status();
    writeFileSync(d.configFile, readFileSync(bad, 'utf8'));
    const refused = await mcpmux(d.socket, ['reload', '--json']);
    assert.equal(refused.code, 1, refused.stdout);
    assert.match(`${refused.stdout}${refused.stderr}`, /no server is named "x"/);
    const after = await d.status();
    assert.deepEqual(after.profiles.map((p) => p.name).sort(), ['finder', 'solo']);
    assert.deepEqual(
      after.servers.map((s) => [s.name, s.pid]),
      before.servers.map((s) => [s.name, s.pid]),
      'the servers keep running',
    );
    assert.ok((await toolNames(soloClient)).includes('alpha__tool_1'));
    const hits = await search(finderClient, { query: 'echo the text back' });
    assert.ok(hits.some((h) => /__echo$/.test(h.name)));

    // A reload narrowing solo's tools: solo's client is told and served the new list.
    const narrowed = { servers: ['alpha'], tools: ['alpha__echo', 'alpha__tool_*'] };
    writeFileSync(d.configFile, configWith({ servers: SERVERS }, { ...profiles, solo: narrowed }));
    const changed = await mcpmux(d.socket, ['reload', '--json']);
    assert.equal(changed.code, 0, changed.stderr);
    assert.deepEqual(JSON.parse(changed.stdout).profiles, ['solo']);
    assert.ok(await waitFor(() => solo.changed > 0, 5000), 'tools/list_changed to the client of solo');
    assert.deepEqual(await toolNames(soloClient), ['alpha__echo', 'alpha__tool_0', 'alpha__tool_1']);
    await assert.rejects(soloClient.callTool({ name: 'alpha__slow', arguments: { ms: 1 } }), /Unknown tool/);
    assert.equal(finder.changed, 0, 'the client of an unchanged profile is not told');

    // A reload removing finder: its client sees everything now, and is told.
    writeFileSync(d.configFile, configWith({ servers: SERVERS }, { solo: narrowed }));
    const removed = await mcpmux(d.socket, ['reload', '--json']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.deepEqual(JSON.parse(removed.stdout).profiles, ['finder']);
    assert.ok(await waitFor(() => finder.changed > 0, 5000), 'tools/list_changed to the client of finder');
    const everything = await toolNames(finderClient);
    assert.ok(everything.includes('alpha__echo') && everything.includes('beta__tool_1'), everything.join(' '));
    assert.ok(!everything.includes(SEARCH), everything.join(' '));
    const st = await d.status();
    assert.deepEqual(st.profiles.map((p) => p.name), ['solo']);
  } finally {
    await d.stop();
  }
});
