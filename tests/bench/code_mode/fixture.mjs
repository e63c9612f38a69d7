// fixture.mjs — the world the code-mode benchmark's tasks work on, the same on every run (a
// seeded generator): a company knowledge graph for server-memory (~60 entities, ~150 relations)
// and a project tree for server-filesystem (~100 files: sources with TODOs and imports, runbooks,
// decision records, logs of 400 lines a day, a 300-row CSV, configs). Written afresh before every
// task in every mode, so a task that writes finds what the others found.
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';

/** mulberry32: a small seeded PRNG, so the fixture is the same on every run. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIRST = ['Alice', 'Bruno', 'Chen', 'Dana', 'Emeka', 'Fatima', 'Goran', 'Hana', 'Ivan', 'Julia', 'Kofi', 'Lena',
  'Mateo', 'Nadia', 'Omar', 'Priya', 'Quentin', 'Rosa', 'Sven', 'Tara', 'Umar', 'Vera', 'Wei', 'Yara'];
const LAST = ['Moreau', 'Silva', 'Wang', 'Kowalski', 'Okafor', 'Haddad', 'Petrovic', 'Sato', 'Ivanov', 'Becker', 'Mensah',
  'Larsen', 'Garcia', 'Rahman', 'Farouk', 'Iyer', 'Dubois', 'Costa', 'Nilsson', 'Reid', 'Qureshi', 'Novak', 'Zhang', 'Aziz'];
const CITIES = ['New York', 'Chicago', 'Los Angeles'];
const ROLES = ['backend engineer', 'frontend engineer', 'SRE', 'engineering manager', 'data engineer', 'security engineer', 'mobile engineer', 'staff engineer'];

export const TEAMS = [
  { name: 'Payments', mission: 'move money reliably: checkout, billing and the ledger' },
  { name: 'Search', mission: 'help customers find products in under 200 ms' },
  { name: 'Platform', mission: 'the paved road: deploys, queues, observability' },
  { name: 'Mobile', mission: 'the iOS and Android shopping apps' },
  { name: 'Data', mission: 'the warehouse, the event pipeline and the reports' },
  { name: 'Security', mission: 'identity, secrets and the audit trail' },
];

export const SERVICES = [
  { name: 'billing-api', team: 'Payments', lang: 'Node', tier: 1, deps: ['ledger', 'auth-service', 'event-bus'] },
  { name: 'ledger', team: 'Payments', lang: 'Go', tier: 1, deps: ['event-bus'] },
  { name: 'checkout-web', team: 'Payments', lang: 'Node', tier: 1, deps: ['billing-api', 'search-api', 'cart-service'] },
  { name: 'cart-service', team: 'Payments', lang: 'Node', tier: 2, deps: ['auth-service'] },
  { name: 'search-api', team: 'Search', lang: 'Go', tier: 1, deps: ['search-indexer', 'auth-service'] },
  { name: 'search-indexer', team: 'Search', lang: 'Go', tier: 2, deps: ['event-bus', 'warehouse-loader'] },
  { name: 'event-bus', team: 'Platform', lang: 'Go', tier: 1, deps: [] },
  { name: 'deploy-bot', team: 'Platform', lang: 'Node', tier: 3, deps: ['auth-service'] },
  { name: 'mobile-bff', team: 'Mobile', lang: 'Node', tier: 2, deps: ['checkout-web', 'search-api'] },
  { name: 'warehouse-loader', team: 'Data', lang: 'Python', tier: 2, deps: ['event-bus'] },
  { name: 'auth-service', team: 'Security', lang: 'Go', tier: 1, deps: ['event-bus'] },
  { name: 'audit-log', team: 'Security', lang: 'Go', tier: 2, deps: ['event-bus'] },
];
/** Tier-1 services that have no runbook in docs/runbooks (a task finds them). */
const NO_RUNBOOK = new Set(['ledger', 'auth-service']);

const INCIDENTS = [
  { id: 'INC-2031', service: 'ledger', sev: 'SEV2', status: 'resolved', date: '2026-09-14', cause: 'a migration locked the postings table for 11 minutes' },
  { id: 'INC-2034', service: 'search-api', sev: 'SEV3', status: 'resolved', date: '2026-09-29', cause: 'a cold cache after a deploy doubled p99 latency' },
  { id: 'INC-2040', service: 'billing-api', sev: 'SEV1', status: 'open', date: '2026-11-02', cause: 'duplicate charges when the ledger answered slowly' },
  { id: 'INC-2041', service: 'event-bus', sev: 'SEV2', status: 'open', date: '2026-11-03', cause: 'a partition rebalance stalled consumers' },
  { id: 'INC-2043', service: 'mobile-bff', sev: 'SEV3', status: 'open', date: '2026-11-03', cause: 'timeouts to checkout-web from the Android app' },
  { id: 'INC-2044', service: 'auth-service', sev: 'SEV2', status: 'resolved', date: '2026-11-04', cause: 'an expired signing key' },
  { id: 'INC-2046', service: 'warehouse-loader', sev: 'SEV3', status: 'open', date: '2026-11-05', cause: 'late partitions in the nightly load' },
  { id: 'INC-2047', service: 'cart-service', sev: 'SEV2', status: 'resolved', date: '2026-11-05', cause: 'a bad feature flag emptied carts on refresh' },
];

