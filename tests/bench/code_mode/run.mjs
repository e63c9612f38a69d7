// run.mjs — the code-mode benchmark: the tokens that enter an agent's context, and its turns, for
// the tasks of tasks.mjs in `all`, `search` and `code` exposure, against the real servers behind
// mcpmuxd; then the cost of a call made inside a program against a direct one. See README.md.
//
// usage: node tests/bench/code_mode/run.mjs [--json] [--min-saving F] [--modes all,search,code]
//                                           [--only ID,...] [--inner N] [--keep]
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EVERYTHING_JS, FILESYSTEM_JS, MEMORY_JS, NODE } from '../../node/harness.mjs';
import { importNode, parseArgs, percentile } from '../search/common.mjs';
import { connectProfile, MCPMUX, MCPMUXD, searchHits, startDaemon } from '../search/daemon.mjs';
import { memoryJsonl, stateDigest, writeTree } from './fixture.mjs';
import { TASKS } from './tasks.mjs';

const USAGE = 'usage: node tests/bench/code_mode/run.mjs [--json] [--min-saving F] [--modes all,search,code] [--only ID,...] [--inner N] [--keep]';
const opt = {
  modes: 'all,search,code',
  inner: 200,
  ...parseArgs(process.argv.slice(2), { json: 'bool', 'min-saving': 'number', modes: 'string', only: 'string', inner: 'number', keep: 'bool' }, USAGE),
};
const MODES = opt.modes.split(',');
if (!MODES.includes('all') || MODES.some((m) => !['all', 'search', 'code'].includes(m))) {
  console.error(`--modes: a comma list of all, search, code that includes all\n${USAGE}`);
  process.exit(2);
}
const log = opt.json ? () => {} : (...a) => console.log(...a);
const o200k = await importNode('gpt-tokenizer/encoding/o200k_base');
const tokens = (text) => o200k.encode(text).length;

const SEARCH = 'mcpmux__search_tools';
const CALL = 'mcpmux__call_tool';
const RUN = 'mcpmux__run_code';

/** What a result puts in the model's context: its content (text as is, other blocks as JSON). */
const contextText = (r) => (r.content ?? []).map((c) => (c.type === 'text' ? c.text : JSON.stringify(c))).join('\n');
const textOf = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

/**
 * Runs `program` (the body of an async function) in this process as the agent of `all` or
 * `search` mode: `tools.SERVER.TOOL(args)` and `tools["SERVER__TOOL"](args)` go to `call(name,
 * args)`, which makes the real tools/call and returns its result. Calls started before any of
 * them is answered form one round (one model turn with parallel calls); a round's results come
 * back together, as a model gets them. A result with structuredContent arrives as that, else its
 * text; an isError result throws. Returns {value, rounds, called: Set of tool names}.
 */
async function runAsAgent(program, call) {
  let batch = null;
  let rounds = 0;
  const called = new Set();
  const flush = async () => {
    const calls = batch;
    batch = null;
    ++rounds;
    const settled = await Promise.allSettled(calls.map((c) => call(c.name, c.args)));
    settled.forEach((s, i) => {
      if (s.status === 'rejected') return calls[i].reject(s.reason);
      const r = s.value;
      if (r.isError) calls[i].reject(new Error(`${calls[i].name}: ${textOf(r)}`));
      else calls[i].resolve(r.structuredContent ?? textOf(r));
    });
  };
  const invoke = (name) => (args) => new Promise((resolve, reject) => {
    called.add(name);
    if (!batch) {
      batch = [];
      setImmediate(flush);
    }
    batch.push({ name, args: args ?? {}, resolve, reject });
  });
  const tools = new Proxy({}, {
    get: (_, key) => (typeof key !== 'string' ? undefined : key.includes('__') ? invoke(key)
      : new Proxy({}, { get: (__, tool) => (typeof tool === 'string' ? invoke(`${key}__${tool}`) : undefined) })),
  });
  const AsyncFunction = (async () => {}).constructor;
  const quiet = { log() {}, info() {}, warn() {}, error() {}, debug() {} };
  const value = await new AsyncFunction('tools', 'console', program)(tools, quiet);
  return { value: JSON.parse(JSON.stringify(value ?? null)), rounds, called };
}

