// The eras row: the cost of mcpmux for a 2026-07-28 client against a 2026-07-28 server (the
// official v2 client, pinned, and tests/node/modern_server.mjs on the v2 server SDK), beside the
// same for the 2025-11-25 era (the SDK 1.x client and server-everything) — each directly over
// stdio and through `mcpmux connect`, interleaved rounds in one run, best of each. Prints rows
// in run_all.sh's table format.
//
// usage: node tests/bench/eras.mjs --mcpmuxd PATH --mcpmux PATH --node-entry
//        server-everything/dist/index.js [--calls N] [--reps N]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { runCalls, printRow } from './sdk_common.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../node/package.json'));
const V1 = await import(require.resolve('@modelcontextprotocol/sdk/client/index.js'));
const V1Stdio = await import(require.resolve('@modelcontextprotocol/sdk/client/stdio.js'));
const V2 = await import(require.resolve('@modelcontextprotocol/client'));
const V2Stdio = await import(require.resolve('@modelcontextprotocol/client/stdio'));
const MODERN_JS = path.join(here, '../node/modern_server.mjs');

const opt = { calls: 2000, reps: 3 };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, '');
  const v = process.argv[i + 1];
  opt[k === 'node-entry' ? 'nodeEntry' : k] = k === 'calls' || k === 'reps' ? Number(v) : v;
}
for (const k of ['mcpmuxd', 'mcpmux', 'nodeEntry'])
  if (!opt[k] || !existsSync(opt[k])) {
    console.log(`eras      skipped: missing --${k} (${opt[k]})`);
    process.exit(0);
  }

const dir = mkdtempSync(path.join(os.tmpdir(), 'mcpmux-bench-eras-'));
const socket = path.join(dir, 'mcpmux.sock');
writeFileSync(
  path.join(dir, 'config.toml'),
  `[daemon]\nlog_level = "warn"\n\n[servers.e]\ncommand = ${JSON.stringify(process.execPath)}\n` +
    `args = [${JSON.stringify(opt.nodeEntry)}, "stdio"]\n\n[servers.m]\n` +
    `command = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(MODERN_JS)}]\n`,
);
const daemon = spawn(opt.mcpmuxd, ['--config', path.join(dir, 'config.toml'), '--socket', socket], {
  stdio: 'ignore',
  env: { ...process.env, XDG_CACHE_HOME: path.join(dir, 'cache'), XDG_STATE_HOME: path.join(dir, 'state') },
});

const legacyClient = async (command, args) => {
  const c = new V1.Client({ name: 'bench-eras', version: '1' });
  await c.connect(new V1Stdio.StdioClientTransport({ command, args, stderr: 'ignore' }));
  return c;
};
const modernClient = async (command, args) => {
  const c = new V2.Client({ name: 'bench-eras', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  // A subclass probes on the session's own process (the exact class probes on a sibling).
  class InPlace extends V2Stdio.StdioClientTransport {}
  await c.connect(new InPlace({ command, args, stderr: 'ignore' }));
  return c;
};

async function untilReady() {
  for (let i = 0; i < 600; ++i) {
    try {
      const c = await legacyClient(opt.mcpmux, ['--socket', socket, 'connect']);
      const { tools } = await c.listTools();
      await c.close();
      if (tools.some((t) => t.name === 'e__echo') && tools.some((t) => t.name === 'm__echo')) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('mcpmuxd did not list e__echo and m__echo within 60 s');
}

const run = runCalls;
const row = (what, mux, direct, cmp = '') => printRow('eras', what, mux, direct, cmp);

try {
  await untilReady();
  const connect = [opt.mcpmux, ['--socket', socket, 'connect']];
  const paths = [
    { era: '2025-11-25', via: 'direct', make: () => legacyClient(process.execPath, [opt.nodeEntry, 'stdio']), tool: 'echo', args: { message: 'x' } },
    { era: '2025-11-25', via: 'mux', make: () => legacyClient(...connect), tool: 'e__echo', args: { message: 'x' } },
    { era: '2026-07-28', via: 'direct', make: () => modernClient(process.execPath, [MODERN_JS]), tool: 'echo', args: { text: 'x' } },
    { era: '2026-07-28', via: 'mux', make: () => modernClient(...connect), tool: 'm__echo', args: { text: 'x' } },
  ];
  for (const p of paths) {
    p.client = await p.make();
    await run(p.client, p.tool, p.args, 1, Math.min(500, opt.calls));
  }
  for (let r = 0; r < opt.reps; ++r)
    for (const p of paths) {
      const s = await run(p.client, p.tool, p.args, 1, opt.calls);
      const w = await run(p.client, p.tool, p.args, 16, opt.calls);
      if (!p.seq || s.p50 < p.seq.p50) p.seq = s;
      if (!p.wide || w.rate > p.wide.rate) p.wide = w;
    }
  for (const era of ['2025-11-25', '2026-07-28']) {
    const [d, m] = ['direct', 'mux'].map((v) => paths.find((p) => p.era === era && p.via === v));
    row(`${era} echo via connect: seq p50`, `${m.seq.p50.toFixed(1)} µs`, `${d.seq.p50.toFixed(1)} µs`, `+${(m.seq.p50 - d.seq.p50).toFixed(1)} µs`);
    row(`${era} echo via connect: calls/s at 16`, `${Math.round(m.wide.rate)}/s`, `${Math.round(d.wide.rate)}/s`, `${((100 * m.wide.rate) / d.wide.rate).toFixed(0)} % of direct`);
  }
  for (const p of paths) await p.client.close();
} finally {
  daemon.kill('SIGTERM');
  await new Promise((r) => daemon.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
