// protocol.test.mjs — the real @modelcontextprotocol/server-everything (stdio) behind mcpmuxd,
// used by two official SDK clients through tap_bridge.mjs: resources and templates, subscribe
// and updates, prompts with arguments, completion, logging levels, progress of the
// long-running operation, sampling, elicitation and roots. everything itself runs behind a
// second tap_bridge.mjs, so what mcpmux sends it (and what it sends mcpmux) is captured too.
// All captured traffic is validated against the MCP 2025-11-25 schema.
//
// Behaviour of server-everything 2026.8.31 used here (see node_modules/.../dist):
// - resources demo://resource/static/document/<file> and templates
//   demo://resource/dynamic/{text,blob}/{resourceId}; subscribe/unsubscribe log an info message;
//   tool toggle-subscriber-updates sends notifications/resources/updated for every subscribed URI
//   at once and then every 5 s;
// - prompts simple-prompt, args-prompt {city, state?}, completable-prompt {department, name}
//   (name completes from context.arguments.department), resource-prompt;
// - toggle-simulated-logging sends a random-level log message at once and then every 5 s;
// - trigger-long-running-operation {duration s, steps} sends progress per step;
// - get-roots-list, trigger-sampling-request and trigger-elicitation-request are registered only
//   if the client (mcpmux) declared roots / sampling / elicitation in its initialize;
// - 350 ms after notifications/initialized it asks roots/list once, and again on
//   notifications/roots/list_changed.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
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
import { startDaemon, NODE, EVERYTHING_JS, TAP_BRIDGE, resultText, sleep } from './harness.mjs';
import { Report, assertReport, readMessages, validateMessages } from './schema.mjs';
import {
  SERVER_RESULT,
  SERVER_NOTIFICATION,
  SERVER_REQUEST,
  CLIENT_REQUEST,
  CLIENT_NOTIFICATION,
  CLIENT_RESULT,
} from './schema.mjs';

const DOCS = path.join(path.dirname(EVERYTHING_JS), 'docs');
const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

// ------------------------------------------------------------------------------------------
// Schema validation of captures, with schema.mjs's method → definition tables.