/**
 * The value in run_code's answer: console output, then the return value, as JSON (a string
 * as itself). Nothing printed: the whole text; else the last lines that parse; else the text.
 */
function programValue(text) {
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; ++i) {
    try {
      return JSON.parse(lines.slice(i).join('\n'));
    } catch {
      // console output before the value, or a string
    }
  }
  return text;
}

/** A ledger of what entered the model's context in one task run. */
function ledger(toolsListTokens) {
  const l = { tokens: toolsListTokens, list: toolsListTokens, calls: 0, callTokens: 0, resultTokens: 0, programTokens: 0, declTokens: 0 };
  l.record = (name, args, result, kind) => {
    const c = tokens(JSON.stringify({ name, arguments: args }));
    const r = tokens(contextText(result));
    l.calls += 1;
    l.callTokens += c;
    l.resultTokens += r;
    l.tokens += c + r;
    if (kind === 'program') l.programTokens += tokens(args.code);
    if (kind === 'declarations') l.declTokens += r;
    return result;
  };
  return l;
}

async function main() {
  for (const bin of [MCPMUXD, MCPMUX]) assert.ok(bin, 'binaries');
  const work = mkdtempSync(path.join(os.tmpdir(), 'mcpmux-code-bench-'));
  const ROOT = path.join(work, 'project');
  const memoryFile = path.join(work, 'memory', 'memory.jsonl');
  mkdirSync(path.dirname(memoryFile));
  const reset = () => {
    writeTree(ROOT);
    writeFileSync(memoryFile, memoryJsonl());
  };
  reset();
  const profiles = { all: { exposure: 'all' }, search: { exposure: 'search' } };
  // code_max_calls: the inner-call loop makes --inner calls in one program (the default allows 100).
  if (MODES.includes('code')) profiles.code = { exposure: 'code', code: true, code_max_calls: Math.max(100, opt.inner) };
  const t0 = Date.now();
  const daemon = await startDaemon({
    // No result cap: every mode sees each result whole in one call (with the default cap the
    // biggest results would be paged through mcpmux__read_result: more turns in all/search mode).
    daemon: { max_result_bytes: 0 },
    servers: {
      everything: { command: NODE, args: [EVERYTHING_JS, 'stdio'] },
      memory: { command: NODE, args: [MEMORY_JS], env: { MEMORY_FILE_PATH: memoryFile }, allow_write: [path.dirname(memoryFile)] },
      fs: { command: NODE, args: [FILESYSTEM_JS, ROOT] },
    },
    profiles,
  });
  const conns = {};
  const lists = {};
  let failed = 0;
  const fail = (msg) => {
    ++failed;
    console.error(`FAIL ${msg}`);
  };
  try {
    for (const m of MODES) {
      conns[m] = await connectProfile(daemon, m);
      const tools = await conns[m].listRawTools();
      lists[m] = { names: tools.map((t) => t.name), tokens: tokens(JSON.stringify(tools)) };
    }
    assert.ok(lists.all.names.length >= 30, `all lists ${lists.all.names.length} tools`);
    if (lists.search) assert.deepEqual([...lists.search.names].sort(), [CALL, SEARCH]);
    if (lists.code) assert.deepEqual([...lists.code.names].sort(), [RUN, SEARCH], `the code profile lists ${lists.code.names.join(', ')}`);

    const tasks = opt.only ? TASKS.filter((t) => opt.only.split(',').includes(t.id)) : TASKS;
    const rows = [];
    for (const task of tasks) {
      try {
        const program = task.program(ROOT).trim();
        const row = { id: task.id, multiStep: task.multiStep !== false, modes: {} };
        const direct = (client, l) => async (name, args) => l.record(name, args, await client.callTool({ name, arguments: args }));
        // all: the program is the agent, every call a direct tools/call.
        reset();
        let l = ledger(lists.all.tokens);
        const all = await runAsAgent(program, direct(conns.all.client, l));
        row.modes.all = { ...l, record: undefined, turns: all.rounds + 1, answer: all.value, state: stateDigest(memoryFile, ROOT) };
        if (!task.ok(all.value)) fail(`${task.id}: all mode's answer fails the task's check: ${JSON.stringify(all.value).slice(0, 300)}`);
        const used = [...all.called].sort();

        if (MODES.includes('search')) {
          reset();
          l = ledger(lists.search.tokens);
          const call = direct(conns.search.client, l);
          const found = new Set();
          const hits = await Promise.all(task.search.map((args) => call(SEARCH, args)));
          for (const h of hits) for (const t of searchHits(h)) found.add(t.name);
          const missed = used.filter((n) => !found.has(n));
          if (missed.length) fail(`${task.id}: search mode's searches did not find ${missed.join(', ')}`);
          const run = await runAsAgent(program, async (name, args) => {
            const r = await call(CALL, { name, arguments: args });
            return r;
          });
          row.modes.search = { ...l, record: undefined, turns: 1 + run.rounds + 1, answer: run.value, state: stateDigest(memoryFile, ROOT) };
        }

        if (MODES.includes('code')) {
          reset();
          l = ledger(lists.code.tokens);
          const decls = await Promise.all(task.search.map(async (args) => {
            const a = { ...args, format: 'typescript' };
            return l.record(SEARCH, a, await conns.code.client.callTool({ name: SEARCH, arguments: a }), 'declarations');
          }));
          const declared = decls.map(textOf).join('\n');
          const undeclared = used.filter((n) => !declared.includes(`"${n}"`));
          if (undeclared.length) fail(`${task.id}: code mode's declarations do not declare ${undeclared.join(', ')}`);
          const args = { code: program };
          const r = l.record(RUN, args, await conns.code.client.callTool({ name: RUN, arguments: args }), 'program');
          if (r.isError) fail(`${task.id}: run_code failed: ${textOf(r).slice(0, 500)}`);
          let value = null;
          try {
            value = programValue(textOf(r));
          } catch (e) {
            fail(`${task.id}: ${e.message}`);
          }
          row.modes.code = { ...l, record: undefined, turns: 3, answer: value, state: stateDigest(memoryFile, ROOT) };
        }

        for (const m of MODES.slice(1)) {
          if (JSON.stringify(row.modes[m].answer) !== JSON.stringify(row.modes.all.answer))
            fail(`${task.id}: ${m} mode's answer differs from all mode's:\n  all:  ${JSON.stringify(row.modes.all.answer).slice(0, 300)}\n  ${m}: ${JSON.stringify(row.modes[m].answer).slice(0, 300)}`);
          if (row.modes[m].state !== row.modes.all.state) fail(`${task.id}: ${m} mode left another state than all mode`);
        }
        for (const m of MODES) delete row.modes[m].record;
        rows.push(row);
      } catch (e) {
        fail(`${task.id}: ${e.stack ?? e}`);
      }
    }

    const inner = opt.inner > 0 ? await innerCost(conns, opt.inner) : null;
    report(rows, lists, inner, (Date.now() - t0) / 1000);
    if (opt['min-saving'] !== undefined) {
      const s = totals(rows.filter((r) => r.multiStep)).saving;
      if (!(s >= opt['min-saving'])) fail(`code mode saves ${s === undefined ? 'nothing (not run)' : pct(s)} of all mode's tokens on the multi-step tasks, under --min-saving ${opt['min-saving']}`);
    }
  } finally {
    for (const c of Object.values(conns)) await c.client.close().catch(() => {});
    await daemon.stop({ keep: opt.keep }).catch((e) => fail(`daemon stop: ${e.message}`));
    if (!opt.keep) rmSync(work, { recursive: true, force: true });
    else console.error(`kept ${work} and ${daemon.dir}`);
  }
  process.exitCode = failed ? 1 : 0;
}

