#!/usr/bin/env node
// Conformance target for the tasks extension (io.modelcontextprotocol/tasks, SEP-2663) of the
// 2026-07-28 ("modern") protocol: a small hand-rolled MCP server — stateless, no initialize,
// server/discover, a `_meta` envelope on every request, `resultType` on every result — with the
// fixtures the ten `tasks-*` server scenarios of @modelcontextprotocol/conformance need:
//
//   tasks-lifecycle, tasks-capability-negotiation, tasks-wire-fields, tasks-request-state-removal,
//   tasks-mrtr-input, tasks-request-headers, tasks-dispatch-and-envelope,
//   tasks-status-notifications (skipped by the 0.2.0-alpha.12 suite; served anyway),
//   tasks-required-task-error, tasks-mrtr-composition.
//
// Tools (task support in brackets: whether a client that declared the extension gets a task):
//   greet [forbidden]              sync only: "Hello, {name}!"; a legacy `task` param is ignored.
//   slow_compute [optional]        sleeps `seconds` then answers; a task when the client declared
//                                  the extension (even for seconds: 0), else a plain sync result.
//                                  tasks/cancel while it sleeps settles it to `cancelled`.
//   failing_job [required]         after ~1 s: completed with result.isError:true (a tool error).
//   protocol_error_job [optional]  after ~0.2 s: failed with error {code:-32603} (a protocol error);
//                                  called without the extension it answers that JSON-RPC error.
//   confirm_delete [required]      one elicitation/create inputRequest ("confirm"), then completes.
//   multi_input [required]         two inputRequests at once ("name", "confirm"); may be answered
//                                  one at a time (the answered key disappears from inputRequests).
//   test_tool_with_task [required] MRTR first (InputRequiredResult asking "user_name"), then on the
//                                  retry a task whose result says "Hello, {user_name}!".
// A [required] tool called without the extension answers -32021 with
// data.requiredCapabilities.extensions["io.modelcontextprotocol/tasks"] = {}.
//
// Task methods (only for a request whose _meta clientCapabilities declare the extension, else
// -32021): tasks/get → DetailedTask with resultType "complete"; tasks/update → empty ack (answers
// for keys not outstanding are ignored); tasks/cancel → empty ack (idempotent on terminal tasks);
// unknown taskId → -32602; tasks/result and tasks/list (removed in v2) → -32601.
// Status notifications: `subscriptions/listen` with notifications.taskIds = [...] (and the
// extension declared) acknowledges the known ids, sends each one's current state at once, then a
// `notifications/tasks` (params = the full DetailedTask) on every change, every one stamped with
// _meta["io.modelcontextprotocol/subscriptionId"] = the listen request's id.
//
// Transports:
//   default      stdio, newline-delimited JSON-RPC (how mcpmuxd runs it); logs go to stderr. A
//                listen is a request that stays open: the ack notification first, then the
//                notifications, until `notifications/cancelled` names its id (nothing follows).
//   --http PORT  the same server on POST http://127.0.0.1:PORT/mcp under the 2026-07-28 Streamable
//                HTTP rules (JSON answers; an SSE stream for a listen; MCP-Protocol-Version,
//                Mcp-Method and Mcp-Name checked against the body: -32020 with HTTP 400), so the
//                suite can be run against it directly. PORT 0 picks a free port (printed on stderr).
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import readline from 'node:readline';

const PROTOCOL_VERSION = '2026-07-28';
const TASKS = 'io.modelcontextprotocol/tasks';
const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
const META_CAPS = 'io.modelcontextprotocol/clientCapabilities';
const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
const META_SUBSCRIPTION = 'io.modelcontextprotocol/subscriptionId';
const SERVER_INFO = { name: 'mcpmux-conformance-target-tasks', version: '1.0.0' };

const TTL_MS = 60 * 60 * 1000; // a task stays readable for an hour after its creation
const POLL_INTERVAL_MS = 250;

// JSON-RPC error codes used here (-32020..-32022 are the 2026-07-28 additions).
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
const HEADER_MISMATCH = -32020;
const MISSING_CAPABILITY = -32021;
const UNSUPPORTED_VERSION = -32022;

