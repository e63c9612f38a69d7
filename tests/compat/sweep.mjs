// sweep.mjs — the compatibility sweep: every server of servers.mjs behind one real mcpmuxd.
//
//   node sweep.mjs [--chaos]
//
// Writes a config.toml with all servers (prefix = name, timeout_ms = 60000, cwd = a folder of
// its own), starts `mcpmuxd --config C --socket S --log-level info` on a fresh temp dir (tool
// cache included), and checks, per server:
//   - it is `ready` within its timeout, without a restart, in its sandbox (sandbox = "default");
//   - it stays ready, same pid and no restart, over ~15 s of polling and until the end;
//   - it lists tools (`mcpmux tools --json`), and its resources and prompts appear in the
//     combined lists a client gets;
//   - its harmless call (servers.mjs) succeeds with the expected answer;
// then SIGTERMs the daemon, which must exit 0 and leave no server process behind.
// With --chaos, once all is ready each server's process is SIGKILLed in turn, and must be ready
// again (a new pid) within its timeout; at the end all are ready, none restarted more than
// twice or is crash-looping, and the harmless calls still succeed.
//
// Prints a table and writes it as Markdown to build/compat/table.md (and the daemon's log to
// build/compat/mcpmuxd.log). Exit status 1 when any check failed (each failure is printed),
// 2 when the sweep could not run at all.
// Binaries: $MCPMUXD, $MCPMUX, else ../../build/daemon/{mcpmuxd,mcpmux}. KEEP_TMP=1 keeps the
// temp dir.
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { servers, needsService } from './servers.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '../..');
const MCPMUXD = path.resolve(process.env.MCPMUXD || path.join(REPO, 'build/daemon/mcpmuxd'));
const MCPMUX = path.resolve(process.env.MCPMUX || path.join(REPO, 'build/daemon/mcpmux'));
const OUT = path.join(REPO, 'build/compat');
const MODULES = path.join(HERE, 'node_modules');
/** Node 22 from the `node` npm package, for the servers marked node22. */
const NODE22 = path.join(MODULES, 'node/bin/node');
const SYSTEM_NODE = process.execPath;

const SERVER_TIMEOUT_MS = 60000; // per server: start, and each request
const STABLE_POLLS = 5; // "stays ready": this many status polls ...
const STABLE_INTERVAL_MS = 3000; // ... this far apart
const CALL_TIMEOUT_MS = 30000;
const MAX_CHAOS_RESTARTS = 2;

const chaos = process.argv.includes('--chaos');
const unknown = process.argv.slice(2).filter((a) => a !== '--chaos');
if (unknown.length) usage(`unknown argument ${unknown[0]}`);

const execFileP = promisify(execFile);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const t0 = Date.now();
const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;
const say = (msg) => console.log(`[${secs(Date.now() - t0).padStart(7)}] ${msg}`);

/** Failed checks, printed at the end: [server or "daemon", message]. */
const problems = [];
const fail = (who, msg) => {
  problems.push([who, msg]);
  say(`FAIL ${who}: ${msg}`);
};

function usage(msg) {
  console.error(`sweep: ${msg}\nusage: node sweep.mjs [--chaos]`);
  process.exit(2);
}

// ------------------------------------------------------------------ the daemon and its CLI

