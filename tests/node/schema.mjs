// schema.mjs — validates captured JSON-RPC traffic against the MCP spec schema (2025-11-25 by
// default; validateMessages and check take a `version` for 2026-07-28).
//
// The schema is JSON Schema draft 2020-12; it is read from $MCP_SPEC_DIR, else from the copy
// vendored in the repository (tests/schemas, with its source noted there).
//
//   validateDownstream(captureFile)  what mcpmux sent to an SDK client through tap_bridge.mjs;
//                                    requests the client sent (captureFile + ".sent") tell
//                                    which result definition each response must match.
//   validateUpstream(logFile, opts)  what mcpmux sent to a fake_mcp_server (its --log FILE).
//
// Both return a Report { checked: Map<definition, count>, failures: [string] };
// assertReport() fails the test with every failure (definition, message, ajv's errors).
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const SPEC_DIR = process.env.MCP_SPEC_DIR || path.resolve(here, '../schemas');
export const SCHEMA_FILE = path.join(SPEC_DIR, 'schema-2025-11-25.json');
const schemaFile = (version) => path.join(SPEC_DIR, `schema-${version}.json`);

let ajv;
const loaded = new Set();
function getAjv(version) {
  if (!ajv) {
    ajv = new Ajv2020({ strict: false, allErrors: true, verbose: false });
    // The formats used by the spec schema, without pulling in ajv-formats.
    ajv.addFormat('uri', /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$/);
    ajv.addFormat('uri-template', /^[^\s]*$/);
    ajv.addFormat('byte', /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/);
  }
  if (!loaded.has(version)) {
    const file = schemaFile(version);
    if (!existsSync(file)) throw new Error(`MCP spec schema not found at ${file} (set MCP_SPEC_DIR)`);
    const schema = JSON.parse(readFileSync(file, 'utf8'));
    delete schema.$id;
    ajv.addSchema(schema, `mcp-${version}`);
    loaded.add(version);
  }
  return ajv;
}

/** Validates `value` against `#/$defs/<def>` of `version`; returns null or a readable error. */
export function check(def, value, version = '2025-11-25') {
  const validate = getAjv(version).getSchema(`mcp-${version}#/$defs/${def}`);
  if (!validate) throw new Error(`no definition ${def} in ${schemaFile(version)}`);
  if (validate(value)) return null;
  return ajv.errorsText(validate.errors, { dataVar: def, separator: '\n    ' });
}

function clip(s, n = 600) {
  return s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s;
}

export class Report {
  constructor(source, version = '2025-11-25') {
    this.source = source;
    this.version = version;
    this.checked = new Map();
    this.failures = [];
  }
  /** Validates `value` against `def`; records the outcome. */
  expect(def, value, line, what = '') {
    this.checked.set(def, (this.checked.get(def) ?? 0) + 1);
    const err = check(def, value, this.version);
    if (err)
      this.failures.push(
        `${this.source}: ${what ? what + ' ' : ''}does not match ${def}:\n    ${err}\n  message: ${clip(line)}`,
      );
  }
  fail(text) {
    this.failures.push(`${this.source}: ${text}`);
  }
  count(def) {
    return this.checked.get(def) ?? 0;
  }
  summary() {
    return [...this.checked].map(([d, n]) => `${d}=${n}`).join(' ');
  }
}

/**
 * mcpmux's era probe: a server of unknown era is first sent a 2026-07-28 server/discover (a
 * legacy server refuses it and is initialized). It is checked against the 2026-07-28 schema.
 */
function eraProbe(report, msg, line) {
  if (msg.method !== 'server/discover' || report.version === '2026-07-28') return false;
  const err = check('DiscoverRequest', msg, '2026-07-28');
  if (err) report.fail(`the era probe does not match 2026-07-28 DiscoverRequest:\n    ${err}\n  message: ${clip(line)}`);
  report.checked.set('DiscoverRequest@2026-07-28', (report.checked.get('DiscoverRequest@2026-07-28') ?? 0) + 1);
  return true;
}

/** Fails with every recorded failure; also asserts that each of `mustCheck` was checked. */
export function assertReport(report, mustCheck = []) {
  assert.deepEqual(report.failures, [], `schema validation failed:\n${report.failures.join('\n')}`);
  for (const def of mustCheck)
    assert.ok(report.count(def) > 0, `${report.source}: no message was validated as ${def} (checked: ${report.summary()})`);
}

function readLines(file) {
  if (!existsSync(file)) return [];
  // Only complete lines: a capture may be read while its writer is in the middle of one.
  const lines = readFileSync(file, 'utf8').split('\n');
  lines.pop();  // after the last newline: empty, or a line still being written
  return lines.filter((l) => l.trim() !== '');
}

