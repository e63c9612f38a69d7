// fake_protocol.test.mjs — the MCP features beyond tools (resources, templates, prompts,
// subscriptions, completion, logging, progress deadlines, cancellation, sampling, elicitation,
// roots, pagination) through mcpmuxd, with fake_mcp_server upstreams whose names and URIs
// collide on purpose and three official SDK clients behind tap_bridge.mjs. Everything mcpmux
// sent the clients and the fakes is validated against the MCP 2025-11-25 schema.
//
// Servers: a and b (same flags: resources, template, prompts, subscribe, completions, logging;
// both offer shared://common and common_prompt; a also has 12 generic tools a__gen_*), t
// (timeout_ms 500) and u (timeout_ms 500, max_timeout_ms 800). [daemon] page_size = 5.
// Clients: c1 declares sampling, elicitation and roots; c2 sampling and roots; c3 nothing.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  ResourceUpdatedNotificationSchema,
  ResourceListChangedNotificationSchema,
  PromptListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  LoggingMessageNotificationSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { startDaemon, fakeServer, resultText, within, sleep, mcpmux } from './harness.mjs';
import { check, Report, assertReport, readMessages, validateMessages } from './schema.mjs';
import {
  SERVER_RESULT,
  SERVER_NOTIFICATION,
  SERVER_REQUEST,
  CLIENT_REQUEST,
  CLIENT_NOTIFICATION,
  CLIENT_RESULT,
} from './schema.mjs';

const PAGE = 5;
const FULL = ['--resources', '2', '--templates', '--prompts', '2', '--subscribe', '--completions', '--logging'];

// ------------------------------------------------------------------------------------------
// Schema validation of captures, with schema.mjs's method → definition tables.

/** What mcpmux sent one SDK client (the bridge's capture; `.sent` has the client's requests). */
function validateClientCapture(file) {
  const asked = new Map();
  for (const m of readMessages(`${file}.sent`)) if (m.method && 'id' in m) asked.set(JSON.stringify(m.id), m.method);
  return validateMessages(file, {
    requests: SERVER_REQUEST,
    notifications: SERVER_NOTIFICATION,
    results: SERVER_RESULT,
    asked,
    who: `downstream ${file}`,
  });
}

/** What mcpmux sent one fake (its --log); `srv` lists the methods of its requests srv-1, srv-2, … */
function validateServerLog(file, srv) {
  const asked = new Map(srv.map((m, i) => [JSON.stringify(`srv-${i + 1}`), m]));
  return validateMessages(file, {
    requests: CLIENT_REQUEST,
    notifications: CLIENT_NOTIFICATION,
    results: CLIENT_RESULT,
    asked,
    who: `upstream ${file}`,
  });
}

// ------------------------------------------------------------------------------------------

async function waitFor(pred, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() > deadline) assert.fail(`${what}: not within ${ms} ms`);
    await sleep(25);
  }
}

/** Pages through a list with cursors; asserts the page size; returns all items. */
async function listAll(client, fn, key) {
  const all = [];
  let cursor;
  for (let n = 0; n < 100; n++) {
    const page = await client[fn](cursor ? { cursor } : {});
    assert.ok(page[key].length <= PAGE, `${fn}: page of ${page[key].length} items > page_size ${PAGE}`);
    all.push(...page[key]);
    cursor = page.nextCursor;
    if (!cursor) return all;
  }
  assert.fail(`${fn}: more than 100 pages`);
}

const codeOf = (e) => e?.code;

