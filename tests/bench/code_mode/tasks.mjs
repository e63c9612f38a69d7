// tasks.mjs — the code-mode benchmark's tasks over server-memory (`memory__`), server-filesystem
// (`fs__`, rooted at ROOT) and server-everything (`everything__`), on the world of fixture.mjs.
//
// Each task is what an agent is asked (`prompt`), the searches it makes to find its tools in
// `search` and `code` mode (`search`: mcpmux__search_tools arguments; in code mode the same with
// format "typescript"), and `program(ROOT)`: the JavaScript the agent writes in code mode, the
// body of an async function calling `tools.SERVER.TOOL(args)`, which gets a tool's
// structuredContent as an object, else its text, and returns the answer.
//
// The same program is the agent of `all` and `search` mode: run.mjs runs it in this process with a
// `tools` object whose every call goes to the daemon as a real tools/call (directly, or through
// mcpmux__call_tool), so each call's arguments are computed from the real results before it;
// the calls a program starts before awaiting any of them (Promise.all) are one round, i.e. one
// model turn with parallel tool calls. Every result then enters the model's context; in code
// mode only the program and its answer do. `ok(answer)` is a sanity check of the answer's shape;
// run.mjs also checks that the three modes return the same answer and leave the same state.
//
// `multiStep: false` marks the control tasks (one call, nothing to compose), reported apart.
// Writes to server-memory are never parallel: it reads and rewrites its file on every call, so
// two writes at once lose one (an agent learns that the hard way too).

const q = (query, server, limit) => ({ query, ...(server ? { server } : {}), ...(limit ? { limit } : {}) });
const js = (ROOT) => JSON.stringify(ROOT);

