// retrieval.mjs — how well mcpmuxd's tool search finds the right tool, and what it saves.
//
// usage: node tests/bench/search/retrieval.mjs [--verbose] [--json] [--min-recall5 X]
//                                              [--min-recall1 X] [--dry]
//
// Every fixture in fixtures/ runs as a server (fixture_server.mjs) behind one mcpmuxd whose
// config has the profiles `everything` (exposure "all") and `search` (exposure "search"). An
// SDK client on `mcpmux connect --profile search` asks mcpmux__search_tools {query: task,
// limit: 5} for every task of tasks.json and the labelled tool is looked for in the answer:
// recall@1, recall@5 and MRR over the top 5. Then the tools/list of each profile is counted in
// tokens (JSON.stringify of its tools array, o200k_base and cl100k_base of gpt-tokenizer), and
// one found tool is called end to end through mcpmux__call_tool.
//
// The figures are given for all tasks and for each half of them (common.mjs's isHeldOut, by a
// hash of each task's text): the search is tuned on the tuning half only, so the held-out
// half's figures are the honest ones, and the floors are judged on it.
//
//   --verbose        list the tuning half's misses: task -> expected, top 3 returned (not the
//                    held-out half's: tuning must not look at them)
//   --json           print one JSON object of the figures instead of the report
//   --min-recall5 X  exit 1 when the held-out half's recall@5 < X (0..1)
//   --min-recall1 X  exit 1 when the held-out half's recall@1 < X (0..1)
//   --dry            no daemon: rank with a naive keyword-overlap baseline in JS instead, to try
//                    the task set and the scoring; its figures are the baseline's, not mcpmux's
//
// Binaries: $MCPMUXD and $MCPMUX (default build/daemon/). Exit 1 on a failed check or threshold.
import assert from 'node:assert/strict';
import { exposedName, importNode, isHeldOut, loadFixtures, loadTasks, minimalValue, parseArgs } from './common.mjs';

const LIMIT = 5;
const opt = parseArgs(
  process.argv.slice(2),
  { verbose: 'bool', json: 'bool', dry: 'bool', 'min-recall5': 'number', 'min-recall1': 'number' },
  'usage: node tests/bench/search/retrieval.mjs [--verbose] [--json] [--min-recall5 X] [--min-recall1 X] [--dry]',
);
const log = opt.json ? () => {} : (...a) => console.log(...a);

const o200k = await importNode('gpt-tokenizer/encoding/o200k_base');
const cl100k = await importNode('gpt-tokenizer/encoding/cl100k_base');
/** Tokens of a tools array as a client's model would see it (its JSON). */
const tokens = (tools) => {
  const s = JSON.stringify(tools);
  return { o200k_base: o200k.countTokens(s), cl100k_base: cl100k.countTokens(s) };
};

/**
 * Ranks every task: `rank(task)` resolves the exposed names, best first (top LIMIT used).
 * Returns each task's rank of its tool (1-based, null when not in the top LIMIT) and top LIMIT.
 */
async function rankAll(tasks, rank) {
  const out = [];
  for (const t of tasks) {
    const got = (await rank(t)).slice(0, LIMIT);
    const i = got.indexOf(exposedName(t.server, t.tool));
    out.push({ t, rank: i >= 0 ? i + 1 : null, got });
  }
  return out;
}

/** recall@1, recall@5, MRR@5 and the misses (expected not first) of some ranked tasks. */
function figures(ranked) {
  const n = ranked.length;
  const sum = (f) => ranked.reduce((a, r) => a + f(r), 0);
  return {
    tasks: n,
    recall1: sum((r) => (r.rank === 1 ? 1 : 0)) / n,
    recall5: sum((r) => (r.rank ? 1 : 0)) / n,
    mrr5: sum((r) => (r.rank ? 1 / r.rank : 0)) / n,
    misses: ranked
      .filter((r) => r.rank !== 1)
      .map((r) => ({ task: r.t.task, expected: exposedName(r.t.server, r.t.tool), rank: r.rank, top3: r.got.slice(0, 3) })),
  };
}

/** The figures of all tasks, with those of the tuning and the held-out half under `halves`. */
async function score(tasks, rank) {
  const ranked = await rankAll(tasks, rank);
  const half = (held) => {
    const { misses, ...rest } = figures(ranked.filter((r) => isHeldOut(r.t) === held));
    return { ...rest, misses: misses.length };
  };
  return { ...figures(ranked), halves: { tuning: half(false), heldOut: half(true) } };
}