const pct = (x) => `${(100 * x).toFixed(1)} %`;

function totals(rows) {
  const t = {};
  for (const m of ['all', 'search', 'code']) {
    if (!rows.length || !rows[0].modes[m]) continue;
    t[m] = { tokens: 0, list: 0, turns: 0, calls: 0 };
    for (const r of rows) {
      t[m].tokens += r.modes[m].tokens;
      t[m].list += r.modes[m].list;
      t[m].turns += r.modes[m].turns;
      t[m].calls += r.modes[m].calls;
    }
  }
  if (t.code) {
    t.saving = 1 - t.code.tokens / t.all.tokens;
    // Beside the tools list, which search exposure shrinks as well: the work itself.
    t.savingWithoutList = 1 - (t.code.tokens - t.code.list) / (t.all.tokens - t.all.list);
    if (t.search) t.savingVsSearch = 1 - t.code.tokens / t.search.tokens;
  }
  if (t.search) t.searchSaving = 1 - t.search.tokens / t.all.tokens;
  return t;
}

/**
 * The cost of a call made inside a program over a direct one: n sequential direct calls of
 * everything__echo from the SDK client (p50, p90 of each); then 5 times an empty program and one
 * that makes n echo calls in a loop, each after a pause that lets the daemon pre-start its next
 * runner (as a model's turn would). Per inner call: the medians' difference / n, and the
 * program's own clock over batches of 10 calls after 10 untimed ones (its Date.now() counts
 * whole ms, so a batch, not a call, is the sample). Needs the code profile.
 */