/** `mcpmux --socket S ARGS...` → {code, stdout, stderr}. */
async function mcpmux(socket, args, timeout = 15000) {
  try {
    const { stdout, stderr } = await execFileP(MCPMUX, ['--socket', socket, ...args], { timeout, maxBuffer: 64 << 20 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr || String(e.message) };
  }
}

/** `mcpmux status --json` as {name: server} (null when the daemon does not answer). */
async function serverStatus(socket) {
  const r = await mcpmux(socket, ['status', '--json']);
  if (r.code !== 0) return null;
  return Object.fromEntries(JSON.parse(r.stdout).servers.map((s) => [s.name, s]));
}

const tomlString = (s) => JSON.stringify(String(s));
const tomlValue = (v) =>
  Array.isArray(v)
    ? `[${v.map(tomlValue).join(', ')}]`
    : typeof v === 'object'
      ? `{ ${Object.entries(v).map(([k, x]) => `${tomlString(k)} = ${tomlValue(x)}`).join(', ')} }`
      : typeof v === 'number'
        ? String(v)
        : tomlString(v);

function configToml(dir) {
  let out = '# written by tests/compat/sweep.mjs\n[daemon]\n';
  for (const s of servers) {
    const wd = workDir(dir, s);
    const table = {
      command: s.node22 ? NODE22 : SYSTEM_NODE,
      args: [path.join(MODULES, s.pkg, s.entry), ...(s.args?.(wd) ?? [])],
      env: s.env?.(wd) ?? {},
      cwd: wd,
      prefix: s.name,
      timeout_ms: SERVER_TIMEOUT_MS,
    };
    out += `\n[servers.${s.name}]\n`;
    for (const [k, v] of Object.entries(table)) out += `${k} = ${tomlValue(v)}\n`;
  }
  return out;
}

const workDir = (dir, s) => path.join(dir, 'work', s.name);

async function startDaemon(dir) {
  const config = path.join(dir, 'config.toml');
  writeFileSync(config, configToml(dir));
  const log = path.join(dir, 'mcpmuxd.log');
  const socket = path.join(dir, 'mcpmux.sock');
  const fd = openSync(log, 'a');
  const proc = spawn(MCPMUXD, ['--config', config, '--socket', socket, '--log-level', 'info'], {
    stdio: ['ignore', fd, fd],
    // The tool cache and anything else per-user stay in the temp dir: no cached tools at start.
    env: {
      ...process.env,
      XDG_CACHE_HOME: path.join(dir, 'cache'),
      XDG_STATE_HOME: path.join(dir, 'state'),
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      XDG_RUNTIME_DIR: dir,
    },
  });
  closeSync(fd);
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  const started = Date.now();
  for (;;) {
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`mcpmuxd exited at start:\n${readFileSync(log, 'utf8')}`);
    if (existsSync(socket) && (await serverStatus(socket))) break;
    if (Date.now() - started > 10000) {
      proc.kill('SIGKILL');
      throw new Error(`mcpmuxd does not answer on ${socket} within 10 s:\n${readFileSync(log, 'utf8')}`);
    }
    await sleep(50);
  }
  return { proc, exited, socket, log, started };
}

// ------------------------------------------------------------------ an MCP client on the socket