describe('resources, prompts, completion, logging, sampling and more through mcpmux (fake servers)', () => {
  let daemon;
  let c1, c2, c3;
  const ev = { c1: [], c2: [], c3: [] };
  const asked = { c1: [], c2: [], c3: [] };
  const aborted = [];  // reasons the SDK gave c1's sampling handler when its request was cancelled
  // Methods of the requests each fake sent (srv-1, srv-2, …), for validating mcpmux's answers.
  const srv = { a: [], b: [], t: [], u: [] };
  const log = (s) => daemon.path(`${s}.jsonl`);
  const received = (s, pred) => readMessages(log(s)).filter(pred);

  function events(tag, method, pred = () => true) {
    return ev[tag].filter((e) => e.method === method && pred(e.params ?? {}));
  }

  function setupClient(tag) {
    return (c) => {
      const rec = (n) => ev[tag].push({ method: n.method, params: n.params, at: Date.now() });
      for (const s of [ResourceUpdatedNotificationSchema, ResourceListChangedNotificationSchema, PromptListChangedNotificationSchema,
        ToolListChangedNotificationSchema, LoggingMessageNotificationSchema])
        c.setNotificationHandler(s, rec);
      if (tag !== 'c3')
        c.setRequestHandler(CreateMessageRequestSchema, (req, extra) => {
          asked[tag].push(req.method);
          // "never": a user who does not answer; the SDK aborts the handler when it is cancelled.
          if (req.params.messages[0]?.content?.text === 'never')
            return new Promise((resolve, reject) =>
              extra.signal.addEventListener('abort', () => {
                aborted.push(String(extra.signal.reason));
                reject(new Error('aborted'));
              }));
          return { model: `${tag}-model`, role: 'assistant', content: { type: 'text', text: `answer from ${tag}` }, stopReason: 'endTurn' };
        });
      if (tag === 'c1')
        c.setRequestHandler(ElicitRequestSchema, (req) => {
          asked[tag].push(req.method);
          return { action: 'accept', content: { answer: `yes from ${tag}` } };
        });
      if (tag !== 'c3')
        c.setRequestHandler(ListRootsRequestSchema, (req) => {
          asked[tag].push(req.method);
          return { roots: [{ uri: `file:///tmp/${tag}-root`, name: `${tag} root` }] };
        });
    };
  }

  before(async () => {
    daemon = await startDaemon((dir) => ({
      daemon: { timeout_ms: 20000, page_size: PAGE },
      servers: {
        a: fakeServer({
          log: `${dir}/a.jsonl`,
          args: [...FULL, '--name', 'a', '--tools', '12', '--tool-name-prefix', 'gen_', '--client-timeout-ms', '1500'],
          roots: ['file:///tmp/root-a'],
          on_change: 'accept', // the tests change its lists
        }),
        b: fakeServer({ log: `${dir}/b.jsonl`, args: [...FULL, '--name', 'b'], on_change: 'accept' }),
        t: fakeServer({ log: `${dir}/t.jsonl`, args: ['--name', 't'], timeout_ms: 500, on_change: 'accept' }),
        u: fakeServer({ log: `${dir}/u.jsonl`, args: ['--name', 'u'], timeout_ms: 500, max_timeout_ms: 800 }),
      },
    }));
    c1 = await daemon.connect({
      capture: 'c1.jsonl',
      name: 'c1',
      capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } },
      setup: setupClient('c1'),
    });
    c2 = await daemon.connect({ capture: 'c2.jsonl', name: 'c2', capabilities: { sampling: {}, roots: { listChanged: true } }, setup: setupClient('c2') });
    c3 = await daemon.connect({ capture: 'c3.jsonl', name: 'c3', setup: setupClient('c3') });
  });

  after(async () => {
    await daemon?.stop();
  });

  it('initialize: capabilities are the union of the upstreams’', () => {
    const caps = c1.getServerCapabilities();
    assert.ok(caps.tools, JSON.stringify(caps));
    assert.equal(caps.resources?.subscribe, true, JSON.stringify(caps));
    assert.equal(caps.resources?.listChanged, true, JSON.stringify(caps));
    assert.ok(caps.prompts, JSON.stringify(caps));
    assert.ok(caps.completions, JSON.stringify(caps));
    assert.ok(caps.logging, JSON.stringify(caps));
  });

  it('resources/list: colliding shared://common is exposed for b as mcpmux://b/shared://common, paginated', async () => {
    const uris = (await listAll(c1, 'listResources', 'resources')).map((r) => r.uri);
    assert.deepEqual([...uris].sort(), [
      'fake://a/r0', 'fake://a/r1', 'fake://b/r0', 'fake://b/r1', 'mcpmux://b/shared://common', 'shared://common',
    ]);
  });

  it('resources/read reaches the server that owns the URI (or alias)', async () => {
    const text = async (uri) => (await c1.readResource({ uri })).contents.map((c) => c.text).join('|');
    assert.equal(await text('shared://common'), 'shared resource of a');
    assert.equal(await text('mcpmux://b/shared://common'), 'shared resource of b');
    assert.equal(await text('fake://b/r1'), 'resource 1 of b');
    assert.equal(await text('fake://a/r0'), 'resource 0 of a');
    // b was asked for its own URI, not the alias.
    assert.ok(received('b', (m) => m.method === 'resources/read' && m.params.uri === 'shared://common').length === 1);
    assert.equal(received('b', (m) => m.method === 'resources/read' && m.params.uri.startsWith('mcpmux:')).length, 0);
    await assert.rejects(c1.readResource({ uri: 'nope://nothing' }), (e) => {
      assert.ok([-32602, -32002].includes(codeOf(e)), `unknown URI: ${e.message}`);
      return true;
    });
  });

  it('resources/templates/list and a read through a template are routed by the template prefix', async () => {
    const templates = (await listAll(c1, 'listResourceTemplates', 'resourceTemplates')).map((t) => t.uriTemplate);
    assert.deepEqual([...templates].sort(), ['fake://a/item/{id}', 'fake://b/item/{id}']);
    const r = await c2.readResource({ uri: 'fake://b/item/42' });
    assert.equal(r.contents[0].text, 'item 42 of b');
    const r2 = await c2.readResource({ uri: 'fake://a/item/x7' });
    assert.equal(r2.contents[0].text, 'item x7 of a');
  });

  it('prompts: namespaced a__common_prompt / b__common_prompt; prompts/get reaches the right one with arguments', async () => {
    const prompts = await listAll(c1, 'listPrompts', 'prompts');
    const names = prompts.map((p) => p.name);
    assert.deepEqual([...names].sort(), ['a__common_prompt', 'a__prompt_0', 'a__prompt_1', 'b__common_prompt', 'b__prompt_0', 'b__prompt_1']);
    const p = prompts.find((x) => x.name === 'b__common_prompt');
    assert.deepEqual(p.arguments, [{ name: 'topic', description: 'What the prompt is about', required: true }]);
    const g = await c1.getPrompt({ name: 'b__common_prompt', arguments: { topic: 'dogs' } });
    assert.deepEqual(g.messages, [{ role: 'user', content: { type: 'text', text: 'common_prompt of b about dogs' } }]);
    const g2 = await c1.getPrompt({ name: 'a__prompt_1', arguments: { topic: 'cats' } });
    assert.equal(g2.messages[0].content.text, 'prompt_1 of a about cats');
    assert.equal(received('b', (m) => m.method === 'prompts/get' && m.params.name === 'common_prompt' && m.params.arguments?.topic === 'dogs').length, 1);
    await assert.rejects(c1.getPrompt({ name: 'zz__nope', arguments: {} }), (e) => codeOf(e) === -32602);
    // The server's own error (missing argument) passes through.
    await assert.rejects(c1.getPrompt({ name: 'a__common_prompt', arguments: {} }), (e) => codeOf(e) === -32602 && /topic/.test(e.message));
  });

  it('completion/complete is routed by ref/prompt name and by ref/resource template', async () => {
    const values = async (ref, argument) => (await c1.complete({ ref, argument })).completion.values;
    assert.deepEqual(await values({ type: 'ref/prompt', name: 'a__common_prompt' }, { name: 'topic', value: 'x' }), ['x1', 'x2', 'a prompt:common_prompt topic']);
    assert.deepEqual(await values({ type: 'ref/prompt', name: 'b__common_prompt' }, { name: 'topic', value: 'y' }), ['y1', 'y2', 'b prompt:common_prompt topic']);
    assert.deepEqual(await values({ type: 'ref/prompt', name: 'b__prompt_0' }, { name: 'topic', value: '' }), ['1', '2', 'b prompt:prompt_0 topic']);
    assert.deepEqual(await values({ type: 'ref/resource', uri: 'fake://b/item/{id}' }, { name: 'id', value: '4' }), ['41', '42', 'b resource:fake://b/item/{id} id']);
    assert.deepEqual(await values({ type: 'ref/resource', uri: 'fake://a/item/{id}' }, { name: 'id', value: '5' }), ['51', '52', 'a resource:fake://a/item/{id} id']);
    await assert.rejects(c1.complete({ ref: { type: 'ref/prompt', name: 'nope' }, argument: { name: 'topic', value: '' } }), (e) => codeOf(e) === -32602);
  });

  it('resources/subscribe: only the subscribed client gets notifications/resources/updated', async () => {
    await c1.subscribeResource({ uri: 'fake://a/r0' });
    await waitFor(() => received('a', (m) => m.method === 'resources/subscribe' && m.params.uri === 'fake://a/r0').length === 1, 3000, 'subscribe upstream');
    const r = await c3.callTool({ name: 'a__touch', arguments: { uri: 'fake://a/r0' } });
    assert.equal(resultText(r), 'touched fake://a/r0');
    await waitFor(() => events('c1', 'notifications/resources/updated', (p) => p.uri === 'fake://a/r0').length === 1, 3000, 'c1 updated');
    await sleep(500);
    assert.equal(events('c2', 'notifications/resources/updated').length, 0, 'c2 got an update it did not subscribe to');
    assert.equal(events('c3', 'notifications/resources/updated').length, 0, 'c3 got an update it did not subscribe to');
  });

  it('resources/subscribe by alias: the server sees its own URI, the subscriber the alias', async () => {
    await c2.subscribeResource({ uri: 'mcpmux://b/shared://common' });
    await waitFor(() => received('b', (m) => m.method === 'resources/subscribe' && m.params.uri === 'shared://common').length === 1, 3000, 'subscribe upstream b');
    await c3.callTool({ name: 'b__touch', arguments: { uri: 'shared://common' } });
    await waitFor(() => events('c2', 'notifications/resources/updated').length === 1, 3000, 'c2 updated');
    assert.deepEqual(events('c2', 'notifications/resources/updated')[0].params, { uri: 'mcpmux://b/shared://common' });
    await sleep(300);
    assert.equal(events('c1', 'notifications/resources/updated', (p) => p.uri.includes('common')).length, 0);
    await c2.unsubscribeResource({ uri: 'mcpmux://b/shared://common' });
    await waitFor(() => received('b', (m) => m.method === 'resources/unsubscribe').length === 1, 3000, 'unsubscribe upstream b');
  });

  it('subscriptions are ref-counted upstream: one subscribe for two clients, unsubscribe after the last', async () => {
    const subs = () => received('a', (m) => m.method === 'resources/subscribe' && m.params.uri === 'fake://a/r1').length;
    const unsubs = () => received('a', (m) => m.method === 'resources/unsubscribe' && m.params.uri === 'fake://a/r1').length;
    await c1.subscribeResource({ uri: 'fake://a/r1' });
    await c2.subscribeResource({ uri: 'fake://a/r1' });
    await waitFor(() => subs() >= 1, 3000, 'subscribe upstream');
    await sleep(300);
    assert.equal(subs(), 1, 'the server saw exactly one subscribe');
    await c1.unsubscribeResource({ uri: 'fake://a/r1' });
    await sleep(400);
    assert.equal(unsubs(), 0, 'an unsubscribe went upstream while c2 is still subscribed');
    // c2 still gets updates, c1 no longer.
    const before1 = events('c1', 'notifications/resources/updated', (p) => p.uri === 'fake://a/r1').length;
    await c3.callTool({ name: 'a__touch', arguments: { uri: 'fake://a/r1' } });
    await waitFor(() => events('c2', 'notifications/resources/updated', (p) => p.uri === 'fake://a/r1').length === 1, 3000, 'c2 updated');
    await sleep(300);
    assert.equal(events('c1', 'notifications/resources/updated', (p) => p.uri === 'fake://a/r1').length, before1);
    await c2.unsubscribeResource({ uri: 'fake://a/r1' });
    await waitFor(() => unsubs() === 1, 3000, 'unsubscribe upstream after the last client');
    await sleep(200);
    assert.equal(unsubs(), 1);
    assert.equal(subs(), 1);
  });

  it('change_lists: resources and prompts list_changed reach the clients and the new items are listed', async () => {
    const r = await c1.callTool({ name: 'a__change_lists', arguments: {} });
    assert.equal(resultText(r), 'added fake://a/added0 added_prompt_0');
    for (const tag of ['c1', 'c2', 'c3']) {
      await waitFor(() => events(tag, 'notifications/resources/list_changed').length > 0, 5000, `${tag} resources/list_changed`);
      await waitFor(() => events(tag, 'notifications/prompts/list_changed').length > 0, 5000, `${tag} prompts/list_changed`);
    }
    const uris = (await listAll(c2, 'listResources', 'resources')).map((x) => x.uri);
    assert.ok(uris.includes('fake://a/added0'), uris.join(' '));
    assert.equal(new Set(uris).size, uris.length);
    const names = (await listAll(c2, 'listPrompts', 'prompts')).map((x) => x.name);
    assert.ok(names.includes('a__added_prompt_0'), names.join(' '));
    assert.equal((await c2.readResource({ uri: 'fake://a/added0' })).contents[0].text, 'added resource 0 of a');
  });

  it('logging: each client gets the messages its level admits, logger = server name', async () => {
    await c1.setLoggingLevel('debug');
    await c2.setLoggingLevel('error');
    // The servers that offer logging are asked for the most verbose level wanted; t does not offer it.
    await waitFor(() => received('a', (m) => m.method === 'logging/setLevel' && m.params.level === 'debug').length > 0, 3000, 'setLevel debug at a');
    await waitFor(() => received('b', (m) => m.method === 'logging/setLevel' && m.params.level === 'debug').length > 0, 3000, 'setLevel debug at b');
    assert.equal(received('t', (m) => m.method === 'logging/setLevel').length, 0, 't has no logging capability');
    await c3.callTool({ name: 'a__log', arguments: { level: 'info', text: 'info-1' } });
    await waitFor(() => events('c1', 'notifications/message', (p) => p.data === 'info-1').length === 1, 3000, 'c1 info-1');
    assert.deepEqual(events('c1', 'notifications/message', (p) => p.data === 'info-1')[0].params, { level: 'info', data: 'info-1', logger: 'a' });
    await c3.callTool({ name: 'b__log', arguments: { level: 'error', text: 'error-1' } });
    await waitFor(() => events('c1', 'notifications/message', (p) => p.data === 'error-1').length === 1, 3000, 'c1 error-1');
    await waitFor(() => events('c2', 'notifications/message', (p) => p.data === 'error-1').length === 1, 3000, 'c2 error-1');
    assert.equal(events('c2', 'notifications/message', (p) => p.data === 'error-1')[0].params.logger, 'b');
    await sleep(400);
    assert.equal(events('c2', 'notifications/message', (p) => p.data === 'info-1').length, 0, 'c2 (level error) got an info message');
    assert.equal(events('c3', 'notifications/message').length, 0, 'c3 never set a level but got log messages');
  });

  it('cancelling a call sends notifications/cancelled upstream with the upstream request id', async () => {
    const ac = new AbortController();
    const call = c1.callTool({ name: 'a__slow', arguments: { ms: 10000 } }, undefined, { signal: ac.signal });
    const up = await waitFor(() => received('a', (m) => m.method === 'tools/call' && m.params.name === 'slow')[0], 5000, 'slow call upstream');
    ac.abort('test cancels');
    await assert.rejects(within(5000, call, 'aborted call'));
    const cancel = await waitFor(() => received('a', (m) => m.method === 'notifications/cancelled')[0], 5000, 'notifications/cancelled upstream');
    assert.deepEqual(cancel.params.requestId, up.id);
  });

  it('progress extends the deadline (timeout_ms 500, 6 steps of 200 ms) and reaches only the caller', async () => {
    const seen = [];
    const t0 = Date.now();
    const r = await c1.callTool({ name: 't__progress', arguments: { steps: 6, ms: 200 } }, undefined, { onprogress: (p) => seen.push(p) });
    assert.equal(resultText(r), 'progress done 6');
    assert.ok(Date.now() - t0 >= 1100, 'the call took less than 6 × 200 ms?');
    assert.ok(seen.length >= 5, `c1 saw ${seen.length} progress notifications`);
    for (const tag of ['c2', 'c3'])
      assert.equal(readMessages(daemon.path(`${tag}.jsonl`)).filter((m) => m.method === 'notifications/progress').length, 0, `${tag} got progress of c1's call`);
  });

  it('without progress the same 1.2 s call fails at the 500 ms deadline', async () => {
    const t0 = Date.now();
    await assert.rejects(c1.callTool({ name: 't__slow', arguments: { ms: 1200 } }), (e) => {
      assert.equal(codeOf(e), -32001, e.message);
      return true;
    });
    const took = Date.now() - t0;
    assert.ok(took >= 450 && took < 1150, `timed out after ${took} ms`);
  });

  it('progress never extends a call beyond max_timeout_ms (800)', async () => {
    const t0 = Date.now();
    await assert.rejects(
      c1.callTool({ name: 'u__progress', arguments: { steps: 6, ms: 200 } }, undefined, { onprogress: () => {} }),
      (e) => codeOf(e) === -32001,
    );
    const took = Date.now() - t0;
    assert.ok(took >= 700 && took < 1150, `max_timeout_ms: failed after ${took} ms`);
  });

  it('sampling with no capable client in flight: the server gets -32601 saying why', async () => {
    srv.a.push('sampling/createMessage');
    const r = await c3.callTool({ name: 'a__sample', arguments: { text: 'q0' } });
    const resp = JSON.parse(resultText(r));
    assert.equal(resp.error?.code, -32601, resultText(r));
    assert.match(resp.error.message, /sampling/);
    assert.equal(asked.c1.length + asked.c2.length, 0, 'an idle client was asked');
  });

  it('sampling: the calling client answers; the other is not asked', async () => {
    srv.a.push('sampling/createMessage');
    let r = await c1.callTool({ name: 'a__sample', arguments: { text: 'q1' } });
    let resp = JSON.parse(resultText(r));
    assert.deepEqual(resp.result, { model: 'c1-model', role: 'assistant', content: { type: 'text', text: 'answer from c1' }, stopReason: 'endTurn' });
    assert.deepEqual([asked.c1.length, asked.c2.length], [1, 0]);
    srv.a.push('sampling/createMessage');
    r = await c2.callTool({ name: 'a__sample', arguments: { text: 'q2' } });
    resp = JSON.parse(resultText(r));
    assert.equal(resp.result?.content?.text, 'answer from c2', resultText(r));
    assert.deepEqual([asked.c1.length, asked.c2.length], [1, 1]);
    // With c2's slow call in flight to the same server, c1's later call is the one asked.
    const slow = c2.callTool({ name: 'a__slow', arguments: { ms: 800 } });
    await waitFor(() => received('a', (m) => m.method === 'tools/call' && m.params.name === 'slow').length === 2, 3000, 'second slow call');
    srv.a.push('sampling/createMessage');
    r = await c1.callTool({ name: 'a__sample', arguments: { text: 'q3' } });
    assert.equal(JSON.parse(resultText(r)).result?.content?.text, 'answer from c1');
    assert.deepEqual([asked.c1.length, asked.c2.length], [2, 1]);
    await slow;
    // The sampling request reached the client unchanged.
    const req = readMessages(daemon.path('c1.jsonl')).filter((m) => m.method === 'sampling/createMessage').at(-1);
    assert.deepEqual(req.params, { messages: [{ role: 'user', content: { type: 'text', text: 'q3' } }], maxTokens: 16 });
  });

  it('sampling the server gives up on: the client hears notifications/cancelled under its own id', async () => {
    srv.a.push('sampling/createMessage');
    const r = await c1.callTool({ name: 'a__sample', arguments: { text: 'never' } });
    assert.match(resultText(r), /^timeout: no response from client/);
    await waitFor(() => aborted.length === 1, 3000, 'the SDK aborting the sampling handler');
    const got = readMessages(daemon.path('c1.jsonl'));
    const req = got.filter((m) => m.method === 'sampling/createMessage').at(-1);
    const cancel = got.filter((m) => m.method === 'notifications/cancelled').at(-1);
    assert.deepEqual(cancel?.params, { requestId: req.id, reason: 'timed out' }, JSON.stringify(cancel));
    assert.match(aborted[0], /timed out/);
    // The client did not answer the cancelled request, and the server got nothing for it.
    assert.equal(readMessages(`${c1.captureFile}.sent`).filter((m) => m.id === req.id && !m.method).length, 0);
    const srvId = `srv-${srv.a.length}`;
    assert.equal(received('a', (m) => m.id === srvId && !m.method).length, 0);
  });

  it('elicitation: answered by the calling client; a client without the capability gives -32601', async () => {
    srv.a.push('elicitation/create');
    let r = await c1.callTool({ name: 'a__elicit', arguments: { message: 'your name?' } });
    assert.deepEqual(JSON.parse(resultText(r)).result, { action: 'accept', content: { answer: 'yes from c1' } });
    srv.a.push('elicitation/create');
    r = await c2.callTool({ name: 'a__elicit', arguments: {} });
    assert.equal(JSON.parse(resultText(r)).error?.code, -32601, resultText(r));
    assert.match(JSON.parse(resultText(r)).error.message, /elicitation/);
  });

  it('roots/list: the calling client answers when it declared roots, else the configured roots', async () => {
    srv.a.push('roots/list');
    let r = await c1.callTool({ name: 'a__roots', arguments: {} });
    assert.deepEqual(JSON.parse(resultText(r)), { roots: [{ uri: 'file:///tmp/c1-root', name: 'c1 root' }] });
    srv.a.push('roots/list');
    r = await c3.callTool({ name: 'a__roots', arguments: {} });
    assert.deepEqual(JSON.parse(resultText(r)), { roots: [{ uri: 'file:///tmp/root-a' }] });
  });

  it('notifications/roots/list_changed goes to the servers the client used', async () => {
    // c2 used a (sample, slow, elicit) and b? no: only subscriptions, which are not calls. Never t or u.
    await c2.sendRootsListChanged();
    await waitFor(() => received('a', (m) => m.method === 'notifications/roots/list_changed').length === 1, 3000, 'roots list_changed at a');
    await sleep(300);
    assert.equal(received('t', (m) => m.method === 'notifications/roots/list_changed').length, 0);
    assert.equal(received('u', (m) => m.method === 'notifications/roots/list_changed').length, 0);
  });

  it('tools/list pagination (page_size 5): the SDK pages through and gets every tool exactly once', async () => {
    const tools = await listAll(c3, 'listTools', 'tools');
    const names = tools.map((t) => t.name);
    assert.equal(new Set(names).size, names.length, `duplicates: ${names.join(' ')}`);
    for (let i = 0; i < 12; i++) assert.ok(names.includes(`a__gen_${i}`), `a__gen_${i} missing`);
    const ctl = await mcpmux(daemon.socket, ['tools', '--json']);
    assert.equal(ctl.code, 0, ctl.stderr);
    const all = JSON.parse(ctl.stdout);
    const expected = (Array.isArray(all) ? all : all.tools).map((t) => t.name);
    assert.deepEqual([...names].sort(), [...expected].sort());
    assert.ok(names.length > 4 * PAGE);
  });

  it('a cursor from before a list change is stale: JSON-RPC -32602', async () => {
    const first = await c3.listTools({});
    assert.ok(first.nextCursor, 'first page has a nextCursor');
    const before = events('c3', 'notifications/tools/list_changed').length;
    const r = await c3.callTool({ name: 't__list_changed', arguments: {} });
    assert.equal(resultText(r), 'added added_0');
    await waitFor(() => events('c3', 'notifications/tools/list_changed').length > before, 5000, 'tools/list_changed');
    await assert.rejects(c3.listTools({ cursor: first.nextCursor }), (e) => {
      assert.equal(codeOf(e), -32602, e.message);
      return true;
    });
    await assert.rejects(c3.listTools({ cursor: 'garbage' }), (e) => codeOf(e) === -32602);
    // Listing again from the start works and includes the new tool.
    const names = (await listAll(c3, 'listTools', 'tools')).map((t) => t.name);
    assert.ok(names.includes('t__added_0'));
  });

  it('after a server restarts, its subscriptions and log level are renewed upstream', async () => {
    await c1.subscribeResource({ uri: 'fake://b/r0' });
    await waitFor(() => received('b', (m) => m.method === 'resources/subscribe' && m.params.uri === 'fake://b/r0').length === 1, 3000, 'subscribe at b');
    const inits = () => received('b', (m) => m.method === 'initialize').length;
    assert.equal(inits(), 1);
    const rr = await mcpmux(daemon.socket, ['restart', 'b']);
    assert.equal(rr.code, 0, rr.stderr);
    await waitFor(() => inits() === 2, 5000, 'b re-initialized');
    await daemon.waitReady();
    // Everything b received from its second initialize on.
    const second = () => {
      const all = readMessages(log('b'));
      return all.slice(all.findLastIndex((m) => m.method === 'initialize'));
    };
    await waitFor(() => second().some((m) => m.method === 'logging/setLevel' && m.params.level === 'debug'), 3000, 'setLevel renewed');
    await sleep(500);
    const resub = second().filter((m) => m.method === 'resources/subscribe' && m.params.uri === 'fake://b/r0');
    assert.equal(resub.length, 1, `the restarted server b was not re-subscribed to fake://b/r0 (c1 still holds the subscription); b received after restart: ${second().map((m) => m.method ?? 'response').join(', ')}`);
    const before = events('c1', 'notifications/resources/updated', (p) => p.uri === 'fake://b/r0').length;
    const r = await c3.callTool({ name: 'b__touch', arguments: { uri: 'fake://b/r0' } });
    assert.equal(resultText(r), 'touched fake://b/r0');
    await waitFor(() => events('c1', 'notifications/resources/updated', (p) => p.uri === 'fake://b/r0').length === before + 1, 3000, 'c1 updated after restart');
  });

  it('schema: everything mcpmux sent the three clients is valid MCP 2025-11-25', () => {
    assertReport(validateClientCapture(c1.captureFile), [
      'InitializeResult', 'ListResourcesResult', 'ReadResourceResult', 'ListResourceTemplatesResult', 'ListPromptsResult', 'GetPromptResult',
      'CompleteResult', 'ResourceUpdatedNotification', 'ResourceListChangedNotification', 'PromptListChangedNotification',
      'LoggingMessageNotification', 'ProgressNotification', 'CreateMessageRequest', 'ElicitRequest', 'ListRootsRequest', 'JSONRPCErrorResponse',
      'CancelledNotification',
    ]);
    assertReport(validateClientCapture(c2.captureFile), ['InitializeResult', 'ReadResourceResult', 'ResourceUpdatedNotification', 'CreateMessageRequest']);
    assertReport(validateClientCapture(c3.captureFile), ['InitializeResult', 'ListToolsResult', 'CallToolResult', 'ToolListChangedNotification']);
  });

  it('schema: everything mcpmux sent the fakes is valid MCP 2025-11-25', () => {
    assertReport(validateServerLog(log('a'), srv.a), [
      'InitializeRequest', 'ListResourcesRequest', 'ListResourceTemplatesRequest', 'ListPromptsRequest', 'ReadResourceRequest', 'GetPromptRequest',
      'CompleteRequest', 'SubscribeRequest', 'UnsubscribeRequest', 'SetLevelRequest', 'CancelledNotification', 'CreateMessageResult', 'ElicitResult',
      'ListRootsResult', 'RootsListChangedNotification',
    ]);
    assertReport(validateServerLog(log('b'), srv.b), ['InitializeRequest', 'SubscribeRequest', 'UnsubscribeRequest', 'ReadResourceRequest']);
    assertReport(validateServerLog(log('t'), srv.t), ['InitializeRequest', 'CallToolRequest']);
    assertReport(validateServerLog(log('u'), srv.u), ['InitializeRequest', 'CallToolRequest']);
  });
});

