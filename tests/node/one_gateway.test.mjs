// One gateway whatever environment an agent passes: official SDK clients (1.x and 2.x) that give
// `mcpmux connect --spawn` only their default environment (HOME, LOGNAME, PATH, SHELL, TERM,
// USER: no $XDG_RUNTIME_DIR) reach the daemon already running on $XDG_RUNTIME_DIR, and no second
// daemon starts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as V2Client } from '@modelcontextprotocol/client';
import { StdioClientTransport as V2Stdio } from '@modelcontextprotocol/client/stdio';
import { MCPMUX, MCPMUXD, FAKE_MCP_SERVER, waitFor } from './harness.mjs';

/** Live mcpmuxd processes whose environment has HOME=home. */
function daemonsOf(home) {
  const pids = [];
  const isDaemon = (pid) => {
    try { return readFileSync(`/proc/${pid}/comm`, 'utf8') === 'mcpmuxd\n'; } catch { return false; }
  };
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!isDaemon(entry)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (/^\S+ \(\S+\) Z/.test(stat)) continue;
      // A daemon's child between its fork and its exec (a server starting) has the daemon's
      // name too: not a daemon of its own.
      const ppid = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
      if (isDaemon(ppid)) continue;
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(`HOME=${home}`)) pids.push(Number(entry));
    } catch { /* gone meanwhile */ }
  }
  return pids;
}

/** Runs `fn` with process.env.HOME set to `home` and no XDG_RUNTIME_DIR (what the SDKs read). */
async function withAgentEnvironment(home, fn) {
  const saved = { HOME: process.env.HOME, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR };
  process.env.HOME = home;
  delete process.env.XDG_RUNTIME_DIR;
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
  }
}

test('SDK clients with their default environment find the daemon on $XDG_RUNTIME_DIR', async () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'mcpmux-gateway-'));
  const home = path.join(tmp, 'home');
  const run = path.join(tmp, 'run');
  const socket = path.join(run, 'mcpmux/mcpmux.sock');
  mkdirSync(run, { mode: 0o700 });
  mkdirSync(path.join(home, '.config/mcpmux'), { recursive: true });
  writeFileSync(path.join(home, '.config/mcpmux/config.toml'), `[servers.alpha]\ncommand = ${JSON.stringify(FAKE_MCP_SERVER)}\n`);
  const log = openSync(path.join(tmp, 'mcpmuxd.log'), 'a');
  // The daemon as a login starts it: $XDG_RUNTIME_DIR set, no daemon.socket in the config.
  const daemon = spawn(MCPMUXD, ['--log-level', 'debug'], {
    env: { PATH: process.env.PATH, HOME: home, XDG_RUNTIME_DIR: run },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  try {
    assert.ok(await waitFor(() => existsSync(socket), 10000), 'the daemon did not listen on $XDG_RUNTIME_DIR');
    assert.deepEqual(daemonsOf(home), [daemon.pid]);

    for (const [era, make] of [
      ['1.x', () => [new Client({ name: 'agent-1x', version: '1.0.0' }), new StdioClientTransport({ command: MCPMUX, args: ['connect', '--spawn'], stderr: 'pipe' })]],
      ['2.x', () => [new V2Client({ name: 'agent-2x', version: '1.0.0' }), new V2Stdio({ command: MCPMUX, args: ['connect', '--spawn'], stderr: 'pipe' })]],
    ]) {
      const [client, transport] = await withAgentEnvironment(home, async () => {
        const [c, t] = make();
        await c.connect(t);  // the transport spawns here, reading process.env
        return [c, t];
      });
      try {
        const { tools } = await client.listTools();
        assert.ok(tools.some((t) => t.name === 'alpha__echo'), `${era}: ${JSON.stringify(tools.map((t) => t.name))}`);
        const r = await client.callTool({ name: 'alpha__echo', arguments: { text: era } });
        assert.equal(r.content[0].text, era);
        assert.deepEqual(daemonsOf(home), [daemon.pid], `${era}: a second daemon started`);
      } finally {
        await client.close();
      }
    }
  } finally {
    daemon.kill('SIGTERM');
    await waitFor(() => daemon.exitCode !== null, 5000);
    for (const pid of daemonsOf(home)) process.kill(pid, 'SIGKILL');
  }
  assert.equal(daemon.exitCode, 0, readFileSync(path.join(tmp, 'mcpmuxd.log'), 'utf8'));
  assert.ok(!existsSync(path.join(home, '.local/state/mcpmux/daemon-socket')), 'the record outlived its daemon');
  rmSync(tmp, { recursive: true, force: true });
});