const FLUFF = ['prefers async code reviews', 'mentors new hires', 'runs the weekly architecture forum', 'wrote the on-call handbook',
  'likes pairing on gnarly bugs', 'is learning Rust', 'organises the quarterly hack week', 'keeps the team wiki tidy',
  'was at KubeCon this year', 'reviews most database migrations', 'prefers written proposals over meetings'];

/** The people: 24, four per team; each with role, team, email, city, join year and some colour. */
export function people() {
  const r = rng(47);
  return FIRST.map((first, i) => {
    const team = TEAMS[i % TEAMS.length].name;
    const name = `${first} ${LAST[i]}`;
    return {
      name, team,
      role: i < TEAMS.length ? 'engineering manager' : ROLES[Math.floor(r() * ROLES.length)],
      email: `${first.toLowerCase()}.${LAST[i].toLowerCase()}@acme.example`,
      city: CITIES[Math.floor(r() * CITIES.length)],
      joined: 2018 + Math.floor(r() * 9),
      fluff: [FLUFF[Math.floor(r() * FLUFF.length)], FLUFF[Math.floor(r() * FLUFF.length)]],
    };
  });
}

/** The knowledge graph {entities, relations} as server-memory stores it. */
export function graph() {
  const ps = people();
  const entities = [];
  const relations = [];
  for (const p of ps) {
    entities.push({ name: p.name, entityType: 'person', observations: [`role: ${p.role}`, `team: ${p.team}`, `email: ${p.email}`,
      `city: ${p.city}`, `joined: ${p.joined}`, ...p.fluff] });
    relations.push({ from: p.name, to: p.team, relationType: 'works_in' });
  }
  for (const t of TEAMS) {
    const members = ps.filter((p) => p.team === t.name);
    entities.push({ name: t.name, entityType: 'team', observations: [`mission: ${t.mission}`, `slack: #team-${t.name.toLowerCase()}`,
      `standup: 09:30 ${members[0].city} time`, `headcount: ${members.length}`] });
    relations.push({ from: members[0].name, to: t.name, relationType: 'leads' });
  }
  SERVICES.forEach((s, i) => {
    entities.push({ name: s.name, entityType: 'service', observations: [`language: ${s.lang}`, `tier: ${s.tier}`, `owner team: ${s.team}`,
      `repo path: src/services/${s.name}`, `SLO: ${s.tier === 1 ? '99.95' : '99.9'}% of requests under ${100 + 50 * s.tier} ms`,
      `dashboard: https://grafana.acme.example/d/${s.name}`] });
    relations.push({ from: s.team, to: s.name, relationType: 'owns' });
    for (const d of s.deps) relations.push({ from: s.name, to: d, relationType: 'depends_on' });
    const team = ps.filter((p) => p.team === s.team);
    for (const k of [1, 2]) relations.push({ from: team[(i + k) % team.length].name, to: s.name, relationType: 'on_call_for' });
  });
  INCIDENTS.forEach((inc, i) => {
    entities.push({ name: inc.id, entityType: 'incident', observations: [`severity: ${inc.sev}`, `status: ${inc.status}`, `date: ${inc.date}`,
      `service: ${inc.service}`, `root cause: ${inc.cause}`, `postmortem: docs/postmortems/${inc.id}.md`] });
    relations.push({ from: inc.id, to: inc.service, relationType: 'affected' });
    relations.push({ from: ps[(i * 5) % ps.length].name, to: inc.id, relationType: 'reported' });
  });
  return { entities, relations };
}

/** server-memory's file format: one JSON object a line, entities then relations. */
export function memoryJsonl(g = graph()) {
  return [...g.entities.map((e) => ({ type: 'entity', ...e })), ...g.relations.map((r) => ({ type: 'relation', ...r }))]
    .map((x) => JSON.stringify(x)).join('\n');
}