class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
  toJSON() {
    return { code: this.code, message: this.message, ...(this.data !== undefined && { data: this.data }) };
  }
}

const log = (...args) => console.error('target-tasks:', ...args);
const text = (t) => ({ type: 'text', text: t });
const now = () => new Date().toISOString();
const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const missingTasksCapability = (what) =>
  new RpcError(MISSING_CAPABILITY, `Missing required client capability: ${what} needs the ${TASKS} extension`, {
    requiredCapabilities: { extensions: { [TASKS]: {} } },
  });
const elicit = (message, properties) => ({
  method: 'elicitation/create',
  params: { mode: 'form', message, requestedSchema: { type: 'object', properties, required: Object.keys(properties) } },
});

// ---------------------------------------------------------------------------------------- tools
// run(args, io, params) does the work and returns a CallToolResult, or throws an RpcError (a
// protocol error). io.sleep(ms) rejects when the task is cancelled; io.ask(inputRequests) parks
// the task in input_required until every key is answered and resolves to {key: response}.
// preflight(args, params), when present, runs before any task exists: returning an
// InputRequiredResult answers the tools/call with it (an MRTR round) instead.
const TOOLS = {
  greet: {
    taskSupport: 'forbidden',
    description: 'Sync only: greets {name}',
    inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    run: async ({ name }) => ({ content: [text(`Hello, ${name}!`)] }),
  },
  slow_compute: {
    taskSupport: 'optional',
    description: 'Task-supporting: sleeps `seconds` seconds, then answers',
    inputSchema: { type: 'object', properties: { seconds: { type: 'number', minimum: 0 }, label: { type: 'string' } } },
    run: async ({ seconds = 1, label = '' }, io) => {
      await io.sleep(Number(seconds) * 1000);
      return { content: [text(`slow_compute${label ? ` (${label})` : ''} finished after ${seconds}s`)], structuredContent: { seconds, label } };
    },
  },
  failing_job: {
    taskSupport: 'required',
    description: 'Task-required: a tool execution error (isError) after about a second',
    inputSchema: { type: 'object', properties: {} },
    run: async (_args, io) => {
      await io.sleep(1000);
      return { isError: true, content: [text('failing_job: the job failed (a tool execution error)')] };
    },
  },
  protocol_error_job: {
    taskSupport: 'optional',
    description: 'Task-supporting: fails with a JSON-RPC internal error (a protocol error)',
    inputSchema: { type: 'object', properties: {} },
    run: async (_args, io) => {
      await io.sleep(200);
      throw new RpcError(INTERNAL_ERROR, 'Internal error: protocol_error_job crashed', { reason: 'simulated panic' });
    },
  },
  confirm_delete: {
    taskSupport: 'required',
    description: 'Task-required: asks for a confirmation (elicitation) before "deleting" {filename}',
    inputSchema: { type: 'object', properties: { filename: { type: 'string' } } },
    run: async ({ filename = 'file' }, io) => {
      const { confirm } = await io.ask({ confirm: elicit(`Delete ${filename}?`, { confirm: { type: 'boolean' } }) });
      const yes = confirm?.action === 'accept' && confirm.content?.confirm === true;
      return { content: [text(yes ? `Deleted ${filename}` : `Kept ${filename}`)] };
    },
  },
  multi_input: {
    taskSupport: 'required',
    description: 'Task-required: asks two questions at once (may be answered one at a time)',
    inputSchema: { type: 'object', properties: {} },
    run: async (_args, io) => {
      const answers = await io.ask({
        name: elicit('What is your name?', { name: { type: 'string' } }),
        confirm: elicit('Proceed?', { confirm: { type: 'boolean' } }),
      });
      return { content: [text(`multi_input: name=${answers.name?.content?.name}, confirm=${answers.confirm?.content?.confirm}`)] };
    },
  },
  test_tool_with_task: {
    taskSupport: 'required',
    description: 'Task-required: an MRTR round asking user_name, then a task that greets the user',
    inputSchema: { type: 'object', properties: {} },
    preflight: (_args, params) => {
      const answer = params.inputResponses?.user_name;
      if (answer?.action === 'accept' && typeof answer.content?.name === 'string') return undefined;
      return { resultType: 'input_required', inputRequests: { user_name: elicit('What is your name?', { name: { type: 'string' } }) } };
    },
    run: async (_args, io, params) => {
      await io.sleep(200);
      return { content: [text(`Hello, ${params.inputResponses.user_name.content.name}!`)] };
    },
  },
};