// --- the naive baseline (--dry) ------------------------------------------------------------

const STOP = new Set(
  'a an and are as at be by can do does for from get give how i in into is it its me my of on or our show so that the their them there these this to up use using want was we what when where which who why will with you your'.split(' '),
);
/** Lower-case words of 2+ characters, without stop words, a trailing plural "s" dropped. */
const words = (s) =>
  String(s)
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 1 && !STOP.has(w))
    .map((w) => (w.length > 3 && w.endsWith('s') && !w.endsWith('ss') ? w.slice(0, -1) : w));

/** Baseline ranking: tools by how many distinct query words occur in server + name + description. */
function keywordRanker(fixtures) {
  const docs = fixtures.flatMap((f) =>
    f.tools.map((t) => ({ name: exposedName(f.server, t.name), terms: new Set(words(`${f.server} ${t.name} ${t.description ?? ''}`)) })),
  );
  return (t) => {
    const q = [...new Set(words(t.task))];
    return docs
      .map((d, i) => ({ name: d.name, i, s: q.filter((w) => d.terms.has(w)).length }))
      .sort((a, b) => b.s - a.s || a.i - b.i)
      .map((d) => d.name);
  };
}

// --- reporting -----------------------------------------------------------------------------

const pct = (x) => `${(100 * x).toFixed(1)}%`;
function report(figs, label) {
  log(`${label}`);
  log(`  tasks ${figs.tasks}, tools ${figs.tools} in ${figs.servers} servers`);
  const line = (what, f, misses) =>
    log(`  ${what.padEnd(18)} recall@1 ${pct(f.recall1)}   recall@5 ${pct(f.recall5)}   MRR@5 ${f.mrr5.toFixed(3)}   misses (not first) ${misses}`);
  line(`all ${figs.tasks}`, figs, figs.misses.length);
  line(`tuning half ${figs.halves.tuning.tasks}`, figs.halves.tuning, figs.halves.tuning.misses);
  line(`held-out half ${figs.halves.heldOut.tasks}`, figs.halves.heldOut, figs.halves.heldOut.misses);
  if (opt.verbose)
    for (const m of figs.misses.filter((x) => !isHeldOut(x)))
      log(`  miss: ${m.task}\n        -> ${m.expected} (${m.rank ? `rank ${m.rank}` : 'not in top 5'}); got ${m.top3.join(', ') || '(nothing)'}`);
}
const tokenLine = (what, n, t) => `  ${what.padEnd(22)} ${String(n).padStart(5)} tools ${String(t.o200k_base).padStart(8)} tokens o200k_base ${String(t.cl100k_base).padStart(8)} cl100k_base`;

/** Prints the JSON (--json) and applies --min-recall5 and --min-recall1 (held-out half) to process.exitCode. */
function finish(figs) {
  const { misses, ...rest } = figs;
  if (opt.json) console.log(JSON.stringify({ ...rest, misses: opt.verbose ? misses : misses.length }, null, 2));
  for (const k of ['recall5', 'recall1']) {
    const floor = opt[`min-${k}`];
    const got = figs.halves.heldOut[k];
    if (floor !== undefined && got < floor) {
      console.error(`held-out ${k.replace('recall', 'recall@')} ${pct(got)} is below --min-${k} ${pct(floor)}`);
      process.exitCode = 1;
    }
  }
}

// --- main ----------------------------------------------------------------------------------

const fixtures = loadFixtures();
const tasks = loadTasks(fixtures); // throws on a label that names no fixture tool
const toolCount = fixtures.reduce((n, f) => n + f.tools.length, 0);
const base = { tasks: tasks.length, tools: toolCount, servers: fixtures.length, limit: LIMIT };

if (opt.dry) {
  const figs = { mode: 'dry: naive keyword-overlap baseline (no daemon)', ...base, ...(await score(tasks, keywordRanker(fixtures))) };
  // The all-tools list as the daemon would show it (names prefixed), counted from the fixtures.
  const all = fixtures.flatMap((f) => f.tools.map((t) => ({ ...t, name: exposedName(f.server, t.name) })));
  figs.tokens = { everything: { tools: all.length, ...tokens(all) } };
  report(figs, 'BASELINE (--dry): naive keyword overlap in JS, not mcpmuxd');
  log(tokenLine('all tools (fixtures)', all.length, figs.tokens.everything));
  finish(figs);
  process.exit();
}