function parse(report, line) {
  try {
    const v = JSON.parse(line);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) {
      report.fail(`not a JSON-RPC object: ${clip(line)}`);
      return null;
    }
    return v;
  } catch (e) {
    report.fail(`not JSON (${e.message}): ${clip(line)}`);
    return null;
  }
}

const idKey = (id) => JSON.stringify(id);

// Result definitions of the answers a server gives to client requests.
export const SERVER_RESULT = {
  initialize: 'InitializeResult',
  'tools/list': 'ListToolsResult',
  'tools/call': 'CallToolResult',
  ping: 'EmptyResult',
  'resources/list': 'ListResourcesResult',
  'resources/templates/list': 'ListResourceTemplatesResult',
  'resources/read': 'ReadResourceResult',
  'prompts/list': 'ListPromptsResult',
  'prompts/get': 'GetPromptResult',
  'completion/complete': 'CompleteResult',
  'logging/setLevel': 'EmptyResult',
  'resources/subscribe': 'EmptyResult',
  'resources/unsubscribe': 'EmptyResult',
};
// Notifications a server may send to a client.
export const SERVER_NOTIFICATION = {
  'notifications/tools/list_changed': 'ToolListChangedNotification',
  'notifications/resources/list_changed': 'ResourceListChangedNotification',
  'notifications/resources/updated': 'ResourceUpdatedNotification',
  'notifications/prompts/list_changed': 'PromptListChangedNotification',
  'notifications/progress': 'ProgressNotification',
  'notifications/message': 'LoggingMessageNotification',
  'notifications/cancelled': 'CancelledNotification',
  'notifications/tasks/status': 'TaskStatusNotification',
  'notifications/elicitation/complete': 'ElicitationCompleteNotification',
};
// Requests a server may send to a client.
export const SERVER_REQUEST = {
  ping: 'PingRequest',
  'roots/list': 'ListRootsRequest',
  'sampling/createMessage': 'CreateMessageRequest',
  'elicitation/create': 'ElicitRequest',
};
// Requests and notifications a client may send to a server.
export const CLIENT_REQUEST = {
  initialize: 'InitializeRequest',
  ping: 'PingRequest',
  'tools/list': 'ListToolsRequest',
  'tools/call': 'CallToolRequest',
  'resources/list': 'ListResourcesRequest',
  'resources/read': 'ReadResourceRequest',
  'prompts/list': 'ListPromptsRequest',
  'prompts/get': 'GetPromptRequest',
  'logging/setLevel': 'SetLevelRequest',
  'completion/complete': 'CompleteRequest',
  'resources/templates/list': 'ListResourceTemplatesRequest',
  'resources/subscribe': 'SubscribeRequest',
  'resources/unsubscribe': 'UnsubscribeRequest',
};
export const CLIENT_NOTIFICATION = {
  'notifications/initialized': 'InitializedNotification',
  'notifications/cancelled': 'CancelledNotification',
  'notifications/progress': 'ProgressNotification',
  'notifications/roots/list_changed': 'RootsListChangedNotification',
};
// Results a client gives to server requests.
export const CLIENT_RESULT = {
  ping: 'EmptyResult',
  'roots/list': 'ListRootsResult',
  'sampling/createMessage': 'CreateMessageResult',
  'elicitation/create': 'ElicitResult',
};

/**
 * Validates a message that is a response: envelope, then the result definition of the method it
 * answers (from `methodOf`, a Map idKey -> method), or the error envelope.
 */
function checkResponse(report, msg, line, methodOf, resultDefs, who) {
  if ('error' in msg) {
    report.expect('JSONRPCResponse', msg, line, `${who} error response`);
    report.expect('JSONRPCErrorResponse', msg, line, `${who} error response`);
    return;
  }
  report.expect('JSONRPCResponse', msg, line, `${who} response`);
  report.expect('JSONRPCResultResponse', msg, line, `${who} response`);
  const method = methodOf.get(idKey(msg.id));
  if (method === undefined) {
    report.fail(`${who} response with id ${idKey(msg.id)} that answers no request sent to it: ${clip(line)}`);
    return;
  }
  const def = resultDefs[method];
  if (def) report.expect(def, msg.result, line, `result of ${method}`);
  else report.fail(`no result definition known for method ${method}: ${clip(line)}`);
}