// ---------------------------------------------------------------------------------------- tasks
const tasks = new Map(); // taskId -> task record (internal fields are not on the wire)
const subscribers = new Set(); // open listen streams: { id, taskIds: Set, send(message) }
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

// The wire view of a task: the Task fields plus the status's own field (DetailedTask).
function detailed(task) {
  const view = {
    taskId: task.taskId,
    status: task.status,
    ...(task.statusMessage !== undefined && { statusMessage: task.statusMessage }),
    createdAt: task.createdAt,
    lastUpdatedAt: task.lastUpdatedAt,
    ttlMs: TTL_MS,
    pollIntervalMs: POLL_INTERVAL_MS,
  };
  if (task.status === 'input_required') view.inputRequests = { ...task.inputRequests };
  if (task.status === 'completed') view.result = task.result;
  if (task.status === 'failed') view.error = task.error;
  return view;
}

function notifyTask(task) {
  for (const sub of subscribers) if (sub.taskIds.has(task.taskId)) sub.send(taskNotification(task, sub.id));
}
const taskNotification = (task, subscriptionId) => ({
  jsonrpc: '2.0',
  method: 'notifications/tasks',
  params: { ...detailed(task), _meta: { [META_SUBSCRIPTION]: subscriptionId } },
});

// Moves a task on (never out of a terminal status) and tells the listeners.
function transition(task, status, fields = {}) {
  if (TERMINAL.has(task.status)) return false;
  Object.assign(task, { status, statusMessage: undefined, ...fields, lastUpdatedAt: now() });
  if (status !== 'input_required') task.inputRequests = {};
  notifyTask(task);
  return true;
}

// Creates the task (readable by tasks/get before the CreateTaskResult leaves) and starts the tool.
function startTask(tool, args, params) {
  const created = now();
  const task = {
    taskId: randomUUID(),
    status: 'working',
    statusMessage: 'The operation is in progress.',
    createdAt: created,
    lastUpdatedAt: created,
    inputRequests: {},
    answers: {},
    abort: new AbortController(),
  };
  tasks.set(task.taskId, task);
  setTimeout(() => tasks.delete(task.taskId), TTL_MS).unref();
  const io = {
    sleep: (ms) => sleep(ms, task.abort.signal),
    ask: (inputRequests) =>
      new Promise((resolve, reject) => {
        task.answers = {};
        task.resumeWith = resolve;
        task.abort.signal.addEventListener('abort', () => reject(new Error('cancelled')), { once: true });
        // A little "work" before the input is needed, so a poll can see `working` first.
        setTimeout(() => transition(task, 'input_required', { inputRequests, statusMessage: 'Waiting for client input.' }), 50);
      }),
  };
  tool.run(args, io, params).then(
    (result) => transition(task, 'completed', { result, statusMessage: result.isError ? 'The tool reported an error.' : 'Done.' }),
    (e) => {
      if (task.abort.signal.aborted) return; // cancelled: the status is already `cancelled`
      const error = e instanceof RpcError ? e.toJSON() : { code: INTERNAL_ERROR, message: String(e?.message ?? e) };
      transition(task, 'failed', { error, statusMessage: error.message });
    },
  );
  return task;
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('cancelled'));
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), reject(new Error('cancelled'))), { once: true });
  });
}

function knownTask(params) {
  const task = typeof params.taskId === 'string' ? tasks.get(params.taskId) : undefined;
  if (!task) throw new RpcError(INVALID_PARAMS, `Invalid params: unknown taskId ${JSON.stringify(params.taskId)}`);
  return task;
}