/** A minimal MCP client over the daemon's socket (newline-delimited JSON-RPC). */
class Session {
  static async open(socket) {
    const conn = net.createConnection(socket);
    await new Promise((resolve, reject) => conn.once('connect', resolve).once('error', reject));
    const s = new Session(conn);
    await s.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'compat-sweep', version: '1' } });
    s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return s;
  }

  constructor(conn) {
    this.conn = conn;
    this.nextId = 1;
    this.pending = new Map();
    let buf = '';
    conn.setEncoding('utf8');
    conn.on('data', (d) => {
      buf += d;
      for (let i; (i = buf.indexOf('\n')) >= 0; ) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim()) this.receive(JSON.parse(line));
      }
    });
    conn.on('error', () => {});
    conn.on('close', () => {
      for (const p of this.pending.values()) p.reject(new Error('connection closed'));
      this.pending.clear();
    });
  }

  send(msg) {
    this.conn.write(JSON.stringify(msg) + '\n');
  }

  receive(msg) {
    const p = msg.method === undefined ? this.pending.get(msg.id) : undefined;
    if (!p) return; // notifications; no request is expected (the client declares no capability)
    this.pending.delete(msg.id);
    if (msg.error) p.reject(new Error(`${p.method}: ${JSON.stringify(msg.error)}`));
    else p.resolve(msg.result);
  }

  request(method, params = {}, timeout = CALL_TIMEOUT_MS) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer within ${secs(timeout)}`));
      }, timeout);
      const settle = (fn) => (v) => {
        clearTimeout(timer);
        fn(v);
      };
      this.pending.set(id, { method, resolve: settle(resolve), reject: settle(reject) });
      this.send({ jsonrpc: '2.0', id, method, params });
    });
  }

  /** Every item of a paginated list. */
  async list(method, key) {
    const items = [];
    let cursor;
    do {
      const r = await this.request(method, cursor ? { cursor } : {});
      items.push(...r[key]);
      cursor = r.nextCursor;
    } while (cursor);
    return items;
  }

  close() {
    this.conn.end();
  }
}

// ------------------------------------------------------------------ the checks

/** Polls until every server is ready or past its timeout; records rows[name].readyMs. */
async function waitReady(daemon, rows) {
  say(`waiting for ${servers.length} servers to be ready (timeout ${secs(SERVER_TIMEOUT_MS)} each)`);
  let st;
  for (;;) {
    st = await serverStatus(daemon.socket);
    const now = Date.now() - daemon.started;
    for (const s of servers) {
      const row = rows[s.name];
      if (row.readyMs === undefined && st?.[s.name]?.state === 'ready') {
        row.readyMs = now;
        say(`${s.name} ready after ${secs(now)}`);
      }
    }
    const waiting = servers.filter((s) => rows[s.name].readyMs === undefined);
    if (waiting.length === 0 || now > SERVER_TIMEOUT_MS) break;
    await sleep(250);
  }
  for (const s of servers) {
    const row = rows[s.name];
    const x = st?.[s.name];
    row.state = x?.state ?? 'absent';
    if (row.readyMs === undefined) fail(s.name, `not ready within ${secs(SERVER_TIMEOUT_MS)}: ${describe(x)}`);
    else if (x && x.restarts > 0) fail(s.name, `restarted ${x.restarts} time(s) while starting: ${describe(x)}`);
    // Every server runs in the sandbox users get by default (sandbox = "default").
    else if (x && process.env.MCPMUX_SANDBOX !== 'off' && x.sandbox?.sandboxed !== true)
      fail(s.name, `not sandboxed: ${JSON.stringify(x.sandbox ?? null)}`);
  }
  return st;
}

function describe(x) {
  if (!x) return 'not in mcpmux status';
  const parts = [`state ${x.state}`, `restarts ${x.restarts}`];
  if (x.last_error) parts.push(`last error: ${x.last_error}`);
  if (x.last_stderr && !x.last_error?.includes(x.last_stderr)) parts.push(`last stderr: ${x.last_stderr}`);
  return parts.join('; ');
}

/** Every ready server keeps its pid, with no restart, over STABLE_POLLS polls. */
async function checkStable(daemon, baseline, polls, what) {
  say(polls > 1 ? `checking that the servers stay ready (${polls} polls, ${secs(STABLE_INTERVAL_MS)} apart)` : `checking that the servers are still ready ${what}`);
  const broken = new Set();
  for (let i = 0; i < polls; i++) {
    if (i > 0) await sleep(STABLE_INTERVAL_MS);
    const st = await serverStatus(daemon.socket);
    if (!st) return fail('daemon', `mcpmux status does not answer (${what})`);
    for (const [name, base] of Object.entries(baseline)) {
      const x = st[name];
      if (broken.has(name) || base.state !== 'ready') continue;
      if (x?.state !== 'ready' || x.pid !== base.pid || x.restarts !== base.restarts) {
        broken.add(name);
        fail(name, `did not stay ready ${what} (was pid ${base.pid}, restarts ${base.restarts}; now ${x ? `pid ${x.pid}, ` : ''}${describe(x)})`);
      }
    }
  }
}

/** Tools, resources, templates and prompts of each server, as a client and `mcpmux tools` see them. */
async function countLists(daemon, rows) {
  const r = await mcpmux(daemon.socket, ['tools', '--json']);
  if (r.code !== 0) return fail('daemon', `mcpmux tools --json failed: ${r.stderr.trim()}`);
  const parsed = JSON.parse(r.stdout);
  const tools = Array.isArray(parsed) ? parsed : parsed.tools; // the CLI prints mcpmux/tools' array
  const session = await Session.open(daemon.socket);
  try {
    const listed = await session.list('tools/list', 'tools');
    if (listed.length !== tools.length)
      fail('daemon', `tools/list gives ${listed.length} tools, mcpmux tools --json ${tools.length}`);
    const prompts = await session.list('prompts/list', 'prompts');
    const resources = await session.list('resources/list', 'resources');
    const templates = await session.list('resources/templates/list', 'resourceTemplates');
    for (const s of servers) {
      const row = rows[s.name];
      row.tools = tools.filter((t) => t.server === s.name);
      row.prompts = prompts.filter((p) => p.name.startsWith(`${s.name}__`)).length;
      row.resources = resources.filter((x) => owner(x.uri) === s.name).length;
      row.templates = templates.filter((x) => owner(x.uriTemplate) === s.name).length;
      if (row.tools.length === 0 && row.readyMs !== undefined) fail(s.name, 'lists no tools');
    }
    for (const x of [...resources.map((r) => r.uri), ...templates.map((t) => t.uriTemplate)])
      if (!owner(x)) fail('daemon', `resource ${x} belongs to no server (uriSchemes in servers.mjs)`);
    for (const p of prompts)
      if (!servers.some((s) => p.name.startsWith(`${s.name}__`))) fail('daemon', `prompt ${p.name} has no server prefix`);
  } finally {
    session.close();
  }
}

/** The server a resource URI (or template) belongs to, by scheme or mcpmux:// alias. */
function owner(uri) {
  const alias = /^mcpmux:\/\/([^/]+)\//.exec(uri);
  if (alias) return alias[1];
  const scheme = uri.split(':')[0];
  return servers.find((s) => s.uriSchemes?.includes(scheme))?.name;
}

/** Bytes of the harmless calls' results, for the redaction's false-positive rate. */
let resultBytes = 0;

/** Runs each server's harmless call; rows[name][key] = 'ok' | 'error: ...'. */
async function harmlessCalls(daemon, rows, key) {
  for (const s of servers) {
    const row = rows[s.name];
    if (!s.call) continue;
    if (row.readyMs === undefined) {
      row[key] = 'not run (never ready)';
      continue;
    }
    const exposed = row.tools?.find((t) => t.original === s.call.tool)?.name ?? `${s.name}__${s.call.tool}`;
    const r = await mcpmux(daemon.socket, ['call', exposed, JSON.stringify(s.call.args), '--json', '--timeout', String(CALL_TIMEOUT_MS)], CALL_TIMEOUT_MS + 5000);
    resultBytes += Buffer.byteLength(r.stdout ?? '');
    let outcome;
    let result;
    try {
      result = JSON.parse(r.stdout);
    } catch {
      result = null;
    }
    if (r.code !== 0 || !result) outcome = `error: exit ${r.code}: ${(r.stderr || r.stdout).trim().split('\n').pop()}`;
    else if (result.isError) outcome = `error: ${JSON.stringify(result.content).slice(0, 200)}`;
    else if (!s.call.check(result, workDir(daemon.dir, s))) outcome = `error: unexpected answer ${JSON.stringify(result).slice(0, 200)}`;
    else outcome = 'ok';
    row[key] = outcome;
    if (outcome !== 'ok') fail(s.name, `${s.call.tool} ${key === 'chaosCall' ? 'after the kills ' : ''}→ ${outcome}`);
  }
}

/** SIGKILLs each ready server's process in turn and waits until it is ready with a new pid. */
async function killEach(daemon, rows) {
  for (const s of servers) {
    const row = rows[s.name];
    const before = (await serverStatus(daemon.socket))?.[s.name];
    if (before?.state !== 'ready' || !before.pid) {
      row.back = 'not killed';
      continue;
    }
    say(`SIGKILL ${s.name} (pid ${before.pid})`);
    const killed = Date.now();
    try {
      process.kill(before.pid, 'SIGKILL');
    } catch (e) {
      fail(s.name, `cannot kill pid ${before.pid}: ${e.message}`);
      continue;
    }
    let x;
    while (Date.now() - killed < SERVER_TIMEOUT_MS) {
      await sleep(200);
      x = (await serverStatus(daemon.socket))?.[s.name];
      if (x?.state === 'ready' && x.pid && x.pid !== before.pid) break;
    }
    if (x?.state === 'ready' && x.pid !== before.pid) {
      row.back = secs(Date.now() - killed);
      say(`${s.name} ready again after ${row.back} (pid ${x.pid})`);
    } else {
      row.back = 'no';
      fail(s.name, `not ready again within ${secs(SERVER_TIMEOUT_MS)} of SIGKILL: ${describe(x)}`);
    }
  }
}

async function checkAfterChaos(daemon, rows) {
  await sleep(STABLE_INTERVAL_MS);
  const st = await serverStatus(daemon.socket);
  if (!st) return fail('daemon', 'mcpmux status does not answer after the kills');
  for (const s of servers) {
    const x = st[s.name];
    const row = rows[s.name];
    row.restarts = x?.restarts;
    if (x?.state !== 'ready') fail(s.name, `not ready after the kills: ${describe(x)}`);
    if (x && x.restarts > MAX_CHAOS_RESTARTS) fail(s.name, `${x.restarts} restarts after one SIGKILL (at most ${MAX_CHAOS_RESTARTS})`);
    if (x?.crash_looping) fail(s.name, 'crash-looping after one SIGKILL');
  }
  return st;
}

/** SIGTERM: exit 0 within 10 s (the daemon promises 5 s), no server process left. */
async function stopDaemon(daemon, pids) {
  say('stopping mcpmuxd (SIGTERM)');
  daemon.proc.kill('SIGTERM');
  const res = await Promise.race([daemon.exited, sleep(10000).then(() => null)]);
  if (res === null) {
    fail('daemon', 'did not exit within 10 s of SIGTERM');
    daemon.proc.kill('SIGKILL');
    await daemon.exited;
  } else if (res.code !== 0) fail('daemon', `exit after SIGTERM: code ${res.code}, signal ${res.signal}`);
  for (const [name, pid] of pids) {
    if (!pid) continue;
    try {
      process.kill(pid, 0);
      fail(name, `process ${pid} still running after the daemon stopped`);
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  }
  return res;
}

// ------------------------------------------------------------------ the table

function tableRows(rows, versions) {
  const out = [];
  for (const s of servers) {
    const row = rows[s.name];
    const r = {
      server: s.name,
      package: `${s.pkg}@${row.version}`,
      state: row.state ?? '—',
      'ready in': row.readyMs === undefined ? '—' : secs(row.readyMs),
      tools: row.tools?.length ?? '—',
      resources: row.resources ?? '—',
      templates: row.templates ?? '—',
      prompts: row.prompts ?? '—',
      call: s.call ? `${s.call.tool}: ${row.call ?? 'not run'}` : `— (${s.noCall})`,
    };
    if (chaos) {
      r['back after SIGKILL'] = row.back ?? '—';
      r.restarts = row.restarts ?? '—';
      r['call after'] = s.call ? (row.chaosCall ?? 'not run') : '—';
    }
    out.push(r);
  }
  for (const s of needsService) {
    const r = { server: s.name, package: `${s.pkg}@${versions[s.pkg]}`, state: `needs: ${s.needs}`, 'ready in': '—', tools: '—', resources: '—', templates: '—', prompts: '—', call: `— (not started: ${s.why})` };
    if (chaos) Object.assign(r, { 'back after SIGKILL': '—', restarts: '—', 'call after': '—' });
    out.push(r);
  }
  return out;
}

function textTable(rows) {
  const cols = Object.keys(rows[0]);
  const width = (c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length));
  const widths = Object.fromEntries(cols.map((c) => [c, Math.min(width(c), 90)]));
  const cell = (c, v) => {
    const s = String(v);
    return (s.length > widths[c] ? s.slice(0, widths[c] - 1) + '…' : s).padEnd(widths[c]);
  };
  const line = (r) => cols.map((c) => cell(c, r[c])).join('  ').trimEnd();
  return [line(Object.fromEntries(cols.map((c) => [c, c.toUpperCase()]))), ...rows.map(line)].join('\n');
}

function markdownTable(rows) {
  const cols = Object.keys(rows[0]);
  const esc = (v) => String(v).replaceAll('|', '\\|');
  const code = (c, v) => (c === 'package' ? `\`${v}\`` : esc(v));
  return [
    `| ${cols.join(' | ')} |`,
    `|${cols.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${cols.map((c) => code(c, r[c])).join(' | ')} |`),
  ].join('\n');
}