export const TASKS = [
  {
    id: 'oncall-emails',
    prompt: 'Who is on call for billing-api, and what are their emails?',
    search: [q('search knowledge graph nodes', 'memory'), q('open nodes by name', 'memory')],
    program: () => `
const g = await tools.memory.search_nodes({ query: "billing-api" });
const names = g.relations.filter((r) => r.relationType === "on_call_for" && r.to === "billing-api").map((r) => r.from);
const people = await tools.memory.open_nodes({ names });
return people.entities.map((p) => ({ name: p.name, email: p.observations.find((o) => o.startsWith("email: ")).slice(7) }));`,
    ok: (a) => a.length === 2,
  },
  {
    id: 'team-cities',
    prompt: 'List the members of the Search team with the city each works from.',
    search: [q('open nodes by name', 'memory')],
    program: () => `
const team = await tools.memory.open_nodes({ names: ["Search"] });
const names = team.relations.filter((r) => r.relationType === "works_in" && r.to === "Search").map((r) => r.from);
const people = await tools.memory.open_nodes({ names });
return people.entities.map((p) => [p.name, p.observations.find((o) => o.startsWith("city: ")).slice(6)]);`,
    ok: (a) => a.length === 4,
  },
  {
    id: 'open-incident-owners',
    prompt: 'For every open incident, which service did it hit and which team owns that service?',
    search: [q('search knowledge graph nodes', 'memory'), q('open nodes by name', 'memory')],
    program: () => `
const open = await tools.memory.search_nodes({ query: "status: open" });
const hit = open.relations.filter((r) => r.relationType === "affected");
const svcs = await tools.memory.open_nodes({ names: [...new Set(hit.map((r) => r.to))] });
const owner = (s) => svcs.relations.find((r) => r.relationType === "owns" && r.to === s).from;
return hit.map((r) => ({ incident: r.from, service: r.to, team: owner(r.to) }));`,
    ok: (a) => a.length === 4,
  },
  {
    id: 'transitive-deps',
    prompt: 'What does checkout-web depend on, directly or transitively?',
    search: [q('open nodes by name', 'memory')],
    program: () => `
const seen = new Set();
let frontier = ["checkout-web"];
while (frontier.length) {
  const g = await tools.memory.open_nodes({ names: frontier });
  frontier = [];
  for (const r of g.relations)
    if (r.relationType === "depends_on" && !seen.has(r.to) && g.entities.some((e) => e.name === r.from)) { seen.add(r.to); frontier.push(r.to); }
}
return [...seen].sort();`,
    ok: (a) => a.includes('event-bus') && a.includes('warehouse-loader'),
  },
  {
    id: 'record-incident',
    prompt: 'Record a new SEV2 incident INC-2050 on the ledger (stuck postings since 14:05), reported by Sven Nilsson; link it, and note it on the ledger.',
    search: [q('create entities in the knowledge graph', 'memory'), q('create relations', 'memory'), q('add observations to entities', 'memory'), q('open nodes by name', 'memory')],
    program: () => `
await tools.memory.create_entities({ entities: [{ name: "INC-2050", entityType: "incident", observations: ["severity: SEV2", "status: open", "date: 2026-11-06", "service: ledger", "root cause: stuck postings since 14:05"] }] });
await tools.memory.add_observations({ observations: [{ entityName: "ledger", contents: ["last incident: INC-2050"] }] });
await tools.memory.create_relations({ relations: [{ from: "INC-2050", to: "ledger", relationType: "affected" }, { from: "Sven Nilsson", to: "INC-2050", relationType: "reported" }] });
const check = await tools.memory.open_nodes({ names: ["INC-2050"] });
return check.relations.map((r) => \`\${r.from} \${r.relationType} \${r.to}\`).sort();`,
    ok: (a) => a.length === 2,
  },
  {
    id: 'reorg-mobile',
    prompt: 'Mobile merges into Platform: move every Mobile member to Platform (relations and their team observation).',
    search: [q('open nodes by name', 'memory'), q('delete relations', 'memory'), q('create relations', 'memory'), q('delete observations', 'memory'), q('add observations to entities', 'memory')],
    program: () => `
const mobile = await tools.memory.open_nodes({ names: ["Mobile"] });
const members = mobile.relations.filter((r) => r.relationType === "works_in" && r.to === "Mobile").map((r) => r.from);
await tools.memory.delete_relations({ relations: members.map((m) => ({ from: m, to: "Mobile", relationType: "works_in" })) });
await tools.memory.create_relations({ relations: members.map((m) => ({ from: m, to: "Platform", relationType: "works_in" })) });
await tools.memory.delete_observations({ deletions: members.map((m) => ({ entityName: m, observations: ["team: Mobile"] })) });
await tools.memory.add_observations({ observations: members.map((m) => ({ entityName: m, contents: ["team: Platform"] })) });
const after = await tools.memory.open_nodes({ names: ["Platform"] });
return after.relations.filter((r) => r.relationType === "works_in").map((r) => r.from).sort();`,
    ok: (a) => a.length === 8,
  },
  {
    id: 'newcomer-mentors',
    prompt: 'Pair everyone who joined in 2026 with the longest-serving other member of their team as mentor, and record it.',
    search: [q('search knowledge graph nodes', 'memory'), q('open nodes by name', 'memory'), q('create relations', 'memory')],
    program: () => `
const fresh = await tools.memory.search_nodes({ query: "joined: 2026" });
const teamOf = (e) => e.observations.find((o) => o.startsWith("team: ")).slice(6);
const teams = await tools.memory.open_nodes({ names: [...new Set(fresh.entities.map(teamOf))] });
const mates = await tools.memory.open_nodes({ names: teams.relations.filter((r) => r.relationType === "works_in").map((r) => r.from) });
const year = (e) => Number(e.observations.find((o) => o.startsWith("joined: ")).slice(8));
const pairs = fresh.entities.map((n) => {
  const m = mates.entities.filter((e) => e.name !== n.name && teamOf(e) === teamOf(n)).sort((a, b) => year(a) - year(b) || a.name.localeCompare(b.name))[0];
  return { from: n.name, to: m.name, relationType: "mentored_by" };
});
await tools.memory.create_relations({ relations: pairs });
return pairs.map((p) => [p.from, p.to]);`,
    ok: (a) => a.length >= 1,
  },
  {
    id: 'tier1-runbooks',
    prompt: 'Which tier-1 services have no runbook in docs/runbooks?',
    search: [q('search knowledge graph nodes', 'memory'), q('list directory', 'fs')],
    program: (ROOT) => `
const [t1, dir] = await Promise.all([
  tools.memory.search_nodes({ query: "tier: 1" }),
  tools.fs.list_directory({ path: ${js(ROOT)} + "/docs/runbooks" }),
]);
const have = new Set(dir.content.split("\\n").map((l) => l.replace("[FILE] ", "").replace(/\\.md$/, "")));
return t1.entities.filter((e) => e.entityType === "service" && !have.has(e.name)).map((e) => e.name).sort();`,
    ok: (a) => a.length === 2,
  },
  {
    id: 'incident-escalation',
    prompt: 'For each open SEV1 or SEV2 incident, who is the first escalation contact in its service runbook?',
    search: [q('search knowledge graph nodes', 'memory'), q('read a text file', 'fs')],
    program: (ROOT) => `
const open = await tools.memory.search_nodes({ query: "status: open" });
const serious = open.entities.filter((e) => e.observations.some((o) => /severity: SEV[12]/.test(o)));
return Promise.all(serious.map(async (inc) => {
  const svc = inc.observations.find((o) => o.startsWith("service: ")).slice(9);
  const rb = await tools.fs.read_text_file({ path: ${js(ROOT)} + "/docs/runbooks/" + svc + ".md" });
  return { incident: inc.name, service: svc, first: rb.content.match(/^First: (.*)$/m)[1] };
}));`,
    ok: (a) => a.length === 2,
  },
  {
    id: 'weather-payments',
    prompt: 'Where does each Payments engineer work, what is the weather there, and who has the warmest day?',
    search: [q('open nodes by name', 'memory'), q('weather structured content', 'everything')],
    program: () => `
const team = await tools.memory.open_nodes({ names: ["Payments"] });
const people = await tools.memory.open_nodes({ names: team.relations.filter((r) => r.relationType === "works_in").map((r) => r.from) });
const city = (p) => p.observations.find((o) => o.startsWith("city: ")).slice(6);
const cities = [...new Set(people.entities.map(city))];
const weather = Object.fromEntries(await Promise.all(cities.map(async (c) => [c, await tools.everything["get-structured-content"]({ location: c })])));
const rows = people.entities.map((p) => ({ name: p.name, city: city(p), temperature: weather[city(p)].temperature }));
return { rows, warmest: rows.reduce((a, b) => (b.temperature > a.temperature ? b : a)).name };`,
    ok: (a) => a.rows.length === 4,
  },
  {
    id: 'todo-report',
    prompt: 'How many TODO and FIXME comments does each service have in src/services?',
    search: [q('search files matching a pattern', 'fs'), q('read multiple files', 'fs')],
    program: (ROOT) => `
const found = await tools.fs.search_files({ path: ${js(ROOT)} + "/src", pattern: "**/*.js" });
const paths = found.content.split("\\n");
const all = await tools.fs.read_multiple_files({ paths });
const counts = {};
let file = null;
for (const line of all.content.split("\\n")) {
  if (paths.includes(line.slice(0, -1)) && line.endsWith(":")) file = line.split("/src/services/")[1].split("/")[0];
  else if (file && /\\/\\/ (TODO|FIXME)/.test(line)) counts[file] = (counts[file] ?? 0) + 1;
}
return Object.entries(counts).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));`,
    ok: (a) => a.length >= 8,
  },
  {
    id: 'importers-of-ledger',
    prompt: 'Which source files import the ledger client?',
    search: [q('search files matching a pattern', 'fs'), q('read multiple files', 'fs')],
    program: (ROOT) => `
const found = await tools.fs.search_files({ path: ${js(ROOT)} + "/src", pattern: "**/*.js" });
const paths = found.content.split("\\n");
const texts = await Promise.all(paths.map((path) => tools.fs.read_text_file({ path })));
return paths.filter((p, i) => texts[i].content.includes("from '../ledger/client.js'")).map((p) => p.slice(${js(ROOT)}.length + 1)).sort();`,
    ok: (a) => a.length >= 2,
  },
  {
    id: 'errors-by-service',
    prompt: 'On 2026-11-03, which three services logged the most ERROR lines?',
    search: [q('list directory', 'fs'), q('read a text file', 'fs')],
    program: (ROOT) => `
const dir = await tools.fs.list_directory({ path: ${js(ROOT)} + "/logs" });
const name = dir.content.split("\\n").map((l) => l.replace("[FILE] ", "")).find((n) => n.includes("2026-11-03"));
const log = await tools.fs.read_text_file({ path: ${js(ROOT)} + "/logs/" + name });
const n = {};
for (const l of log.content.split("\\n")) { const m = l.match(/ ERROR (\\S+) /); if (m) n[m[1]] = (n[m[1]] ?? 0) + 1; }
return Object.entries(n).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 3);`,
    ok: (a) => a.length === 3,
  },
  {
    id: 'latency-p95',
    prompt: 'What was the p95 latency of billing-api over the last three days of logs?',
    search: [q('list directory', 'fs'), q('read multiple files', 'fs')],
    program: (ROOT) => `
const dir = await tools.fs.list_directory({ path: ${js(ROOT)} + "/logs" });
const last = dir.content.split("\\n").map((l) => l.replace("[FILE] ", "")).filter((n) => n.endsWith(".log")).sort().slice(-3);
const logs = await tools.fs.read_multiple_files({ paths: last.map((n) => ${js(ROOT)} + "/logs/" + n) });
const ms = [...logs.content.matchAll(/ billing-api \\S+ latency_ms=(\\d+)/g)].map((m) => Number(m[1])).sort((a, b) => a - b);
return { days: last, samples: ms.length, p95: ms[Math.ceil(0.95 * ms.length) - 1] };`,
    ok: (a) => a.samples > 10,
  },
  {
    id: 'revenue-by-region',
    prompt: 'Revenue of completed October orders by region (data/orders.csv), biggest first.',
    search: [q('read a text file', 'fs')],
    program: (ROOT) => `
const csv = await tools.fs.read_text_file({ path: ${js(ROOT)} + "/data/orders.csv" });
const sum = {};
for (const row of csv.content.trim().split("\\n").slice(1)) {
  const [, , , region, amount, status] = row.split(",");
  if (status === "completed") sum[region] = (sum[region] ?? 0) + Number(amount);
}
return Object.entries(sum).map(([r, v]) => [r, Math.round(v * 100) / 100]).sort((a, b) => b[1] - a[1]);`,
    ok: (a) => a.length === 4,
  },
  {
    id: 'flag-diff',
    prompt: 'Which feature flags differ between staging and prod?',
    search: [q('read multiple files', 'fs')],
    program: (ROOT) => `
const both = await tools.fs.read_multiple_files({ paths: ["staging", "prod"].map((e) => ${js(ROOT)} + "/config/" + e + ".json") });
const [staging, prod] = both.content.split("\\n---\\n").map((part) => JSON.parse(part.slice(part.indexOf("\\n") + 1)).features);
return Object.keys(prod).filter((f) => prod[f] !== staging[f]).map((f) => ({ flag: f, staging: staging[f], prod: prod[f] }));`,
    ok: (a) => a.length >= 1,
  },
  {
    id: 'raise-timeouts',
    prompt: 'In the prod config, raise every request timeout of 1000 ms to 3000 ms, and say which services changed.',
    search: [q('read a text file', 'fs'), q('edit file replace text', 'fs')],
    program: (ROOT) => `
const path = ${js(ROOT)} + "/config/prod.json";
const cfg = JSON.parse((await tools.fs.read_text_file({ path })).content);
const low = Object.keys(cfg.timeouts).filter((s) => cfg.timeouts[s].request_ms === 1000);
await tools.fs.edit_file({ path, edits: low.map((s) => ({
  oldText: \`"\${s}": {\\n      "connect_ms": 500,\\n      "request_ms": 1000\`,
  newText: \`"\${s}": {\\n      "connect_ms": 500,\\n      "request_ms": 3000\` })) });
return low.sort();`,
    ok: (a) => a.length >= 1,
  },
  {
    id: 'largest-sources',
    prompt: 'Which five source files are the largest, with their sizes?',
    search: [q('list directory with sizes', 'fs')],
    program: (ROOT) => `
const top = await tools.fs.list_directory({ path: ${js(ROOT)} + "/src/services" });
const dirs = top.content.split("\\n").filter((l) => l.startsWith("[DIR] ")).map((l) => l.slice(6));
const lists = await Promise.all(dirs.map((d) => tools.fs.list_directory_with_sizes({ path: ${js(ROOT)} + "/src/services/" + d })));
const files = [];
lists.forEach((l, i) => { for (const m of l.content.matchAll(/^\\[FILE\\] (\\S+)\\s+([\\d.]+) (B|KB)$/gm)) files.push([dirs[i] + "/" + m[1], Math.round(Number(m[2]) * (m[3] === "KB" ? 1024 : 1))]); });
return files.sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 5);`,
    ok: (a) => a.length === 5,
  },
  {
    id: 'archive-logs',
    prompt: 'Move the logs older than 2026-11-04 into logs/archive.',
    search: [q('list directory', 'fs'), q('create directory', 'fs'), q('move or rename file', 'fs')],
    program: (ROOT) => `
const logs = ${js(ROOT)} + "/logs";
const [dir] = await Promise.all([tools.fs.list_directory({ path: logs }), tools.fs.create_directory({ path: logs + "/archive" })]);
const old = dir.content.split("\\n").map((l) => l.replace("[FILE] ", "")).filter((n) => /^app-.*\\.log$/.test(n) && n.slice(4, 14) < "2026-11-04");
await Promise.all(old.map((n) => tools.fs.move_file({ source: logs + "/" + n, destination: logs + "/archive/" + n })));
return (await tools.fs.list_directory({ path: logs + "/archive" })).content.split("\\n").sort();`,
    ok: (a) => a.length === 3,
  },
  {
    id: 'adrs-to-memory',
    prompt: 'Record every architecture decision in docs/decisions in the knowledge graph, with its status.',
    search: [q('search files matching a pattern', 'fs'), q('read multiple files', 'fs'), q('create entities in the knowledge graph', 'memory')],
    program: (ROOT) => `
const found = await tools.fs.search_files({ path: ${js(ROOT)} + "/docs/decisions", pattern: "*.md" });
const all = await tools.fs.read_multiple_files({ paths: found.content.split("\\n") });
const entities = all.content.split("\\n---\\n").map((part) => ({
  name: "ADR " + part.match(/^# (.*)$/m)[1],
  entityType: "decision",
  observations: ["status: " + part.match(/^Status: (.*)$/m)[1], "file: " + part.slice(part.indexOf("docs/"), part.indexOf(":\\n"))],
}));
const made = await tools.memory.create_entities({ entities });
return made.entities.map((e) => [e.name, e.observations[0]]).sort();`,
    ok: (a) => a.length === 10,
  },
  {
    id: 'missing-env',
    prompt: 'Which variables in config/required-env.txt are missing from the everything server\u2019s environment?',
    search: [q('read a text file', 'fs'), q('environment variables', 'everything')],
    program: (ROOT) => `
const [req, env] = await Promise.all([
  tools.fs.read_text_file({ path: ${js(ROOT)} + "/config/required-env.txt" }),
  tools.everything["get-env"]({}),
]);
const have = JSON.parse(env);
return req.content.trim().split("\\n").filter((v) => !(v in have));`,
    ok: (a) => Array.isArray(a),
  },
  {
    id: 'changelog-services',
    prompt: 'Which services appear most often in the changelog, and is each one tier 1?',
    search: [q('read a text file', 'fs'), q('open nodes by name', 'memory')],
    program: (ROOT) => `
const log = await tools.fs.read_text_file({ path: ${js(ROOT)} + "/CHANGELOG.md" });
const n = {};
for (const m of log.content.matchAll(/^- ([a-z-]+):/gm)) n[m[1]] = (n[m[1]] ?? 0) + 1;
const top = Object.entries(n).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 3);
const svcs = await tools.memory.open_nodes({ names: top.map(([s]) => s) });
const tier1 = (s) => svcs.entities.find((e) => e.name === s).observations.includes("tier: 1");
return top.map(([s, k]) => ({ service: s, entries: k, tier1: tier1(s) }));`,
    ok: (a) => a.length === 3,
  },
  // Controls: one call, nothing to compose (code mode is not expected to win these).
  {
    id: 'one-sum',
    multiStep: false,
    prompt: 'What is 1234.5 plus 8765.25?',
    search: [q('add two numbers', 'everything')],
    program: () => `
return await tools.everything["get-sum"]({ a: 1234.5, b: 8765.25 });`,
    ok: (a) => /9999\.75/.test(a),
  },
  {
    id: 'read-readme',
    multiStep: false,
    prompt: 'What does the README of the project say?',
    search: [q('read a text file', 'fs')],
    program: (ROOT) => `
return (await tools.fs.read_text_file({ path: ${js(ROOT)} + "/README.md" })).content;`,
    ok: (a) => a.startsWith('# acme shop'),
  },
];