// tasks/update: record the answers to outstanding keys (others are ignored); the task stays
// input_required until every key is answered, then resumes.
function updateTask(task, inputResponses) {
  if (task.status !== 'input_required' || !isObject(inputResponses)) return;
  let answered = false;
  for (const [key, response] of Object.entries(inputResponses)) {
    if (!(key in task.inputRequests)) continue;
    task.answers[key] = response;
    delete task.inputRequests[key];
    answered = true;
  }
  if (!answered) return;
  if (Object.keys(task.inputRequests).length > 0) {
    task.lastUpdatedAt = now();
    notifyTask(task);
  } else {
    transition(task, 'working', { statusMessage: 'Input received; resuming.' });
    task.resumeWith(task.answers);
  }
}

function cancelTask(task) {
  if (transition(task, 'cancelled', { statusMessage: 'Cancelled at the client\'s request.' })) task.abort.abort();
}

// ----------------------------------------------------------------------------------- dispatcher
const declaresTasks = (params) => isObject(params._meta?.[META_CAPS]?.extensions?.[TASKS]);
const complete = (result) => ({ resultType: 'complete', ...result, _meta: { [META_SERVER_INFO]: SERVER_INFO } });

// Checks the modern envelope every request carries in params._meta.
function checkEnvelope(msg) {
  if (msg.method === 'initialize')
    throw new RpcError(UNSUPPORTED_VERSION, 'Unsupported protocol version: this server speaks 2026-07-28 only (no initialize)', {
      supported: [PROTOCOL_VERSION],
      requested: String(msg.params?.protocolVersion ?? 'unknown'),
    });
  const meta = msg.params?._meta;
  const missing = [META_VERSION, META_CAPS].filter((k) => meta?.[k] === undefined);
  if (missing.length) throw new RpcError(INVALID_PARAMS, `Invalid params: missing _meta keys: ${missing.join(', ')}`);
  if (meta[META_VERSION] !== PROTOCOL_VERSION)
    throw new RpcError(UNSUPPORTED_VERSION, 'Unsupported protocol version', { supported: [PROTOCOL_VERSION], requested: String(meta[META_VERSION]) });
}

// Answers one request (anything but subscriptions/listen): the result, or throws an RpcError.
async function dispatch(msg) {
  checkEnvelope(msg);
  const params = msg.params;
  switch (msg.method) {
    case 'server/discover':
      return complete({
        supportedVersions: [PROTOCOL_VERSION],
        capabilities: { tools: {}, extensions: { [TASKS]: {} } },
        instructions: 'Conformance target for the io.modelcontextprotocol/tasks extension.',
        ttlMs: 0,
        cacheScope: 'public',
      });
    case 'ping':
      return complete({});
    case 'tools/list':
      return complete({
        tools: Object.entries(TOOLS).map(([name, t]) => ({ name, description: `${t.description} [task support: ${t.taskSupport}]`, inputSchema: t.inputSchema })),
        ttlMs: 0,
        cacheScope: 'public',
      });
    case 'tools/call':
      return callTool(params);
    case 'tasks/get':
    case 'tasks/update':
    case 'tasks/cancel': {
      if (!declaresTasks(params)) throw missingTasksCapability(msg.method);
      const task = knownTask(params);
      if (msg.method === 'tasks/get') return complete(detailed(task));
      if (msg.method === 'tasks/update') updateTask(task, params.inputResponses);
      else cancelTask(task);
      return complete({});
    }
    default: // includes tasks/result and tasks/list, removed in v2
      throw new RpcError(METHOD_NOT_FOUND, `Method not found: ${msg.method}`);
  }
}

async function callTool(params) {
  const tool = Object.hasOwn(TOOLS, params.name) ? TOOLS[params.name] : undefined;
  if (!tool) throw new RpcError(INVALID_PARAMS, `Invalid params: unknown tool ${JSON.stringify(params.name)}`);
  const args = isObject(params.arguments) ? params.arguments : {};
  const asTask = tool.taskSupport !== 'forbidden' && declaresTasks(params);
  if (tool.taskSupport === 'required' && !asTask) throw missingTasksCapability(`tool ${params.name}`);
  const inputRequired = tool.preflight?.(args, params);
  if (inputRequired) return { ...inputRequired, _meta: { [META_SERVER_INFO]: SERVER_INFO } };
  if (!asTask) return complete(await tool.run(args, { sleep: (ms) => sleep(ms) }, params));
  // CreateTaskResult: the Task fields, flat, with resultType "task".
  const { taskId, status, statusMessage, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs } = detailed(startTask(tool, args, params));
  return { resultType: 'task', taskId, status, statusMessage, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs, _meta: { [META_SERVER_INFO]: SERVER_INFO } };
}