async function innerCost(conns, n) {
  const echo = { name: 'everything__echo', arguments: { message: 'ping' } };
  for (let i = 0; i < 20; ++i) await conns.all.client.callTool(echo);
  const direct = [];
  for (let i = 0; i < n; ++i) {
    const t = process.hrtime.bigint();
    await conns.all.client.callTool(echo);
    direct.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  direct.sort((a, b) => a - b);
  const out = { n, directP50: percentile(direct, 50), directP90: percentile(direct, 90) };
  if (!conns.code) return out;
  const time = async (code) => {
    await new Promise((r) => setTimeout(r, 800));
    const t = process.hrtime.bigint();
    const r = await conns.code.client.callTool({ name: RUN, arguments: { code } });
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    if (r.isError) throw new Error(`run_code: ${textOf(r).slice(0, 300)}`);
    return { ms, value: programValue(textOf(r)) };
  };
  const batches = Math.floor(n / 10) - 1;
  const loop = `const echo = () => tools.everything.echo({ message: "ping" });
for (let i = 0; i < ${n - 10 * batches}; ++i) await echo();
const ms = [];
for (let b = 0; b < ${batches}; ++b) {
  const t = Date.now();
  for (let i = 0; i < 10; ++i) await echo();
  ms.push(Date.now() - t);
}
return ms;`;
  const empty = [];
  const full = [];
  const inside = [];
  for (let k = 0; k < 5; ++k) {
    empty.push((await time('return 0;')).ms);
    const f = await time(loop);
    full.push(f.ms);
    inside.push(...f.value.map((ms) => ms / 10));
  }
  const sorted = (a) => [...a].sort((x, y) => x - y);
  out.emptyProgramMs = percentile(sorted(empty), 50);
  out.programMs = percentile(sorted(full), 50);
  out.innerPerCall = (out.programMs - out.emptyProgramMs) / n;
  out.innerP50 = percentile(sorted(inside), 50);
  out.innerP90 = percentile(sorted(inside), 90);
  out.overheadP50 = out.innerP50 - out.directP50;
  return out;
}

function report(rows, lists, inner, seconds) {
  const multi = totals(rows.filter((r) => r.multiStep));
  const ctrl = totals(rows.filter((r) => !r.multiStep));
  const every = totals(rows);
  if (opt.json) {
    console.log(JSON.stringify({ toolsList: Object.fromEntries(Object.entries(lists).map(([m, x]) => [m, { tools: x.names.length, tokens: x.tokens }])),
      tasks: rows, totals: { multiStep: multi, controls: ctrl, all: every }, inner, seconds }, null, 1));
    return;
  }
  const has = (m) => !!rows[0]?.modes[m];
  const fmt = (r, m) => (r.modes[m] ? String(r.modes[m].tokens) : '-');
  log(`tools/list tokens (o200k_base): ${Object.entries(lists).map(([m, x]) => `${m} ${x.tokens} (${x.names.length} tools)`).join(', ')}`);
  log('');
  const head = ['task', 'calls', 'all', 'search', 'code', 'code vs all', 'turns a/s/c', 'program', 'decls'];
  const body = rows.map((r) => [
    r.id + (r.multiStep ? '' : ' (control)'),
    String(r.modes.all.calls), fmt(r, 'all'), fmt(r, 'search'), fmt(r, 'code'),
    has('code') ? pct(1 - r.modes.code.tokens / r.modes.all.tokens) : '-',
    ['all', 'search', 'code'].map((m) => (r.modes[m] ? r.modes[m].turns : '-')).join('/'),
    has('code') ? String(r.modes.code.programTokens) : '-',
    has('code') ? String(r.modes.code.declTokens) : '-',
  ]);
  const line = (name, t) => [name, String(t.all.calls), String(t.all.tokens), t.search ? String(t.search.tokens) : '-', t.code ? String(t.code.tokens) : '-',
    t.code ? pct(t.saving) : '-', ['all', 'search', 'code'].map((m) => (t[m] ? t[m].turns : '-')).join('/'), '', ''];
  const foot = [line(`TOTAL multi-step (${rows.filter((r) => r.multiStep).length})`, multi)];
  if (rows.some((r) => !r.multiStep)) foot.push(line(`TOTAL controls (${rows.filter((r) => !r.multiStep).length})`, ctrl), line(`TOTAL all (${rows.length})`, every));
  const w = head.map((h, i) => Math.max(h.length, ...[...body, ...foot].map((r) => r[i].length)));
  const pr = (cells) => log(cells.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join('  '));
  pr(head);
  body.forEach(pr);
  log(w.map((x) => '-'.repeat(x)).join('  '));
  foot.forEach(pr);
  log('');
  log('tokens: what enters the model\'s context — the tools list once, every call\'s name+arguments JSON and its result text; ' +
    'in code mode the program (in run_code\'s arguments) and the declarations fetched. turns: rounds of calls (parallel calls = one) + the answer.');
  if (multi.search) log(`search vs all on the multi-step tasks: ${pct(multi.searchSaving)} fewer tokens`);
  if (multi.code) {
    log(`code vs all on the multi-step tasks: ${pct(multi.saving)} fewer tokens, ${multi.all.turns} -> ${multi.code.turns} turns`);
    log(`  without the tools lists (the calls, results, program and declarations only): ${multi.all.tokens - multi.all.list} -> ` +
      `${multi.code.tokens - multi.code.list} tokens, ${pct(multi.savingWithoutList)} fewer`);
    if (multi.search) log(`  code vs search: ${pct(multi.savingVsSearch)} fewer tokens, ${multi.search.turns} -> ${multi.code.turns} turns`);
  }
  if (inner) {
    log('');
    log(`direct tools/call of everything__echo from the SDK client: p50 ${inner.directP50.toFixed(3)} ms, p90 ${inner.directP90.toFixed(3)} ms (${inner.n} calls)`);
    if (inner.innerPerCall !== undefined) {
      log(`inside run_code, by the program's clock: p50 ${inner.innerP50.toFixed(3)} ms, p90 ${inner.innerP90.toFixed(3)} ms a call ` +
        `(${inner.overheadP50 >= 0 ? '+' : ''}${inner.overheadP50.toFixed(3)} ms over direct at p50)`);
      log(`  from outside: ${inner.n} echo calls ${inner.programMs.toFixed(1)} ms - empty program ${inner.emptyProgramMs.toFixed(1)} ms ` +
        `-> ${inner.innerPerCall.toFixed(3)} ms a call (medians of 5 runs)`);
    }
  }
  log(`\n${seconds.toFixed(1)} s`);
}

await main();
