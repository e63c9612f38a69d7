// daemon.mjs — runs mcpmuxd for the tool-search benchmarks: a config with fixture servers and
// profiles, the daemon on a temp dir (through tests/node/harness.mjs's Daemon), SDK clients
// through `mcpmux connect --profile`, and reading mcpmux__search_tools answers.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { configToml, Daemon, MCPMUX, MCPMUXD, sleep } from '../../node/harness.mjs';
import { FIXTURE_SERVER, connectRaw } from './common.mjs';

export { MCPMUX, MCPMUXD };

/** The TOML of `[profiles.NAME]` tables from {name: {key: value}} (strings and string arrays). */
export function profilesToml(profiles) {
  const val = (v) => (Array.isArray(v) ? `[${v.map((x) => JSON.stringify(String(x))).join(', ')}]` : JSON.stringify(v));
  return Object.entries(profiles)
    .map(([name, p]) => `\n[profiles.${name}]\n${Object.entries(p).map(([k, v]) => `${k} = ${val(v)}\n`).join('')}`)
    .join('');
}

/** `[servers.NAME]` tables for fixture servers: {name: fixture file}, each run as `node fixture_server.mjs FILE`. */
export function fixtureServers(files, extra = {}) {
  return Object.fromEntries(
    Object.entries(files).map(([name, file]) => [name, { command: process.execPath, args: [FIXTURE_SERVER, file], ...extra }]),
  );
}

/**
 * Starts mcpmuxd on a fresh temp dir with {daemon, servers} (as tests/node/harness.mjs's
 * configToml takes them) plus `profiles` ({name: {exposure, ...}}), which that harness does not
 * write; returns the harness's Daemon (status, waitReady, stop, pid, socket, dir, logTail). The
 * per-user dirs (cache, state, config) are kept in the temp dir, as the harness does. Waits until
 * the socket answers, then (unless `waitReady` is 0) until every server is ready.
 */
export async function startDaemon({ daemon = {}, servers = {}, profiles = {} }, { logLevel = 'info', waitReady = 60000, onSocket } = {}) {
  for (const bin of [MCPMUXD, MCPMUX])
    if (!existsSync(bin)) throw new Error(`binary not found: ${bin} (build first, or set MCPMUXD and MCPMUX)`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mcpmux-search-bench-'));
  const cfg = { daemon: { log_level: logLevel, ...daemon }, servers };
  const configFile = path.join(dir, 'config.toml');
  writeFileSync(configFile, configToml(cfg) + profilesToml(profiles));
  const logFile = path.join(dir, 'mcpmuxd.log');
  const logFd = openSync(logFile, 'a');
  const socket = path.join(dir, 'mcpmux.sock');
  const proc = spawn(MCPMUXD, ['--config', configFile, '--socket', socket, '--log-level', logLevel], {
    stdio: ['ignore', logFd, logFd],
    env: {
      ...process.env,
      XDG_CACHE_HOME: path.join(dir, 'cache'),
      XDG_STATE_HOME: path.join(dir, 'state'),
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      XDG_RUNTIME_DIR: dir,
    },
  });
  closeSync(logFd);
  const d = new Daemon(dir, cfg, proc, logFile);
  const fail = (msg) => {
    proc.kill('SIGKILL');
    throw new Error(`${msg}\n--- config: ${configFile}\n--- daemon log:\n${d.logTail()}`);
  };
  const deadline = Date.now() + 10000;
  for (;;) {
    if (proc.exitCode !== null || proc.signalCode !== null) fail(`mcpmuxd exited early (${proc.exitCode ?? proc.signalCode}):\n${readFileSync(configFile, 'utf8').slice(0, 2000)}`);
    if (existsSync(socket) && (await d.status())) break;
    if (Date.now() > deadline) fail(`mcpmuxd socket ${socket} not answering within 10 s`);
    await sleep(20);
  }
  await onSocket?.(d);
  if (waitReady) await d.waitReady(waitReady).catch((e) => fail(e.message));
  return d;
}

/** Connects the SDK client to the daemon through `mcpmux --socket S connect --profile P` (see connectRaw). */
export async function connectProfile(daemon, profile) {
  return connectRaw({ command: MCPMUX, args: ['--socket', daemon.socket, 'connect', '--profile', profile] });
}

/** The ranked tools of a mcpmux__search_tools result: structuredContent.tools, else content[0].text's. */
export function searchHits(result) {
  const text = result.content?.find((c) => c.type === 'text')?.text;
  if (result.isError) throw new Error(`mcpmux__search_tools failed: ${text}`);
  const tools = result.structuredContent?.tools ?? (text ? JSON.parse(text).tools : undefined);
  if (!Array.isArray(tools)) throw new Error(`mcpmux__search_tools: no tools array in ${JSON.stringify(result).slice(0, 300)}`);
  return tools;
}

/** RSS and peak RSS of a process in KiB, from /proc/PID/status. */
export function rssKiB(pid) {
  const st = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rss: Number(/^VmRSS:\s+(\d+)/m.exec(st)?.[1]), hwm: Number(/^VmHWM:\s+(\d+)/m.exec(st)?.[1]) };
}