// subscriptions/listen: registers the subscriber; returns the acknowledgement notification. Only
// task status notifications are offered (the tool list never changes), for known task ids.
function openListen(msg, send) {
  checkEnvelope(msg);
  const filter = msg.params.notifications;
  if (!isObject(filter)) throw new RpcError(INVALID_PARAMS, 'Invalid params: subscriptions/listen needs a "notifications" object');
  const honored = {};
  let taskIds = new Set();
  if (filter.taskIds !== undefined) {
    if (!Array.isArray(filter.taskIds)) throw new RpcError(INVALID_PARAMS, 'Invalid params: notifications.taskIds must be an array');
    if (!declaresTasks(msg.params)) throw missingTasksCapability('notifications.taskIds');
    taskIds = new Set(filter.taskIds.filter((id) => tasks.has(id)));
    honored.taskIds = [...taskIds];
  }
  const sub = { id: msg.id, taskIds, send };
  subscribers.add(sub);
  const ack = { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: honored, _meta: { [META_SUBSCRIPTION]: msg.id } } };
  // After the ack: each subscribed task's current state, so a change before the listen is not lost.
  const snapshots = () => [...taskIds].map((id) => tasks.get(id)).filter(Boolean).map((task) => taskNotification(task, msg.id));
  return { sub, ack, snapshots };
}

const errorResponse = (id, e) => ({
  jsonrpc: '2.0',
  id: id ?? null,
  error: e instanceof RpcError ? e.toJSON() : { code: INTERNAL_ERROR, message: `Internal error: ${e?.message ?? e}` },
});

function classify(msg) {
  if (!isObject(msg) || msg.jsonrpc !== '2.0') return 'invalid';
  if (typeof msg.method !== 'string') return 'result' in msg || 'error' in msg ? 'response' : 'invalid';
  if (msg.id === undefined) return 'notification';
  if (msg.params !== undefined && !isObject(msg.params)) return 'invalid';
  return 'request';
}

// ---------------------------------------------------------------------------------------- stdio
function serveStdio() {
  const write = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
  const listens = new Map(); // listen request id (as JSON) -> subscriber
  const cancelled = new Set(); // ids (as JSON) of in-flight requests the client cancelled
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  rl.on('line', (line) => {
    if (!line.trim()) return;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      return write(errorResponse(null, new RpcError(PARSE_ERROR, 'Parse error')));
    }
    const kind = classify(msg);
    if (kind === 'response') return; // this server never sends requests
    if (kind === 'invalid') return write(errorResponse(msg?.id, new RpcError(INVALID_REQUEST, 'Invalid Request')));
    if (kind === 'notification') {
      if (msg.method !== 'notifications/cancelled') return;
      const key = JSON.stringify(msg.params?.requestId);
      const sub = listens.get(key);
      if (sub) { // the listen ends; nothing more is sent for it (no response either)
        subscribers.delete(sub);
        listens.delete(key);
      } else cancelled.add(key);
      return;
    }
    const key = JSON.stringify(msg.id);
    if (msg.method === 'subscriptions/listen') {
      try {
        const { sub, ack, snapshots } = openListen(msg, write);
        listens.set(key, sub);
        write(ack);
        snapshots().forEach(write);
      } catch (e) {
        write(errorResponse(msg.id, e));
      }
      return;
    }
    cancelled.delete(key);
    dispatch(msg).then(
      (result) => cancelled.delete(key) || write({ jsonrpc: '2.0', id: msg.id, result }),
      (e) => cancelled.delete(key) || write(errorResponse(msg.id, e)),
    );
  });
  rl.on('close', () => process.exit(0));
  log('serving on stdio');
}

