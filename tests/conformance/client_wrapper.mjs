#!/usr/bin/env node
// Client side of the conformance suite: mcpmux as the MCP client under test.
//
//   conformance client --command "<node> client_wrapper.mjs" --scenario S
//
// The suite starts a scenario server and runs this command with the server's URL appended as
// the last argument (and MCP_CONFORMANCE_SCENARIO=S in the environment). This wrapper writes a
// temporary config with that URL as a `type = "http"` server, starts mcpmuxd ($MCPMUXD) on a
// temporary socket, drives the scenario through the daemon as an MCP client over the Unix
// socket (initialize, tools/list, tools/call of the tools the scenario offers) and stops the
// daemon. Exit status 0 when every step answered as expected. The socket client speaks the
// 2025-11-25 era; with a 2026-07-28 scenario server behind it, mcpmux bridges the eras (its
// input_required results become elicitation requests to this client, answered as a person
// accepting the form's defaults would).
import { spawn } from 'node:child_process';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
const url = process.argv[process.argv.length - 1];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
const mcpmuxd = process.env.MCPMUXD || path.join(repo, 'build/daemon/mcpmuxd');
const mcpmux = process.env.MCPMUX || path.join(path.dirname(mcpmuxd), 'mcpmux');
const authScenario = scenario.startsWith('auth/');

// The scenario's own description of the calls it expects (http-custom-headers names its
// arguments there), and the spec revision it targets.
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || '{}');
const modernScenario = process.env.MCP_CONFORMANCE_PROTOCOL_VERSION === '2026-07-28';

// Arguments for the tools the client scenarios expect to be called; in a 2026-07-28 scenario
// every listed tool is called (with {} when nothing better is known), and every resource and
// prompt is read, so that each request kind crosses mcpmux's HTTP client.
const TOOL_ARGS = {
  add_numbers: { a: 5, b: 3 },
  test_reconnection: {},
  test_client_elicitation_defaults: {},
};
function callsFor(tool, tools) {
  const fromContext = (context.toolCalls ?? []).filter((c) => c.name === tool.name);
  if (fromContext.length) return fromContext.map((c) => c.arguments ?? {});
  if (tool.name in TOOL_ARGS) return [TOOL_ARGS[tool.name]];
  // json-schema-2020-12-preservation: echo back the focal tool's schema as mcpmux listed it.
  if (tool.name === 'json_schema_echo') {
    const focal = tools.find((t) => t.name === 'json_schema_2020_12_tool');
    return focal ? [{ schema: focal.inputSchema }] : [];
  }
  return modernScenario || authScenario ? [{}] : [];
}

// What a person accepting a form with its pre-filled values answers: every property's default,
// else a plain value of its type (SEP-1034: clients apply the schema's defaults).
function formAnswer(schema = {}) {
  const content = {};
  for (const [key, prop] of Object.entries(schema.properties ?? {})) {
    if (prop.default !== undefined) content[key] = prop.default;
    else if (prop.type === 'boolean') content[key] = true;
    else if (prop.type === 'integer' || prop.type === 'number') content[key] = 1;
    else if (Array.isArray(prop.enum) && prop.enum.length) content[key] = prop.enum[0];
    else if (prop.type === 'string') content[key] = 'conformance';
  }
  return { action: 'accept', content };
}

