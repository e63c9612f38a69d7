// latency.mjs — mcpmuxd's tool search over a catalogue of 10,000+ tools: latency and memory.
//
// usage: node tests/bench/search/latency.mjs [--tools N] [--servers N] [--queries N] [--json] [--keep]
//
// The real fixtures are replicated (copy 00, 01, ... of every fixture, each tool renamed
// `<fixture server><copy>_<tool>`, e.g. github07_create_issue) until there are at least
// --tools tools (default 10000), and dealt out to --servers fixture servers (default 40, named
// s00...) whose fixture files are written to a temp dir. One mcpmuxd serves them with the
// profiles `everything` and `search`. Once the `everything` profile lists every tool, one SDK
// client on `mcpmux connect --profile search` makes --queries (default 500) sequential
// mcpmux__search_tools calls {query: a task of tasks.json, limit: 5}, after 20 untimed ones.
// Printed: p50/p90/p99 of those calls in ms — measured in the client, so each includes the
// round trip SDK client -> mcpmux connect -> daemon and back; the same for ping, that round
// trip's floor — and the daemon's VmRSS (/proc/PID/status) when its socket first answers
// (servers still starting), once every tool is listed, and after the searches.
// Binaries: $MCPMUXD and $MCPMUX (default build/daemon/).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadFixtures, loadTasks, parseArgs, percentile } from './common.mjs';
import { connectProfile, fixtureServers, rssKiB, searchHits, startDaemon } from './daemon.mjs';

const opt = {
  tools: 10000,
  servers: 40,
  queries: 500,
  ...parseArgs(
    process.argv.slice(2),
    { tools: 'number', servers: 'number', queries: 'number', json: 'bool', keep: 'bool' },
    'usage: node tests/bench/search/latency.mjs [--tools N] [--servers N] [--queries N] [--json] [--keep]',
  ),
};
const log = opt.json ? () => {} : (...a) => console.log(...a);
const WARMUP = 20;

/** Every tool of `copies` renamed copies of the fixtures, dealt into `n` fixture objects s00, s01, ... */
function bigFixtures(fixtures, minTools, n) {
  const perCopy = fixtures.reduce((k, f) => k + f.tools.length, 0);
  const copies = Math.ceil(minTools / perCopy);
  const width = String(copies - 1).length < 2 ? 2 : String(copies - 1).length;
  const tools = [];
  for (let c = 0; c < copies; ++c)
    for (const f of fixtures)
      for (const t of f.tools) tools.push({ ...t, name: `${f.server}${String(c).padStart(width, '0')}_${t.name}` });
  const size = Math.ceil(tools.length / n);
  const captured = new Date().toISOString().slice(0, 10);
  return {
    copies,
    total: tools.length,
    servers: Array.from({ length: n }, (_, i) => ({
      server: `s${String(i).padStart(2, '0')}`,
      source: `replicated from tests/bench/search/fixtures by latency.mjs`,
      captured,
      tools: tools.slice(i * size, (i + 1) * size),
    })).filter((s) => s.tools.length),
  };
}