// ----------------------------------------------------------------------------------------- HTTP
// The name-shaped body field Mcp-Name mirrors (SEP-2243; SEP-2663 adds taskId for tasks/*).
function namedTarget(method, params) {
  if (method === 'tools/call' || method === 'prompts/get') return params?.name;
  if (method === 'resources/read') return params?.uri;
  if (method === 'tasks/get' || method === 'tasks/update' || method === 'tasks/cancel') return params?.taskId;
  return undefined;
}

// A header value without surrounding whitespace, `=?base64?...?=` decoded (SEP-2243).
function headerValue(req, name) {
  const raw = req.headers[name];
  if (raw === undefined) return undefined;
  const v = String(raw).trim();
  const b64 = /^=\?base64\?(.*)\?=$/i.exec(v);
  return b64 ? Buffer.from(b64[1], 'base64').toString('utf8') : v;
}

function checkHeaders(req, msg) {
  const mismatch = (why) => new RpcError(HEADER_MISMATCH, `Header mismatch: ${why}`);
  const version = headerValue(req, 'mcp-protocol-version');
  if (version === undefined) throw mismatch('missing MCP-Protocol-Version header');
  const method = headerValue(req, 'mcp-method');
  if (method === undefined) throw mismatch('missing Mcp-Method header');
  if (method !== msg.method) throw mismatch(`Mcp-Method ${JSON.stringify(method)} does not match the body's method ${JSON.stringify(msg.method)}`);
  const metaVersion = msg.params?._meta?.[META_VERSION];
  if (metaVersion !== undefined && version !== metaVersion) throw mismatch('MCP-Protocol-Version does not match _meta protocolVersion');
  const target = namedTarget(msg.method, msg.params);
  if (typeof target === 'string') {
    const name = headerValue(req, 'mcp-name');
    if (name === undefined) throw mismatch('missing Mcp-Name header');
    if (name !== target) throw mismatch(`Mcp-Name ${JSON.stringify(name)} does not match the body (${JSON.stringify(target)})`);
  }
}

// -32020/-32021/-32022 go out with HTTP 400 (the 2026-07-28 transport rules); others with 200.
const httpStatusOf = (body) => ([HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION, PARSE_ERROR, INVALID_REQUEST].includes(body.error?.code) ? 400 : 200);

function serveHttp(port) {
  const server = http.createServer(async (req, res) => {
    const json = (status, body) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (new URL(req.url, 'http://x').pathname !== '/mcp') return json(404, { error: 'not found' });
    if (req.method !== 'POST') {
      res.writeHead(405, { Allow: 'POST' });
      return res.end();
    }
    let raw = '';
    for await (const chunk of req) raw += chunk;
    let msg;
    try {
      msg = JSON.parse(raw);
    } catch {
      return json(400, errorResponse(null, new RpcError(PARSE_ERROR, 'Parse error')));
    }
    const kind = classify(msg);
    if (kind === 'notification' || kind === 'response') {
      res.writeHead(202);
      return res.end();
    }
    if (kind === 'invalid') return json(400, errorResponse(msg?.id, new RpcError(INVALID_REQUEST, 'Invalid Request (batches are not supported)')));
    try {
      checkHeaders(req, msg);
    } catch (e) {
      return json(400, errorResponse(msg.id, e));
    }
    if (msg.method === 'subscriptions/listen') {
      let opened;
      const event = (message) => res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
      try {
        opened = openListen(msg, event);
      } catch (e) {
        const body = errorResponse(msg.id, e);
        return json(httpStatusOf(body), body);
      }
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
      event(opened.ack);
      opened.snapshots().forEach(event);
      const keepAlive = setInterval(() => res.write(': keepalive\n\n'), 15000);
      res.on('close', () => {
        clearInterval(keepAlive);
        subscribers.delete(opened.sub);
      });
      return;
    }
    let body;
    try {
      body = { jsonrpc: '2.0', id: msg.id, result: await dispatch(msg) };
    } catch (e) {
      body = errorResponse(msg.id, e);
    }
    json(httpStatusOf(body), body);
  });
  server.listen(port, '127.0.0.1', () => log(`serving on http://127.0.0.1:${server.address().port}/mcp`));
}

const httpAt = process.argv.indexOf('--http');
if (httpAt >= 0) serveHttp(Number(process.argv[httpAt + 1] ?? 0));
else serveStdio();