const log = (...a) => console.error('[client_wrapper]', ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

if (!/^https?:\/\//.test(url ?? '')) {
  log(`usage: client_wrapper.mjs URL (got ${JSON.stringify(url)})`);
  process.exit(2);
}

const dir = mkdtempSync(path.join(tmpdir(), 'mcpmux-conformance-'));
const socketPath = path.join(dir, 'mcpmux.sock');

// An auth scenario's server wants an OAuth login: `oauth` in its table, as a user writes it.
// A pre-registered client's secret lives in a file of its own (never inline).
function oauthLine() {
  if (!authScenario) return '';
  const fields = [];
  if (context.client_id) fields.push(`client_id = ${tomlString(context.client_id)}`);
  if (context.client_secret) {
    const secretFile = path.join(dir, 'client-secret');
    writeFileSync(secretFile, context.client_secret, { mode: 0o600 });
    fields.push(`client_secret_file = ${tomlString(secretFile)}`);
  }
  if (scenario.startsWith('auth/client-credentials')) fields.push('grant = "client_credentials"');
  if (scenario === 'auth/basic-cimd')
    fields.push('client_metadata_url = "https://conformance-test.local/client-metadata.json"');
  return fields.length ? `oauth = { ${fields.join(', ')} }` : 'oauth = true';
}
const configPath = path.join(dir, 'config.toml');
const tomlString = (s) => JSON.stringify(s); // a JSON string is a valid TOML basic string
writeFileSync(
  configPath,
  [
    '[daemon]',
    `socket = ${tomlString(socketPath)}`,
    'log_level = "debug"',
    'startup_wait_ms = 10000',
    'timeout_ms = 20000',
    '',
    '[servers.conformance]',
    'type = "http"',
    `url = ${tomlString(url)}`,
    'prefix = ""',
    oauthLine(),
    '',
  ].join('\n'),
);

// One NDJSON JSON-RPC connection to the daemon's socket.
class SocketClient {
  constructor(sock) {
    this.sock = sock;
    this.nextId = 1;
    this.pending = new Map();
    this.notifications = [];
    let buf = '';
    sock.setEncoding('utf8');
    sock.on('data', (chunk) => {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.trim()) this.onMessage(JSON.parse(line));
      }
    });
    sock.on('close', () => {
      for (const { reject } of this.pending.values()) reject(new Error('daemon closed the connection'));
      this.pending.clear();
    });
  }
  static connect(p) {
    return new Promise((resolve, reject) => {
      const s = net.createConnection(p);
      s.once('connect', () => resolve(new SocketClient(s)));
      s.once('error', reject);
    });
  }
  onMessage(msg) {
    if (msg.id !== undefined && msg.method === undefined) {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      clearTimeout(p.timer);
      if (msg.error) p.reject(Object.assign(new Error(`${msg.error.message} (${msg.error.code})`), { rpc: msg.error }));
      else p.resolve(msg.result);
    } else if (msg.id !== undefined && msg.method === 'elicitation/create') {
      // mcpmux relays the server's question (or turns a 2026 server's input_required into it).
      log('elicitation', JSON.stringify(msg.params));
      this.write({ jsonrpc: '2.0', id: msg.id, result: formAnswer(msg.params?.requestedSchema) });
    } else if (msg.id !== undefined) {
      // Another server-to-client request: this client declares only elicitation.
      this.write({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `Method not found: ${msg.method}` } });
    } else {
      this.notifications.push(msg);
      log('notification', JSON.stringify(msg));
    }
  }
  write(msg) {
    this.sock.write(JSON.stringify(msg) + '\n');
  }
  request(method, params = {}, timeoutMs = 25000) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.write({ jsonrpc: '2.0', id, method, params });
    });
  }
  notify(method, params = {}) {
    this.write({ jsonrpc: '2.0', method, params });
  }
  close() {
    this.sock.end();
  }
}

// `mcpmux auth login conformance`, as a person runs it; its output goes to this log.
function runLogin() {
  return new Promise((resolve) => {
    execFile(
      mcpmux,
      ['--socket', socketPath, 'auth', 'login', 'conformance'],
      { env: { ...process.env, BROWSER: path.join(here, 'browser.mjs') }, timeout: 60000 },
      (err, stdout, stderr) => {
        log(`mcpmux auth login -> ${err ? `exit ${err.code}` : 'ok'}\n${stdout}${stderr}`);
        resolve(!err);
      },
    );
  });
}

async function connectWithRetry(deadlineMs) {
  const until = Date.now() + deadlineMs;
  for (;;) {
    try {
      return await SocketClient.connect(socketPath);
    } catch (e) {
      if (daemonGone) throw new Error('mcpmuxd exited before listening');
      if (Date.now() > until) throw new Error(`mcpmuxd did not listen on ${socketPath}: ${e.message}`);
      await sleep(50);
    }
  }
}