// ------------------------------------------------------------------ main

/** Checks node_modules holds exactly the versions package.json pins; {package: version}. */
function checkInstalled() {
  const versions = {};
  const pinned = JSON.parse(readFileSync(path.join(HERE, 'package.json'), 'utf8')).dependencies;
  for (const s of [...servers, ...needsService]) {
    const want = pinned[s.pkg];
    if (!want) usage(`${s.pkg} is not in package.json`);
    const file = path.join(MODULES, s.pkg, 'package.json');
    if (!existsSync(file)) usage(`${s.pkg} is not installed: run tests/compat/run.sh (npm ci)`);
    const have = JSON.parse(readFileSync(file, 'utf8')).version;
    if (have !== want) usage(`${s.pkg}: node_modules has ${have}, package.json pins ${want}: run npm ci`);
    versions[s.pkg] = have;
  }
  if (servers.some((s) => s.node22) && !existsSync(NODE22)) usage(`${NODE22} missing: run npm ci`);
  return versions;
}

async function main() {
  for (const bin of [MCPMUXD, MCPMUX]) if (!existsSync(bin)) usage(`binary not found: ${bin} (build first, or set MCPMUXD/MCPMUX)`);
  const versions = checkInstalled();
  const rows = Object.fromEntries(servers.map((s) => [s.name, { version: versions[s.pkg] }]));

  // A short path: Unix socket names are limited to 108 bytes.
  const dir = mkdtempSync('/tmp/mcpmux-compat-');
  for (const s of servers) {
    mkdirSync(workDir(dir, s), { recursive: true });
    s.setup?.(workDir(dir, s));
  }
  say(`temp dir ${dir}; ${servers.length} servers, ${needsService.length} more listed as needing a service${chaos ? '; --chaos' : ''}`);
  const daemon = await startDaemon(dir);
  daemon.dir = dir;
  say(`mcpmuxd pid ${daemon.proc.pid} answering on ${daemon.socket}`);

  let st = {};
  try {
    st = (await waitReady(daemon, rows)) ?? {};
    const baseline = st;
    await checkStable(daemon, baseline, STABLE_POLLS, 'after the start');
    say('listing tools, resources, templates and prompts through the daemon');
    await countLists(daemon, rows);
    say('harmless calls');
    await harmlessCalls(daemon, rows, 'call');
    if (chaos) {
      await killEach(daemon, rows);
      await checkAfterChaos(daemon, rows);
      say('harmless calls after the kills');
      await harmlessCalls(daemon, rows, 'chaosCall');
    } else {
      await checkStable(daemon, baseline, 1, 'until the end of the run');
    }
  } catch (e) {
    fail('sweep', e.stack || String(e)); // the daemon is still stopped and checked below
  }

  st = (await serverStatus(daemon.socket)) ?? st;
  // Every server runs under the default redact_results = "patterns" and every call is harmless:
  // whatever the detector replaced is a false positive.
  const redacted = Object.values(st).reduce((n, x) => n + (x.redacted?.total ?? 0), 0);
  const kinds = Object.values(st).flatMap((x) => Object.entries(x.redacted?.by_kind ?? {}).map(([k, n]) => `${x.name}: ${k} ${n}`));
  say(`redaction over the harmless calls' results: ${redacted} replaced in ${(resultBytes / 1024).toFixed(1)} KiB` +
      ` (${(redacted / Math.max(resultBytes / 1048576, 1e-9)).toFixed(2)} false positives per MB)${kinds.length ? ': ' + kinds.join(', ') : ''}`);
  for (const s of servers) rows[s.name].state = st[s.name]?.state ?? rows[s.name].state;
  const pids = Object.values(st).map((x) => [x.name, x.pid]);
  await stopDaemon(daemon, pids);

  mkdirSync(OUT, { recursive: true });
  copyFileSync(daemon.log, path.join(OUT, 'mcpmuxd.log'));
  const table = tableRows(rows, versions);
  writeFileSync(path.join(OUT, 'table.md'), markdownTable(table) + '\n');
  console.log(`\n${textTable(table)}\n`);
  console.log(`(Markdown: ${path.relative(process.cwd(), path.join(OUT, 'table.md'))}; daemon log: ${path.relative(process.cwd(), path.join(OUT, 'mcpmuxd.log'))})`);

  const ready = servers.filter((s) => rows[s.name].state === 'ready').length;
  const calls = servers.filter((s) => s.call);
  const callsOk = calls.filter((s) => rows[s.name].call === 'ok' && (!chaos || rows[s.name].chaosCall === 'ok')).length;
  console.log(`${ready}/${servers.length} servers ready, ${callsOk}/${calls.length} harmless calls ok, ${needsService.length} not started (need a service); ${secs(Date.now() - t0)}`);
  if (problems.length) {
    console.log(`\n${problems.length} failed check(s):`);
    for (const [who, msg] of problems) console.log(`  ${who}: ${msg}`);
    console.log(`\n--- daemon log, last lines:\n${readFileSync(daemon.log, 'utf8').split('\n').slice(-25).join('\n')}`);
  }
  if (process.env.KEEP_TMP || problems.length) console.log(`temp dir kept: ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
  process.exit(problems.length ? 1 : 0);
}

main().catch((e) => {
  console.error(`sweep: ${e.stack || e}`);
  process.exit(2);
});