const LEVELS = ['INFO', 'INFO', 'INFO', 'INFO', 'INFO', 'INFO', 'WARN', 'WARN', 'ERROR', 'DEBUG'];
const MESSAGES = {
  INFO: ['request served', 'cache refreshed', 'consumer caught up', 'health check ok', 'config reloaded'],
  WARN: ['slow upstream', 'retrying request', 'queue depth high', 'deprecated header seen'],
  ERROR: ['upstream timeout', 'payment declined by processor', 'db connection reset', 'unhandled rejection'],
  DEBUG: ['span exported', 'flag evaluated'],
};
export const LOG_DAYS = ['2026-11-01', '2026-11-02', '2026-11-03', '2026-11-04', '2026-11-05'];

/** {relative path: text} of the project tree. */
export function tree() {
  const r = rng(2026);
  const pick = (a) => a[Math.floor(r() * a.length)];
  const files = {};
  const svcNames = SERVICES.map((s) => s.name);
  // Sources: 3 to 4 modules a service, 40 to 110 lines, with TODO/FIXME comments and imports of other services' clients.
  for (const s of SERVICES) {
    const mods = ['index', 'handlers', 'client', 'store'].slice(0, 3 + (s.name.length % 2));
    for (const m of mods) {
      const lines = [`// ${s.name}/${m}.js — ${s.team} team`, `'use strict';`];
      for (const d of s.deps) if (r() < 0.6 || m === 'index') lines.push(`import { connect as ${d.replace(/-/g, '_')} } from '../${d}/client.js';`);
      const n = 40 + Math.floor(r() * 70);
      for (let i = 0; lines.length < n; ++i) {
        const x = r();
        if (x < 0.05) lines.push(`  // TODO(${pick(FIRST).toLowerCase()}): ${pick(['handle the retry budget', 'drop the v1 fallback', 'add a metric', 'paginate this', 'remove after the migration'])}`);
        else if (x < 0.08) lines.push(`  // FIXME: ${pick(['races with the cache refresh', 'leaks a connection on error', 'wrong rounding for JPY'])}`);
        else if (x < 0.2) lines.push(`export async function ${m}${i}(req, ctx) {`);
        else if (x < 0.3) lines.push('}');
        else lines.push(`  const v${i} = await ctx.${pick(['db', 'cache', 'queue', 'http'])}.${pick(['get', 'put', 'send', 'query'])}(req.${pick(['id', 'body', 'user', 'cart'])}, { timeoutMs: ${pick([200, 500, 1000, 3000])} });`);
      }
      files[`src/services/${s.name}/${m}.js`] = lines.join('\n') + '\n';
    }
  }
  const ps = people();
  for (const s of SERVICES) {
    if (NO_RUNBOOK.has(s.name)) continue;
    const team = ps.filter((p) => p.team === s.team);
    const body = [`# ${s.name} runbook`, '', `Owner: ${s.team}. Tier ${s.tier}.`, '', '## Dashboards', '',
      `- https://grafana.acme.example/d/${s.name}`, `- https://grafana.acme.example/d/${s.name}-slo`, '', '## Common alerts', ''];
    for (let i = 0; i < 8; ++i) body.push(`### ${s.name.toUpperCase()}-ALERT-${i + 1}`, '', `${pick(MESSAGES.ERROR)} above threshold for 5 minutes. ` +
      `Check the ${pick(['db', 'cache', 'queue'])} panel, then ${pick(['restart one pod', 'fail over to the replica', 'roll back the last deploy', 'page the owning team'])}.`, '');
    body.push('## Escalation', '', `First: ${team[1].name} (${team[1].email})`, `Then: ${team[0].name} (${team[0].email})`, '');
    files[`docs/runbooks/${s.name}.md`] = body.join('\n');
  }
  // Architecture decision records.
  const adrs = [['use-postgres-for-ledger', 'accepted'], ['event-bus-on-kafka', 'accepted'], ['graphql-for-mobile', 'rejected'],
    ['monorepo', 'accepted'], ['feature-flags-service', 'proposed'], ['drop-python-2', 'accepted'], ['search-on-opensearch', 'superseded'],
    ['opentelemetry-tracing', 'accepted'], ['multi-region-active-active', 'proposed'], ['signed-webhooks', 'accepted']];
  adrs.forEach(([slug, status], i) => {
    const n = String(i + 1).padStart(4, '0');
    const para = Array.from({ length: 6 }, () => `${pick(['We', 'The team', 'Payments', 'Platform'])} ${pick(['considered', 'measured', 'prototyped', 'reviewed'])} ` +
      `${pick(['the latency', 'the cost', 'the operational load', 'the failure modes'])} of ${slug.replace(/-/g, ' ')} ${pick(['over two sprints', 'in staging', 'with a load test', 'against the current setup'])}.`).join(' ');
    files[`docs/decisions/${n}-${slug}.md`] = `# ${n}. ${slug.replace(/-/g, ' ')}\n\nDate: 2026-0${1 + (i % 9)}-1${i % 10}\n\nStatus: ${status}\n\n## Context\n\n${para}\n\n## Decision\n\n${para.split('. ').reverse().join('. ')}\n\n## Consequences\n\n${para.slice(0, 300)}\n`;
  });
  // Logs: 400 lines a day.
  for (const day of LOG_DAYS) {
    const lines = [];
    for (let i = 0; i < 400; ++i) {
      const lvl = pick(LEVELS);
      const t = `${day}T${String(Math.floor((i * 24) / 400)).padStart(2, '0')}:${String(Math.floor(r() * 60)).padStart(2, '0')}:${String(Math.floor(r() * 60)).padStart(2, '0')}Z`;
      lines.push(`${t} ${lvl.padEnd(5)} ${pick(svcNames)} req=${Math.floor(r() * 1e8).toString(16)} latency_ms=${Math.floor(5 + r() ** 3 * 2000)} ${pick(MESSAGES[lvl])}`);
    }
    files[`logs/app-${day}.log`] = lines.join('\n') + '\n';
  }
  // Orders.
  const rows = ['id,date,customer,region,amount,status'];
  for (let i = 0; i < 300; ++i)
    rows.push(`${10000 + i},2026-10-${String(1 + Math.floor(r() * 30)).padStart(2, '0')},cust-${Math.floor(r() * 900) + 100},${pick(['EU', 'US', 'APAC', 'LATAM'])},` +
      `${(5 + r() * 400).toFixed(2)},${pick(['completed', 'completed', 'completed', 'refunded', 'pending'])}`);
  files['data/orders.csv'] = rows.join('\n') + '\n';
  // Configs.
  const flags = ['new_checkout', 'one_click_pay', 'search_v2', 'dark_mode', 'cart_autosave', 'fraud_model_v3', 'android_bff_cache', 'audit_stream'];
  for (const env of ['dev', 'staging', 'prod']) {
    const cfg = { env, region: env === 'prod' ? 'us-east-1' : 'us-west-2', features: {}, timeouts: {}, replicas: {} };
    for (const f of flags) cfg.features[f] = env === 'dev' ? true : r() < 0.5;
    for (const s of SERVICES) {
      cfg.timeouts[s.name] = { connect_ms: 500, request_ms: pick([1000, 3000, 5000]) };
      cfg.replicas[s.name] = env === 'prod' ? 2 + s.tier * 2 : 1;
    }
    files[`config/${env}.json`] = JSON.stringify(cfg, null, 2) + '\n';
  }
  files['config/required-env.txt'] = ['NODE_ENV', 'PATH', 'HOME', 'DATABASE_URL', 'LEDGER_URL', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'MEMORY_FILE_PATH'].join('\n') + '\n';
  files['CHANGELOG.md'] = '# Changelog\n\n' + Array.from({ length: 12 }, (_, i) => `## 4.${11 - i}.0 — 2026-${String(11 - Math.floor(i / 2)).padStart(2, '0')}-0${1 + (i % 8)}\n\n` +
    Array.from({ length: 4 }, () => `- ${pick(svcNames)}: ${pick(['fix', 'add', 'speed up', 'remove'])} ${pick(['retries', 'the v1 API', 'pagination', 'a metric', 'the cache'])}`).join('\n') + '\n').join('\n');
  files['README.md'] = '# acme shop\n\nThe services behind shop.acme.example. See docs/runbooks for on-call, docs/decisions for ADRs.\n';
  return files;
}

/** Writes the tree under `root` (emptied first). */
export function writeTree(root, files = tree()) {
  // The directory itself stays: a sandboxed server has it bind-mounted (a new one would not be seen).
  mkdirSync(root, { recursive: true });
  for (const n of readdirSync(root)) rmSync(path.join(root, n), { recursive: true, force: true });
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  }
}

/** A digest of the state a task may change: the memory graph (order-free) and every file under `root`. */
export function stateDigest(memoryFile, root) {
  const h = createHash('sha256');
  const mem = readFileSync(memoryFile, 'utf8').split('\n').filter(Boolean).map((l) => {
    const o = JSON.parse(l);
    if (Array.isArray(o.observations)) o.observations = [...o.observations].sort();
    return JSON.stringify(o);
  }).sort();
  h.update(mem.join('\n'));
  const walk = (dir) => readdirSync(dir).sort().forEach((n) => {
    const p = path.join(dir, n);
    if (statSync(p).isDirectory()) walk(p);
    else h.update(`\0${path.relative(root, p)}\0`).update(readFileSync(p));
  });
  walk(root);
  return h.digest('hex').slice(0, 16);
}