describe('a subscription the server refuses', () => {
  let daemon;
  let c;
  before(async () => {
    daemon = await startDaemon((dir) => ({
      servers: {
        s: fakeServer({ log: `${dir}/s.jsonl`, args: ['--name', 's', '--resources', '1', '--subscribe'] }),
        n: fakeServer({ log: `${dir}/n.jsonl`, args: ['--name', 'n', '--resources', '1'] }),  // no subscribe
      },
    }));
    c = await daemon.connect({ capture: 'c.jsonl', name: 'c' });
  });
  after(async () => {
    await daemon?.stop();
  });

  it('the client gets the server’s error, not an empty success; nothing is left subscribed', async () => {
    await c.subscribeResource({ uri: 'fake://s/r0' });
    await assert.rejects(c.subscribeResource({ uri: 'fake://n/r0' }), (e) => {
      assert.equal(codeOf(e), -32601, e.message);
      assert.match(e.message, /resources\/subscribe/);
      return true;
    });
    // Asked again, the server is asked again (no stale subscription answers for it).
    await assert.rejects(c.subscribeResource({ uri: 'fake://n/r0' }), (e) => codeOf(e) === -32601);
    const asked = readMessages(daemon.path('n.jsonl')).filter((m) => m.method === 'resources/subscribe');
    assert.equal(asked.length, 2);
    const st = JSON.parse((await mcpmux(daemon.socket, ['status', '--json'])).stdout);
    assert.ok(st.servers.every((s) => s.state === 'ready'), JSON.stringify(st.servers));
  });
});
