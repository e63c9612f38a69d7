// The floor row for the official TypeScript SDK client: server-everything's echo over stdio
// directly, through one and two plain relays (tests/bench/relay.cpp), through mcpmux with the
// client on its socket and through `mcpmux connect` — interleaved rounds in one run, best of
// each. Prints rows in run_all.sh's table format and `target:` lines.
//
// usage: node tests/bench/sdk_floor.mjs --mcpmuxd PATH --mcpmux PATH --relay PATH
//        --node-entry server-everything/dist/index.js [--calls N] [--reps N]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { runCalls, printRow } from './sdk_common.mjs';

// The SDK is installed for the node tests; resolve it from there.
const require = createRequire(
  path.join(path.dirname(fileURLToPath(import.meta.url)), '../node/package.json'),
);
const { Client } = await import(require.resolve('@modelcontextprotocol/sdk/client/index.js'));
const { StdioClientTransport } = await import(
  require.resolve('@modelcontextprotocol/sdk/client/stdio.js')
);
const { ReadBuffer, serializeMessage } = await import(
  require.resolve('@modelcontextprotocol/sdk/shared/stdio.js')
);

const opt = { calls: 2000, reps: 3 };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, '');
  const v = process.argv[i + 1];
  opt[k === 'node-entry' ? 'nodeEntry' : k] = k === 'calls' || k === 'reps' ? Number(v) : v;
}
for (const k of ['mcpmuxd', 'mcpmux', 'relay', 'nodeEntry'])
  if (!opt[k] || !existsSync(opt[k])) {
    console.log(`sdk-floor skipped: missing --${k} (${opt[k]})`);
    process.exit(0);
  }

/** An SDK transport over mcpmux's Unix socket: newline-delimited JSON-RPC, as the bridge. */
class SocketTransport {
  constructor(socketPath) {
    this.path = socketPath;
    this.buf = new ReadBuffer();
  }
  start() {
    return new Promise((resolve, reject) => {
      this.sock = net.connect(this.path, resolve);
      this.sock.once('error', reject);
      this.sock.on('data', (chunk) => {
        this.buf.append(chunk);
        for (let m; (m = this.buf.readMessage()); ) this.onmessage?.(m);
      });
      this.sock.on('close', () => this.onclose?.());
    });
  }
  send(message) {
    return new Promise((resolve) => this.sock.write(serializeMessage(message), resolve));
  }
  async close() {
    this.sock?.end();
  }
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'mcpmux-sdk-floor-'));
const socket = path.join(tmp, 'mcpmux.sock');
writeFileSync(
  path.join(tmp, 'config.toml'),
  `[daemon]\nlog_level = "warn"\n\n[servers.e]\ncommand = ${JSON.stringify(process.execPath)}\n` +
    `args = [${JSON.stringify(opt.nodeEntry)}, "stdio"]\n`,
);
const daemon = spawn(opt.mcpmuxd, ['--config', path.join(tmp, 'config.toml'), '--socket', socket], {
  stdio: 'ignore',
  env: { ...process.env, XDG_CACHE_HOME: tmp, XDG_STATE_HOME: tmp },
});

const server = [process.execPath, opt.nodeEntry, 'stdio'];
const stdio = (argv) => () =>
  new StdioClientTransport({ command: argv[0], args: argv.slice(1), stderr: 'ignore' });
const paths = [
  { name: 'direct', make: stdio(server), tool: 'echo' },
  { name: 'relay x1', make: stdio([opt.relay, ...server]), tool: 'echo' },
  { name: 'relay x2', make: stdio([opt.relay, opt.relay, ...server]), tool: 'echo' },
  { name: 'mux socket', make: () => new SocketTransport(socket), tool: 'e__echo' },
  { name: 'mux connect', make: stdio([opt.mcpmux, '--socket', socket, 'connect']), tool: 'e__echo' },
];

async function untilReady() {
  for (let i = 0; i < 600; ++i) {
    if (existsSync(socket)) {
      const c = new Client({ name: 'sdk-floor', version: '1' });
      try {
        await c.connect(new SocketTransport(socket));
        const { tools } = await c.listTools();
        await c.close();
        if (tools.some((t) => t.name === 'e__echo')) return;
      } catch {
        /* not yet */
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('mcpmuxd did not list e__echo within 60 s');
}

const run = (client, tool, depth, n) => runCalls(client, tool, { message: 'x' }, depth, n);
const row = (what, mux, direct, cmp = '') => printRow('sdk-floor', what, mux, direct, cmp);
const target = (what, limit, value, met) =>
  console.log(`target: ${what.padEnd(52)} ${limit.padEnd(12)} ${value.padStart(14)}   ${met ? 'met' : 'MISSED'}`);

try {
  await untilReady();
  for (const p of paths) {
    p.client = new Client({ name: 'sdk-floor', version: '1' });
    await p.client.connect(p.make());
    await run(p.client, p.tool, 16, 500); // warm-up: JIT, connections, caches
  }
  for (let r = 0; r < opt.reps; ++r)
    for (const p of paths) {
      const seq = await run(p.client, p.tool, 1, opt.calls);
      const wide = await run(p.client, p.tool, 16, opt.calls);
      if (!p.seq || seq.p50 < p.seq.p50) p.seq = seq;
      if (!p.wide || wide.rate > p.wide.rate) p.wide = wide;
    }
  const base = paths[0].seq.p50;
  for (const p of paths)
    row(
      `${p.name}: seq p50 / calls/s at 16`,
      `${p.seq.p50.toFixed(1)} µs / ${Math.round(p.wide.rate)}/s`,
      p.name === 'direct' ? '-' : `+${(p.seq.p50 - base).toFixed(1)} µs`,
    );
  const compare = (mux, relay, hops) => {
    const muxAdd = mux.seq.p50 - base;
    const relayAdd = relay.seq.p50 - base;
    const lat = relayAdd > 0 ? muxAdd / relayAdd : 0;
    const rate = (100 * mux.wide.rate) / relay.wide.rate;
    row(`${hops}: added p50, ${mux.name} vs ${relay.name}`, `+${muxAdd.toFixed(1)} µs`,
      `+${relayAdd.toFixed(1)} µs`, `${lat.toFixed(2)}× the relay`);
    row(`${hops}: 16 in flight, ${mux.name} vs ${relay.name}`, `${Math.round(mux.wide.rate)}/s`,
      `${Math.round(relay.wide.rate)}/s`, `${rate.toFixed(0)} % of the relay`);
    target(`sdk-floor: ${hops} added p50 within 1.2× the relay`, '<= 1.20×', `${lat.toFixed(2)}×`, lat <= 1.2);
    target(`sdk-floor: ${hops} throughput at 16 vs the relay`, '>= 95 %', `${rate.toFixed(0)} %`, rate >= 95);
  };
  compare(paths[3], paths[1], '1 hop');
  compare(paths[4], paths[2], '2 hops');
} finally {
  for (const p of paths) await p.client?.close().catch(() => {});
  daemon.kill('SIGTERM');
  await new Promise((r) => daemon.once('exit', r));
  rmSync(tmp, { recursive: true, force: true });
}