/** What mcpmux sent to a downstream client (captured by tap_bridge.mjs). */
export function validateDownstream(captureFile) {
  const report = new Report(`downstream ${path.basename(captureFile)}`);
  // Requests the client sent: id -> method.
  const clientRequests = new Map();
  for (const line of readLines(captureFile + '.sent')) {
    let m;
    try {
      m = JSON.parse(line);
    } catch {
      continue;
    }
    if (m && typeof m.method === 'string' && m.id !== undefined) clientRequests.set(idKey(m.id), m.method);
  }
  const lines = readLines(captureFile);
  if (lines.length === 0) report.fail('nothing was captured');
  for (const line of lines) {
    const msg = parse(report, line);
    if (!msg) continue;
    report.expect('JSONRPCMessage', msg, line);
    if (typeof msg.method === 'string') {
      if ('id' in msg) {
        report.expect('JSONRPCRequest', msg, line);
        const def = SERVER_REQUEST[msg.method];
        if (def) report.expect(def, msg, line);
        else report.fail(`unexpected server->client request ${msg.method}: ${clip(line)}`);
      } else {
        report.expect('JSONRPCNotification', msg, line);
        const def = SERVER_NOTIFICATION[msg.method];
        if (def) report.expect(def, msg, line);
        else report.expect('ServerNotification', msg, line, `unlisted notification ${msg.method}`);
      }
    } else {
      checkResponse(report, msg, line, clientRequests, SERVER_RESULT, 'mcpmux->client');
    }
  }
  return report;
}

/**
 * What mcpmux sent to a fake_mcp_server (its --log FILE). `serverRequests` maps the ids of the
 * requests the fake sent to mcpmux ("srv-1", ...) to their methods, e.g. {"srv-1": "ping"}.
 */
export function validateUpstream(logFile, serverRequests = {}) {
  const report = new Report(`upstream ${path.basename(logFile)}`);
  const methodOf = new Map(Object.entries(serverRequests).map(([id, m]) => [idKey(id), m]));
  const lines = readLines(logFile);
  if (lines.length === 0) report.fail('the fake server received nothing');
  for (const line of lines) {
    const msg = parse(report, line);
    if (!msg) continue;
    report.expect('JSONRPCMessage', msg, line);
    if (typeof msg.method === 'string') {
      if ('id' in msg) {
        report.expect('JSONRPCRequest', msg, line);
        const def = CLIENT_REQUEST[msg.method];
        if (def) report.expect(def, msg, line);
        else if (!eraProbe(report, msg, line))
          report.fail(`unexpected client->server request ${msg.method}: ${clip(line)}`);
      } else {
        report.expect('JSONRPCNotification', msg, line);
        const def = CLIENT_NOTIFICATION[msg.method];
        if (def) report.expect(def, msg, line);
        else report.expect('ClientNotification', msg, line, `unlisted notification ${msg.method}`);
      }
    } else {
      checkResponse(report, msg, line, methodOf, CLIENT_RESULT, 'mcpmux->server');
    }
  }
  return report;
}

/** Parsed lines of a capture or log file (for assertions on content). */
export function readMessages(file) {
  return readLines(file).map((l) => JSON.parse(l));
}

/**
 * Validates the messages in `file` that one side sent. `asked` maps the ids of the requests the
 * other side sent to their methods (to pick the result definition of each response).
 */
export function validateMessages(file, { requests, notifications, results, asked, who, version }) {
  const report = new Report(who, version);
  const msgs = readMessages(file);
  if (msgs.length === 0) report.fail('nothing captured');
  for (const msg of msgs) {
    const line = JSON.stringify(msg);
    report.expect('JSONRPCMessage', msg, line);
    if (typeof msg.method === 'string') {
      if ('id' in msg) {
        report.expect('JSONRPCRequest', msg, line);
        if (requests[msg.method]) report.expect(requests[msg.method], msg, line);
        else if (!eraProbe(report, msg, line)) report.fail(`unexpected request ${msg.method}: ${line}`);
      } else {
        report.expect('JSONRPCNotification', msg, line);
        if (notifications[msg.method]) report.expect(notifications[msg.method], msg, line);
        else report.fail(`unexpected notification ${msg.method}: ${line}`);
      }
    } else if ('error' in msg) {
      report.expect('JSONRPCErrorResponse', msg, line);
    } else {
      report.expect('JSONRPCResultResponse', msg, line);
      const method = asked.get(JSON.stringify(msg.id));
      if (!method) report.fail(`response to id ${JSON.stringify(msg.id)} that nothing asked: ${line}`);
      else if (!results[method]) report.fail(`no result definition for ${method}: ${line}`);
      else if (msg.result?.resultType === 'input_required' && results.input_required)
        report.expect(results.input_required, msg.result, line, `result of ${method}`);
      else report.expect(results[method], msg.result, line, `result of ${method}`);
    }
  }
  return report;
}