const daemon = spawn(mcpmuxd, ['--config', configPath, '--socket', socketPath], {
  env: {
    ...process.env,
    XDG_CACHE_HOME: path.join(dir, 'cache'),
    XDG_STATE_HOME: path.join(dir, 'state'),
    MCPMUX_CONFIG: configPath,
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let daemonOut = '';
daemon.stdout.on('data', (d) => (daemonOut += d));
daemon.stderr.on('data', (d) => (daemonOut += d));
let daemonGone = false;
const daemonExit = new Promise((resolve) => {
  daemon.on('exit', (code, signal) => {
    daemonGone = true;
    resolve({ code, signal });
  });
  daemon.on('error', (e) => {
    daemonGone = true;
    daemonOut += `cannot start ${mcpmuxd}: ${e.message}\n`;
    resolve({ code: null, signal: 'spawn error' });
  });
});

let status = 0;
try {
  log(`scenario ${scenario || '(none)'}: ${url} through ${mcpmuxd}`);
  const c = await connectWithRetry(10000);

  const init = await c.request('initialize', {
    protocolVersion: '2025-11-25',
    capabilities: { elicitation: { form: {} } },
    clientInfo: { name: 'mcpmux-conformance-client', version: '1.0.0' },
  });
  log('initialize ->', JSON.stringify(init));
  c.notify('notifications/initialized');

  // Wait until the upstream is ready (or failed) before listing: the startup gate is bounded.
  const settle = async () => {
    let server;
    for (const until = Date.now() + 15000; Date.now() < until; await sleep(100)) {
      const st = await c.request('mcpmux/status');
      server = st.servers?.find((s) => s.name === 'conformance');
      if (server && server.state !== 'connecting' && server.state !== 'starting') break;
    }
    log('upstream', JSON.stringify(server));
    return server;
  };
  let server = await settle();
  // A server that needs a login gets one the way a person does it: `mcpmux auth login`, whose
  // browser ($BROWSER, browser.mjs here) follows the authorization server's redirect.
  let logins = 0;
  const login = async () => {
    logins++;
    const out = await runLogin();
    server = await settle();
    return out;
  };
  while (server?.state === 'needs_login' && logins < 3) await login();
  if (server?.state !== 'ready') throw new Error(`upstream not ready: ${JSON.stringify(server)}`);

  const { tools = [] } = await c.request('tools/list');
  log('tools/list ->', tools.map((t) => t.name).join(', ') || '(none)');

  for (const tool of tools) {
    const calls = callsFor(tool, tools);
    if (!calls.length) log(`not calling ${tool.name}: no arguments known for it`);
    for (const args of calls) {
      // In a 2026-07-28 scenario the suite's checks judge; an error answer is only logged.
      const call = () => c.request('tools/call', { name: tool.name, arguments: args });
      const result = await call().catch(async (e) => {
        // The server asks for more permission (step-up): mcpmux says to log in again.
        if (authScenario && /mcpmux auth login/.test(e.message) && logins < 3) {
          log(`tools/call ${tool.name}: ${e.message}; logging in again`);
          await login();
          return call();
        }
        throw e;
      }).catch((e) => {
        if (!modernScenario && !authScenario) throw e;
        log(`tools/call ${tool.name} failed: ${e.message}`);
        return {};
      });
      log(`tools/call ${tool.name} ->`, JSON.stringify(result));
      if (result.isError && !modernScenario) {
        status = 1;
        log(`tools/call ${tool.name} returned isError`);
      }
    }
  }
  if (modernScenario && init.capabilities?.resources) {
    const { resources = [] } = await c.request('resources/list');
    for (const r of resources) log(`resources/read ${r.uri} ->`, JSON.stringify(await c.request('resources/read', { uri: r.uri })));
  }
  if (modernScenario && init.capabilities?.prompts) {
    const { prompts = [] } = await c.request('prompts/list');
    for (const p of prompts) log(`prompts/get ${p.name} ->`, JSON.stringify(await c.request('prompts/get', { name: p.name, arguments: {} })));
  }
  c.close();
} catch (e) {
  status = 1;
  log('FAILED:', e.message);
} finally {
  daemon.kill('SIGTERM');
  const killer = setTimeout(() => daemon.kill('SIGKILL'), 8000);
  const { code, signal } = await daemonExit;
  clearTimeout(killer);
  if (code !== 0) {
    status = 1;
    log(`mcpmuxd exited with ${code ?? signal}`);
  }
  if (status !== 0 || process.env.MCPMUX_CONFORMANCE_VERBOSE) {
    process.stderr.write(`--- mcpmuxd log ---\n${daemonOut}--- end of mcpmuxd log ---\n`);
  }
  if (process.env.MCPMUX_CONFORMANCE_LOG_DIR) {
    writeFileSync(path.join(process.env.MCPMUX_CONFORMANCE_LOG_DIR, `mcpmuxd-client-${scenario.replace(/\W+/g, '_')}.log`), daemonOut);
  }
  rmSync(dir, { recursive: true, force: true });
}
process.exit(status);