/** Requests in `file`: id -> method. */
function requestsIn(file) {
  const m = new Map();
  for (const msg of readMessages(file)) if (typeof msg.method === 'string' && 'id' in msg) m.set(JSON.stringify(msg.id), msg.method);
  return m;
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

describe('server-everything behind mcpmuxd: resources, prompts, completion, logging, progress, sampling, roots', () => {
  let daemon;
  let e1, e2;
  let tools = [];
  const ev = { e1: [], e2: [] };
  const asked = { e1: [], e2: [] };
  // tap_bridge around everything: upstream = what everything wrote, upstream.sent = what mcpmux wrote.
  const upFile = () => daemon.path('upstream.jsonl');
  const fromMux = (pred) => readMessages(`${upFile()}.sent`).filter(pred);
  const events = (tag, method, pred = () => true) => ev[tag].filter((e) => e.method === method && pred(e.params ?? {}));
  const has = (name) => tools.some((t) => t.name === name);

  function setupClient(tag) {
    return (c) => {
      const rec = (n) => ev[tag].push({ method: n.method, params: n.params, at: Date.now() });
      for (const s of [ResourceUpdatedNotificationSchema, ResourceListChangedNotificationSchema, PromptListChangedNotificationSchema,
        ToolListChangedNotificationSchema, LoggingMessageNotificationSchema])
        c.setNotificationHandler(s, rec);
      c.setRequestHandler(CreateMessageRequestSchema, (req) => {
        asked[tag].push(req.method);
        return { model: `${tag}-model`, role: 'assistant', content: { type: 'text', text: `sampled by ${tag}` }, stopReason: 'endTurn' };
      });
      c.setRequestHandler(ElicitRequestSchema, (req) => {
        asked[tag].push(req.method);
        return { action: 'accept', content: { name: `Name ${tag}`, check: true } };
      });
      c.setRequestHandler(ListRootsRequestSchema, (req) => {
        asked[tag].push(req.method);
        return { roots: [{ uri: `file:///tmp/${tag}-root`, name: `${tag} root` }] };
      });
    };
  }

  before(async () => {
    daemon = await startDaemon((dir) => ({
      daemon: { timeout_ms: 30000 },
      servers: {
        everything: {
          command: NODE,
          args: [TAP_BRIDGE, `${dir}/upstream.jsonl`, '--', NODE, EVERYTHING_JS, 'stdio'],
          roots: ['file:///tmp/configured-root'],
        },
      },
    }));
    // everything asks roots/list 350 ms after initialized: let that exchange happen before any
    // client can have a call in flight, so the daemon answers it from the configuration.
    for (let i = 0; i < 100; ++i) {
      const up = readMessages(upFile());
      const ask = up.find((m) => m.method === 'roots/list');
      if (ask && fromMux((m) => !m.method && JSON.stringify(m.id) === JSON.stringify(ask.id)).length) break;
      await sleep(50);
    }
    const caps = { sampling: {}, elicitation: {}, roots: { listChanged: true } };
    e1 = await daemon.connect({ capture: 'e1.jsonl', name: 'e1', capabilities: caps, setup: setupClient('e1') });
    e2 = await daemon.connect({ capture: 'e2.jsonl', name: 'e2', capabilities: caps, setup: setupClient('e2') });
    ({ tools } = await e1.listTools());
  });

  after(async () => {
    // Stop everything's 5-second timers if a test left them running.
    await daemon?.stop();
  });

  it('initialize: resources (subscribe), prompts, completions and logging are offered downstream', () => {
    const caps = e1.getServerCapabilities();
    assert.equal(caps.resources?.subscribe, true, JSON.stringify(caps));
    assert.ok(caps.prompts && caps.completions && caps.logging && caps.tools, JSON.stringify(caps));
  });

  it('resources/list and resources/read: the static documents', async () => {
    const { resources } = await e1.listResources();
    const uris = resources.map((r) => r.uri);
    assert.ok(uris.includes('demo://resource/static/document/instructions.md'), uris.join(' '));
    const r = await e1.readResource({ uri: 'demo://resource/static/document/features.md' });
    assert.equal(r.contents.length, 1);
    assert.equal(r.contents[0].text, readFileSync(path.join(DOCS, 'features.md'), 'utf8'));
    assert.equal(r.contents[0].mimeType, 'text/markdown');
  });

  it('resources/templates/list and reads through the templates (text and blob)', async () => {
    const { resourceTemplates } = await e1.listResourceTemplates();
    const t = resourceTemplates.map((x) => x.uriTemplate).sort();
    assert.deepEqual(t, ['demo://resource/dynamic/blob/{resourceId}', 'demo://resource/dynamic/text/{resourceId}']);
    const text = await e2.readResource({ uri: 'demo://resource/dynamic/text/3' });
    assert.match(text.contents[0].text, /^Resource 3: This is a plaintext resource/);
    const blob = await e2.readResource({ uri: 'demo://resource/dynamic/blob/4' });
    assert.match(Buffer.from(blob.contents[0].blob, 'base64').toString('utf8'), /^Resource 4: This is a base64 blob/);
  });

  it('prompts: listed as everything__*, prompts/get with arguments', async () => {
    const { prompts } = await e1.listPrompts();
    const names = prompts.map((p) => p.name).sort();
    assert.deepEqual(names, ['everything__args-prompt', 'everything__completable-prompt', 'everything__resource-prompt', 'everything__simple-prompt']);
    const args = prompts.find((p) => p.name === 'everything__args-prompt').arguments;
    assert.deepEqual(args.map((a) => [a.name, !!a.required]), [['city', true], ['state', false]]);
    const g = await e1.getPrompt({ name: 'everything__args-prompt', arguments: { city: 'Paris', state: 'Texas' } });
    assert.equal(g.messages[0].content.text, "What's weather in Paris, Texas?");
    const res = await e2.getPrompt({ name: 'everything__resource-prompt', arguments: { resourceType: 'Text', resourceId: '2' } });
    assert.equal(res.messages[1].content.type, 'resource');
    assert.equal(res.messages[1].content.resource.uri, 'demo://resource/dynamic/text/2');
  });

  it('completion/complete: prompt arguments (with context) and template variables', async () => {
    const values = async (ref, argument, context) => (await e1.complete({ ref, argument, ...(context ? { context } : {}) })).completion.values;
    const prompt = { type: 'ref/prompt', name: 'everything__completable-prompt' };
    assert.deepEqual(await values(prompt, { name: 'department', value: 'E' }), ['Engineering']);
    assert.deepEqual(await values(prompt, { name: 'name', value: '' }, { arguments: { department: 'Sales' } }), ['David', 'Eve', 'Frank']);
    assert.deepEqual(await values({ type: 'ref/resource', uri: 'demo://resource/dynamic/text/{resourceId}' }, { name: 'resourceId', value: '7' }), ['7']);
    // The upstream saw its own prompt name.
    assert.ok(fromMux((m) => m.method === 'completion/complete' && m.params.ref.name === 'completable-prompt').length >= 2);
  });

  it('logging/setLevel per client: everything’s info message reaches the debug client only, logger = server name', async () => {
    await e1.setLoggingLevel('debug');
    await e2.setLoggingLevel('error');
    await waitFor(() => fromMux((m) => m.method === 'logging/setLevel' && m.params.level === 'debug').length > 0, 3000, 'setLevel debug upstream');
    // Subscribing makes everything log "Received Subscribe Resource request …" at level info.
    await e1.subscribeResource({ uri: 'demo://resource/static/document/features.md' });
    const msg = await waitFor(() => events('e1', 'notifications/message', (p) => /Subscribe Resource request/.test(p.data))[0], 3000, 'e1 log message');
    assert.equal(msg.params.level, 'info');
    assert.equal(msg.params.logger, 'everything');
    await sleep(400);
    assert.equal(events('e2', 'notifications/message', (p) => /Subscribe/.test(String(p.data))).length, 0, 'e2 (level error) got an info message');
  });

  it('toggle-simulated-logging: e2 only gets messages at error or above, e1 gets them all', async () => {
    const r = await e2.callTool({ name: 'everything__toggle-simulated-logging', arguments: {} });
    assert.match(resultText(r), /Started simulated/);
    await waitFor(() => events('e1', 'notifications/message', (p) => /-level message|level-message/.test(p.data)).length >= 2, 12000, 'simulated log messages at e1');
    const off = await e2.callTool({ name: 'everything__toggle-simulated-logging', arguments: {} });
    assert.match(resultText(off), /Stopped simulated/);
    await sleep(200);
    const at1 = events('e1', 'notifications/message').map((e) => JSON.stringify(e.params));
    for (const e of events('e2', 'notifications/message')) {
      assert.ok(LEVELS.indexOf(e.params.level) >= LEVELS.indexOf('error'), `e2 got level ${e.params.level}`);
      assert.ok(at1.includes(JSON.stringify(e.params)), 'e2 got a message e1 did not');
    }
  });

  it('resources/updated reaches only the subscriber (toggle-subscriber-updates)', async () => {
    const doc1 = 'demo://resource/static/document/features.md'; // e1 subscribed above
    const doc2 = 'demo://resource/static/document/structure.md';
    const r = await e2.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
    assert.match(resultText(r), /Started simulated resource updated/);
    await waitFor(() => events('e1', 'notifications/resources/updated', (p) => p.uri === doc1).length >= 1, 3000, 'e1 update for its subscription');
    await e2.subscribeResource({ uri: doc2 });
    // The next round (every 5 s) updates both URIs: each client gets its own only.
    await waitFor(() => events('e2', 'notifications/resources/updated', (p) => p.uri === doc2).length >= 1, 8000, 'e2 update');
    await waitFor(() => events('e1', 'notifications/resources/updated', (p) => p.uri === doc1).length >= 2, 3000, 'second e1 update');
    await e2.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
    assert.equal(events('e1', 'notifications/resources/updated', (p) => p.uri === doc2).length, 0, 'e1 got an update for e2’s subscription');
    assert.equal(events('e2', 'notifications/resources/updated', (p) => p.uri === doc1).length, 0, 'e2 got an update for e1’s subscription');
    await e1.unsubscribeResource({ uri: doc1 });
    await e2.unsubscribeResource({ uri: doc2 });
    await waitFor(() => fromMux((m) => m.method === 'resources/unsubscribe').length === 2, 3000, 'two unsubscribes upstream');
    assert.equal(fromMux((m) => m.method === 'resources/subscribe').length, 2);
  });

  it('trigger-long-running-operation: progress reaches only its caller (two clients at once)', async () => {
    const p1 = [];
    const p2 = [];
    const [r1, r2] = await Promise.all([
      e1.callTool({ name: 'everything__trigger-long-running-operation', arguments: { duration: 1, steps: 4 } }, undefined, { onprogress: (p) => p1.push(p) }),
      e2.callTool({ name: 'everything__trigger-long-running-operation', arguments: { duration: 1, steps: 5 } }, undefined, { onprogress: (p) => p2.push(p) }),
    ]);
    assert.match(resultText(r1), /Steps: 4\./);
    assert.match(resultText(r2), /Steps: 5\./);
    const sent1 = readMessages(e1.captureFile).filter((m) => m.method === 'notifications/progress');
    const sent2 = readMessages(e2.captureFile).filter((m) => m.method === 'notifications/progress');
    assert.deepEqual(sent1.map((m) => [m.params.progress, m.params.total]), [[1, 4], [2, 4], [3, 4], [4, 4]]);
    assert.deepEqual(sent2.map((m) => [m.params.progress, m.params.total]), [[1, 5], [2, 5], [3, 5], [4, 5], [5, 5]]);
    // Each under the token its own client chose.
    const tok1 = readMessages(`${e1.captureFile}.sent`).filter((m) => m.params?.name === 'everything__trigger-long-running-operation').at(-1).params._meta.progressToken;
    const tok2 = readMessages(`${e2.captureFile}.sent`).filter((m) => m.params?.name === 'everything__trigger-long-running-operation').at(-1).params._meta.progressToken;
    assert.ok(sent1.every((m) => m.params.progressToken === tok1));
    assert.ok(sent2.every((m) => m.params.progressToken === tok2));
    assert.ok(p1.length >= 3 && p2.length >= 4, `the SDK saw ${p1.length} and ${p2.length} progress notifications`);
    // Upstream, the two calls carried different tokens.
    const upTokens = fromMux((m) => m.method === 'tools/call' && m.params.name === 'trigger-long-running-operation').map((m) => JSON.stringify(m.params._meta?.progressToken));
    assert.equal(new Set(upTokens).size, upTokens.length, `upstream progress tokens collide: ${upTokens.join(' ')}`);
  });

  it('mcpmux declares sampling and elicitation upstream, so everything offers its sampling/elicitation tools', () => {
    const init = fromMux((m) => m.method === 'initialize')[0];
    const names = tools.map((t) => t.name);
    assert.ok(
      has('everything__trigger-sampling-request') && has('everything__trigger-elicitation-request'),
      `everything registers trigger-sampling-request / trigger-elicitation-request only for a client that declared ` +
        `sampling / elicitation; mcpmux's initialize declared ${JSON.stringify(init.params.capabilities)}; tools: ${names.join(', ')}`,
    );
  });

  it('sampling: trigger-sampling-request is answered by the calling client only', async (t) => {
    if (!has('everything__trigger-sampling-request')) return t.skip('everything did not register trigger-sampling-request (see the test above)');
    let r = await e1.callTool({ name: 'everything__trigger-sampling-request', arguments: { prompt: 'hello', maxTokens: 10 } });
    assert.match(resultText(r), /sampled by e1/);
    assert.deepEqual([asked.e1.filter((m) => m === 'sampling/createMessage').length, asked.e2.filter((m) => m === 'sampling/createMessage').length], [1, 0]);
    r = await e2.callTool({ name: 'everything__trigger-sampling-request', arguments: { prompt: 'hello again', maxTokens: 10 } });
    assert.match(resultText(r), /sampled by e2/);
    assert.deepEqual([asked.e1.filter((m) => m === 'sampling/createMessage').length, asked.e2.filter((m) => m === 'sampling/createMessage').length], [1, 1]);
  });

  it('elicitation: trigger-elicitation-request is answered by the calling client only', async (t) => {
    if (!has('everything__trigger-elicitation-request')) return t.skip('everything did not register trigger-elicitation-request (see above)');
    const r = await e2.callTool({ name: 'everything__trigger-elicitation-request', arguments: {} });
    assert.match(resultText(r), /- Name: Name e2/);
    assert.equal(asked.e1.filter((m) => m === 'elicitation/create').length, 0);
    assert.equal(asked.e2.filter((m) => m === 'elicitation/create').length, 1);
  });

  it('roots: everything’s startup roots/list got the configured roots (no client call in flight)', async () => {
    assert.ok(has('everything__get-roots-list'), 'get-roots-list is registered (mcpmux declares roots upstream)');
    // everything asked once, 350 ms after initialized; mcpmux answered with the configured roots.
    const rootsAsk = readMessages(upFile()).find((m) => m.method === 'roots/list');
    assert.ok(rootsAsk, 'everything never sent roots/list');
    const answer = fromMux((m) => !m.method && JSON.stringify(m.id) === JSON.stringify(rootsAsk.id))[0];
    assert.deepEqual(answer.result, { roots: [{ uri: 'file:///tmp/configured-root' }] });
    const r = await e1.callTool({ name: 'everything__get-roots-list', arguments: {} });
    assert.match(resultText(r), /file:\/\/\/tmp\/configured-root/);
    assert.equal(asked.e1.filter((m) => m === 'roots/list').length + asked.e2.filter((m) => m === 'roots/list').length, 0);
  });

  it('roots: list_changed from a client with a call in flight → everything asks again and that client answers', async () => {
    const call = e1.callTool({ name: 'everything__trigger-long-running-operation', arguments: { duration: 1.5, steps: 3 } }, undefined, { onprogress: () => {} });
    await waitFor(() => fromMux((m) => m.method === 'tools/call' && m.params.name === 'trigger-long-running-operation').length === 3, 3000, 'long call upstream');
    await e1.sendRootsListChanged();
    await waitFor(() => asked.e1.includes('roots/list'), 3000, 'e1 asked for roots');
    await call;
    assert.equal(asked.e2.filter((m) => m === 'roots/list').length, 0, 'e2 was asked for roots');
    assert.equal(fromMux((m) => m.method === 'notifications/roots/list_changed').length, 1);
    const r = await e2.callTool({ name: 'everything__get-roots-list', arguments: {} });
    assert.match(resultText(r), /file:\/\/\/tmp\/e1-root/);
  });

  it('schema: everything mcpmux sent both clients is valid MCP 2025-11-25', () => {
    const validate = (c) =>
      validateMessages(c.captureFile, {
        requests: SERVER_REQUEST,
        notifications: SERVER_NOTIFICATION,
        results: SERVER_RESULT,
        asked: requestsIn(`${c.captureFile}.sent`),
        who: `downstream ${path.basename(c.captureFile)}`,
      });
    assertReport(validate(e1), [
      'InitializeResult', 'ListToolsResult', 'CallToolResult', 'ListResourcesResult', 'ReadResourceResult', 'ListResourceTemplatesResult',
      'ListPromptsResult', 'GetPromptResult', 'CompleteResult', 'LoggingMessageNotification', 'ResourceUpdatedNotification',
      'ProgressNotification', 'ListRootsRequest', 'EmptyResult',
    ]);
    assertReport(validate(e2), [
      'InitializeResult', 'CallToolResult', 'ReadResourceResult', 'GetPromptResult', 'ResourceUpdatedNotification', 'ProgressNotification', 'EmptyResult',
    ]);
  });

  it('schema: everything mcpmux sent server-everything is valid MCP 2025-11-25', () => {
    assertReport(
      validateMessages(`${upFile()}.sent`, {
        requests: CLIENT_REQUEST,
        notifications: CLIENT_NOTIFICATION,
        results: CLIENT_RESULT,
        asked: requestsIn(upFile()),
        who: 'upstream (mcpmux -> everything)',
      }),
      ['InitializeRequest', 'InitializedNotification', 'ListToolsRequest', 'ListResourcesRequest', 'ListResourceTemplatesRequest', 'ListPromptsRequest',
        'CallToolRequest', 'ReadResourceRequest', 'GetPromptRequest', 'CompleteRequest', 'SetLevelRequest', 'SubscribeRequest', 'UnsubscribeRequest',
        'ListRootsResult', 'RootsListChangedNotification'],
    );
  });
});