const { connectProfile, fixtureServers, searchHits, startDaemon } = await import('./daemon.mjs');
const daemon = await startDaemon({
  daemon: { timeout_ms: 60000 },
  servers: fixtureServers(Object.fromEntries(fixtures.map((f) => [f.server, f.file]))),
  profiles: { everything: { exposure: 'all' }, search: { exposure: 'search' } },
});
const conns = [];
try {
  const everything = await connectProfile(daemon, 'everything');
  const search = await connectProfile(daemon, 'search');
  conns.push(everything, search);

  // What each profile lists.
  const allTools = await everything.listRawTools();
  const searchTools = await search.listRawTools();
  const listed = new Set(allTools.map((t) => t.name));
  const absent = fixtures.flatMap((f) => f.tools.map((t) => exposedName(f.server, t.name))).filter((n) => !listed.has(n));
  assert.deepEqual(absent, [], `profile everything lists ${allTools.length} tools; these fixture tools are not among them`);
  if (allTools.length !== toolCount) log(`note: profile everything lists ${allTools.length} tools, the fixtures have ${toolCount}`);
  assert.deepEqual(searchTools.map((t) => t.name).sort(), ['mcpmux__call_tool', 'mcpmux__search_tools'], 'profile search lists');

  // The searches.
  const hitsByTask = new Map();
  const t0 = process.hrtime.bigint();
  const figs = {
    mode: 'mcpmuxd search (mcpmux__search_tools through mcpmux connect --profile search)',
    ...base,
    ...(await score(tasks, async (t) => {
      const r = await search.client.callTool({ name: 'mcpmux__search_tools', arguments: { query: t.task, limit: LIMIT } });
      const hits = searchHits(r);
      assert.ok(hits.length <= LIMIT, `search returned ${hits.length} tools for limit ${LIMIT}`);
      hitsByTask.set(t, hits);
      return hits.map((h) => h.name);
    })),
  };
  figs.searchMeanMs = Number(process.hrtime.bigint() - t0) / 1e6 / tasks.length;
  figs.tokens = {
    everything: { tools: allTools.length, ...tokens(allTools) },
    search: { tools: searchTools.length, ...tokens(searchTools) },
  };
  report(figs, 'mcpmuxd tool search');
  log(`  mean search call ${figs.searchMeanMs.toFixed(2)} ms (SDK client round trip included)`);
  log('tools/list size (JSON of the tools array)');
  log(tokenLine('profile everything', allTools.length, figs.tokens.everything));
  log(tokenLine('profile search', searchTools.length, figs.tokens.search));
  log(`  saved ${(100 * (1 - figs.tokens.search.o200k_base / figs.tokens.everything.o200k_base)).toFixed(1)}% of the o200k tokens`);

  // One found tool, called end to end: the first task whose tool came first.
  const found = tasks.find((t) => hitsByTask.get(t)?.[0]?.name === exposedName(t.server, t.tool));
  assert.ok(found, 'no task found its tool first: nothing to call');
  const hit = hitsByTask.get(found)[0];
  assert.equal(hit.server, found.server, `hit ${hit.name}: server`);
  const args = minimalValue(hit.inputSchema ?? { type: 'object' }, 'mcpmux-bench') ?? {};
  const r = await search.client.callTool({ name: 'mcpmux__call_tool', arguments: { name: hit.name, arguments: args } });
  const text = r.content?.find((c) => c.type === 'text')?.text ?? '';
  const prefix = `called ${found.tool} with `;
  assert.ok(!r.isError && text.startsWith(prefix), `mcpmux__call_tool ${hit.name}: got ${JSON.stringify(r).slice(0, 400)}`);
  assert.deepEqual(JSON.parse(text.slice(prefix.length)), args, 'arguments as the server received them');
  figs.call = { name: hit.name, arguments: args, ok: true };
  log(`end to end: mcpmux__call_tool ${hit.name} ${JSON.stringify(args)} -> "${text}" ok`);
  finish(figs);
} finally {
  for (const c of conns) await c.client.close().catch(() => {});
  await daemon.stop().catch((e) => {
    console.error(e.message);
    process.exitCode = 1;
  });
}
process.exit();