/** Times `n` sequential calls of `fn(i)` in ms (after `warmup` untimed ones): {p50, p90, p99, mean, max}. */
async function timeCalls(n, warmup, fn) {
  for (let i = 0; i < warmup; ++i) await fn(i);
  const ms = [];
  for (let i = 0; i < n; ++i) {
    const t0 = process.hrtime.bigint();
    await fn(i);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ms.sort((a, b) => a - b);
  const round = (x) => Math.round(x * 1000) / 1000;
  return {
    n,
    p50: round(percentile(ms, 50)),
    p90: round(percentile(ms, 90)),
    p99: round(percentile(ms, 99)),
    mean: round(ms.reduce((a, b) => a + b, 0) / n),
    max: round(ms[n - 1]),
  };
}

const fixtures = loadFixtures();
const queries = loadTasks(fixtures).map((t) => t.task);
const big = bigFixtures(fixtures, opt.tools, opt.servers);
const dir = mkdtempSync(path.join(os.tmpdir(), 'mcpmux-search-latency-'));
mkdirSync(path.join(dir, 'fixtures'));
const files = {};
for (const s of big.servers) {
  files[s.server] = path.join(dir, 'fixtures', `${s.server}.json`);
  writeFileSync(files[s.server], JSON.stringify(s));
}
log(`catalogue: ${big.total} tools = ${big.copies} copies of ${fixtures.length} fixtures, over ${big.servers.length} fixture servers (in ${dir})`);

const figs = { tools: big.total, servers: big.servers.length, copies: big.copies, rssKiB: {} };
const t0 = Date.now();
const daemon = await startDaemon(
  {
    daemon: { log_level: 'warn' },
    servers: fixtureServers(files, { timeout_ms: 120000 }),
    profiles: { everything: { exposure: 'all' }, search: { exposure: 'search' } },
  },
  { logLevel: 'warn', waitReady: 180000, onSocket: (d) => (figs.rssKiB.atSocket = rssKiB(d.pid).rss) },
);
const conns = [];
try {
  figs.readyS = (Date.now() - t0) / 1000;
  // Every tool listed in the everything profile (pages followed), not just every server ready.
  const everything = await connectProfile(daemon, 'everything');
  conns.push(everything);
  let listed = 0;
  for (const deadline = Date.now() + 120000; ; ) {
    listed = (await everything.listRawTools()).length;
    if (listed >= big.total || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  assert.equal(listed, big.total, `profile everything lists ${listed} of ${big.total} tools\n${daemon.logTail()}`);
  figs.loadedS = (Date.now() - t0) / 1000;
  figs.rssKiB.loaded = rssKiB(daemon.pid).rss;
  await everything.client.close();
  conns.length = 0;
  log(`loaded: every server ready after ${figs.readyS.toFixed(1)} s, all ${listed} tools listed after ${figs.loadedS.toFixed(1)} s`);

  const search = await connectProfile(daemon, 'search');
  conns.push(search);
  let empty = 0;
  figs.search = await timeCalls(opt.queries, WARMUP, async (i) => {
    const r = await search.client.callTool({ name: 'mcpmux__search_tools', arguments: { query: queries[i % queries.length], limit: 5 } });
    if (!searchHits(r).length) ++empty;
  });
  assert.equal(empty, 0, `${empty} searches found nothing`);
  figs.ping = await timeCalls(opt.queries, WARMUP, () => search.client.ping());
  figs.rssKiB.afterSearches = rssKiB(daemon.pid).rss;
  figs.rssKiB.peak = rssKiB(daemon.pid).hwm;

  const row = (what, s) => log(`  ${what.padEnd(34)} p50 ${s.p50.toFixed(2).padStart(7)}  p90 ${s.p90.toFixed(2).padStart(7)}  p99 ${s.p99.toFixed(2).padStart(7)}  mean ${s.mean.toFixed(2).padStart(7)}  max ${s.max.toFixed(2).padStart(7)} ms`);
  log(`latency over ${opt.queries} sequential calls on one connection (client side: SDK client -> mcpmux connect -> mcpmuxd and back)`);
  row(`mcpmux__search_tools, ${big.total} tools`, figs.search);
  row('ping (the round trip alone)', figs.ping);
  const mib = (k) => `${(k / 1024).toFixed(1)} MiB`;
  log(`mcpmuxd RSS: ${mib(figs.rssKiB.atSocket)} when its socket first answered, ${mib(figs.rssKiB.loaded)} with all tools loaded, ${mib(figs.rssKiB.afterSearches)} after the searches (peak ${mib(figs.rssKiB.peak)})`);
  if (opt.json) console.log(JSON.stringify(figs, null, 2));
} finally {
  for (const c of conns) await c.client.close().catch(() => {});
  await daemon.stop().catch((e) => {
    console.error(e.message);
    process.exitCode = 1;
  });
  if (opt.keep) console.error(`kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
process.exit();
