// harness.mjs — runs a real mcpmuxd for the node tests and connects official SDK clients to it.
//
// Binaries come from $MCPMUXD, $MCPMUX and $FAKE_MCP_SERVER, else ../../build/... relative to
// this file. startDaemon() makes a temp dir, writes config.toml, starts
// `mcpmuxd --config C --socket S --log-level debug` with its log (stderr) in <tmp>/mcpmuxd.log,
// and waits until the socket answers `mcpmux status` (and, optionally, until every server is
// ready). daemon.stop() sends SIGTERM and asserts exit code 0 within 5 s.
// The temp dir is removed after a clean stop unless KEEP_TMP=1 (then it keeps config.toml,
// mcpmuxd.log, the captures and the fake servers' logs for inspection).
// daemon.connect() attaches an SDK Client via StdioClientTransport, either straight to
// `mcpmux --socket S connect` or through tap_bridge.mjs, which records what mcpmux sends.
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, writeFileSync, existsSync, rmSync, readdirSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const execFileP = promisify(execFile);
export const HERE = path.dirname(fileURLToPath(import.meta.url));
const BUILD = path.resolve(HERE, '../../build');
export const MCPMUXD = path.resolve(process.env.MCPMUXD || path.join(BUILD, 'daemon/mcpmuxd'));
export const MCPMUX = path.resolve(process.env.MCPMUX || path.join(BUILD, 'daemon/mcpmux'));
export const FAKE_MCP_SERVER = path.resolve(process.env.FAKE_MCP_SERVER || path.join(BUILD, 'tests/fake_mcp_server'));
export const NODE = process.execPath;
export const TAP_BRIDGE = path.join(HERE, 'tap_bridge.mjs');
const MODULES = path.join(HERE, 'node_modules/@modelcontextprotocol');
/** Entry points of the reference servers (run with `node`, never npx). */
export const EVERYTHING_JS = path.join(MODULES, 'server-everything/dist/index.js');
export const MEMORY_JS = path.join(MODULES, 'server-memory/dist/index.js');
export const FILESYSTEM_JS = path.join(MODULES, 'server-filesystem/dist/index.js');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` (sync or async) every `step` ms until it is truthy or `ms` pass; its last value. */
export async function waitFor(cond, ms = 5000, step = 20) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v || Date.now() >= deadline) return v;
    await sleep(step);
  }
}

/** A TCP port free on 127.0.0.1 right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** TOML basic string. */
export function tomlString(s) {
  return JSON.stringify(String(s));
}
function tomlValue(v) {
  if (Array.isArray(v)) return `[${v.map(tomlValue).join(', ')}]`;
  if (typeof v === 'object' && v !== null)
    return `{ ${Object.entries(v)
      .map(([k, x]) => `${tomlString(k)} = ${tomlValue(x)}`)
      .join(', ')} }`;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return tomlString(v);
}

/** config.toml text from {daemon: {...}, servers: {name: {...}}}. */
export function configToml({ daemon = {}, servers = {}, profiles = {} }) {
  let out = '[daemon]\n';
  for (const [k, v] of Object.entries(daemon)) out += `${k} = ${tomlValue(v)}\n`;
  for (const [table, entries] of [['servers', servers], ['profiles', profiles]])
    for (const [name, s] of Object.entries(entries)) {
      out += `\n[${table}.${name}]\n`;
      for (const [k, v] of Object.entries(s)) out += `${k} = ${tomlValue(v)}\n`;
    }
  return out;
}

/** A [servers.X] table for the fake server; `log` is its --log FILE. */
export function fakeServer({ log, args = [], ...rest } = {}) {
  return { command: FAKE_MCP_SERVER, args: [...(log ? ['--log', log] : []), ...args], ...rest };
}

/** Runs `mcpmux --socket S ARGS...`; resolves {code, stdout, stderr}. */
export async function mcpmux(socket, args, { timeout = 10000, env } = {}) {
  try {
    const { stdout, stderr } = await execFileP(MCPMUX, ['--socket', socket, ...args], {
      timeout,
      env: env && { ...process.env, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? String(e) };
  }
}

export class Daemon {
  constructor(dir, config, proc, logFile) {
    this.dir = dir;
    this.config = config;
    this.socket = path.join(dir, 'mcpmux.sock');
    this.configFile = path.join(dir, 'config.toml');
    this.proc = proc;
    this.logFile = logFile;
    this.clients = [];
    this.exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  }

  get pid() {
    return this.proc.pid;
  }

  log() {
    try {
      return readFileSync(this.logFile, 'utf8');
    } catch {
      return '';
    }
  }

  /** The daemon log's last lines, for assertion messages. */
  logTail(n = 40) {
    return this.log().split('\n').slice(-n).join('\n');
  }

  path(name) {
    return path.join(this.dir, name);
  }

  async status() {
    const r = await mcpmux(this.socket, ['status', '--json']);
    if (r.code !== 0) return null;
    return JSON.parse(r.stdout);
  }

  /** Waits until every enabled server is "ready" (deadline `ms`). */
  async waitReady(ms = 20000) {
    const deadline = Date.now() + ms;
    let st;
    while (Date.now() < deadline) {
      st = await this.status();
      if (st && st.servers.every((s) => !s.enabled || s.state === 'ready')) return st;
      await sleep(100);
    }
    assert.fail(`servers not ready within ${ms} ms: ${JSON.stringify(st?.servers)}\n--- daemon log:\n${this.logTail()}`);
  }

  /** Direct children of the daemon: [{pid, cmdline}] (from /proc/<pid>/status PPid). */
  children() {
    const out = [];
    for (const ent of readdirSync('/proc')) {
      if (!/^\d+$/.test(ent)) continue;
      try {
        const st = readFileSync(`/proc/${ent}/status`, 'utf8');
        const ppid = Number(/^PPid:\s+(\d+)/m.exec(st)?.[1]);
        if (ppid !== this.pid) continue;
        const cmdline = readFileSync(`/proc/${ent}/cmdline`, 'utf8').split('\0').filter(Boolean);
        out.push({ pid: Number(ent), cmdline });
      } catch {
        // the process went away meanwhile
      }
    }
    return out;
  }

  /**
   * Connects an SDK client. With `capture` (a file name in the temp dir) the client talks to
   * tap_bridge.mjs, which records what mcpmux sends; `client.captureFile` is its path.
   */
  async connect({ capture, name = 'node-test', capabilities = {}, setup } = {}) {
    const bridgeArgs = ['--socket', this.socket, 'connect'];
    const captureFile = capture ? this.path(capture) : null;
    const transport = captureFile
      ? new StdioClientTransport({ command: NODE, args: [TAP_BRIDGE, captureFile, '--', MCPMUX, ...bridgeArgs], stderr: 'pipe' })
      : new StdioClientTransport({ command: MCPMUX, args: bridgeArgs, stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (d) => (stderr += d));
    const client = new Client({ name, version: '1.0.0' }, { capabilities });
    setup?.(client);
    await client.connect(transport);
    client.captureFile = captureFile;
    client.bridgeStderr = () => stderr;
    this.clients.push(client);
    return client;
  }

  /** Closes the clients, SIGTERMs the daemon and asserts a clean exit (code 0) within 5 s. */
  async stop({ keep = !!process.env.KEEP_TMP } = {}) {
    for (const c of this.clients.splice(0)) await c.close().catch(() => {});
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGTERM');
    const res = await within(5000, this.exited, 'mcpmuxd exit').catch(() => null);
    if (res === null) {
      this.proc.kill('SIGKILL');
      await this.exited;
    }
    const log = this.logTail();
    if (!keep && res && res.code === 0) rmSync(this.dir, { recursive: true, force: true });
    assert.notEqual(res, null, `mcpmuxd did not exit within 5 s of SIGTERM\n--- daemon log:\n${log}`);
    assert.deepEqual(res, { code: 0, signal: null }, `mcpmuxd exit after SIGTERM\n--- daemon log:\n${log}`);
  }
}

/**
 * Starts mcpmuxd on a fresh temp dir. `config` is {daemon, servers} (see configToml) or a
 * function dir => {daemon, servers}, so server tables can name files in the temp dir.
 * `stateDir` makes it use another daemon's state store (its tool cache, pins, audit log and
 * OAuth logins; kept with stop({keep: true})).
 */
export async function startDaemon(config, { waitReady = true, stateDir, env = {} } = {}) {
  for (const bin of [MCPMUXD, MCPMUX]) assert.ok(existsSync(bin), `binary not found: ${bin} (build first or set env)`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mcpmux-node-'));
  const cfg = typeof config === 'function' ? config(dir) : config;
  const configFile = path.join(dir, 'config.toml');
  writeFileSync(configFile, configToml(cfg));
  const logFile = path.join(dir, 'mcpmuxd.log');
  const logFd = openSync(logFile, 'a');
  const socket = path.join(dir, 'mcpmux.sock');
  const proc = spawn(MCPMUXD, ['--config', configFile, '--socket', socket, '--log-level', 'debug'], {
    stdio: ['ignore', logFd, logFd],
    // Keep the state store and anything else per-user inside the temp dir.
    env: {
      ...process.env,
      XDG_CACHE_HOME: path.join(dir, 'cache'),
      XDG_STATE_HOME: stateDir ?? path.join(dir, 'state'),
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      XDG_RUNTIME_DIR: dir,
      // The fake servers keep their logs and markers in this /tmp directory, which a sandbox
      // hides: servers run unsandboxed here unless a test says otherwise (tests/sandbox/ and the
      // compatibility sweep prove the sandbox).
      MCPMUX_SANDBOX: 'off',
      ...env,
    },
  });
  closeSync(logFd);
  const d = new Daemon(dir, cfg, proc, logFile);
  const deadline = Date.now() + 10000;
  for (;;) {
    if (proc.exitCode !== null || proc.signalCode !== null)
      assert.fail(`mcpmuxd exited early (${proc.exitCode ?? proc.signalCode})\n--- config:\n${readFileSync(configFile, 'utf8')}\n--- log:\n${d.log()}`);
    if (existsSync(socket) && (await d.status())) break;
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      assert.fail(`mcpmuxd socket ${socket} not answering within 10 s\n--- log:\n${d.log()}`);
    }
    await sleep(50);
  }
  if (waitReady) {
    try {
      await d.waitReady();
    } catch (e) {
      proc.kill('SIGKILL'); // not left running to hold the test process open
      throw e;
    }
  }
  return d;
}

/** Text of all text content items of a tool result, joined by newlines. */
export function resultText(result) {
  return (result.content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
}

/** Rejects with a clear message if `promise` has not settled within `ms`. */
export function within(ms, promise, what) {
  let t;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      t = setTimeout(() => reject(new Error(`${what}: still pending after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(t));
}
