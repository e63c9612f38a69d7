// common.mjs — shared by the tool-search benchmark scripts in this folder: where things are, the
// SDK and tokenizer (from tests/node/node_modules), and loading the fixtures and tasks.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const FIXTURES = path.join(HERE, 'fixtures');
export const TASKS = path.join(HERE, 'tasks.json');
export const FIXTURE_SERVER = path.join(HERE, 'fixture_server.mjs');

// Packages resolve from tests/node (its package.json pins them), not from this folder.
export const requireNode = createRequire(path.join(HERE, '../../node/package.json'));
export const importNode = (spec) => import(requireNode.resolve(spec));

/** Every fixture in fixtures/, sorted by server name: [{server, source, captured, tools, file}]. */
export function loadFixtures(dir = FIXTURES) {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => ({ ...JSON.parse(readFileSync(path.join(dir, f), 'utf8')), file: path.join(dir, f) }))
    .sort((a, b) => a.server.localeCompare(b.server));
}

/**
 * tasks.json, checked against the fixtures: every task names a fixture's server and one of its
 * tools. Throws listing every bad label (so a typo cannot silently count as a miss).
 */
export function loadTasks(fixtures, file = TASKS) {
  const tasks = JSON.parse(readFileSync(file, 'utf8'));
  const byServer = new Map(fixtures.map((f) => [f.server, new Set(f.tools.map((t) => t.name))]));
  const bad = [];
  tasks.forEach((t, i) => {
    if (typeof t.task !== 'string' || !t.task.trim()) bad.push(`#${i}: empty task`);
    else if (!byServer.has(t.server)) bad.push(`#${i} "${t.task}": no fixture for server "${t.server}"`);
    else if (!byServer.get(t.server).has(t.tool)) bad.push(`#${i} "${t.task}": server "${t.server}" has no tool "${t.tool}"`);
  });
  const seen = new Set();
  tasks.forEach((t, i) => {
    if (seen.has(t.task)) bad.push(`#${i} "${t.task}": duplicate task`);
    seen.add(t.task);
  });
  if (bad.length) throw new Error(`tasks.json: ${bad.length} bad label(s):\n  ${bad.join('\n  ')}`);
  return tasks;
}

/**
 * Whether a task is in the held-out half, which no ranking change may be tuned against: the
 * first byte of the SHA-256 of its id (its text, unique in tasks.json) is odd. The other half
 * (even) is the tuning half. Fixed before any tuning, so that the held-out figures tell how the
 * search does on requests it was not fitted to.
 */
export const isHeldOut = (task) => createHash('sha256').update(task.task).digest()[0] % 2 === 1;

/** The exposed name of a server's tool (`<server>__<tool>`, the daemon's default prefix). */
export const exposedName = (server, tool) => `${server}__${tool}`;

/** Percentile `p` (0..100) of an ascending array, nearest rank. */
export function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/**
 * Parses `--flag`, `--key value` and `--key=value` arguments against `spec` {key: 'bool' |
 * 'string' | 'number'}. On --help or a bad argument prints `usage` and exits (0 or 2).
 */
export function parseArgs(argv, spec, usage) {
  const out = {};
  const bad = (msg) => {
    if (msg) console.error(msg);
    console.error(usage);
    process.exit(msg ? 2 : 0);
  };
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === '--help' || argv[i] === '-h') bad();
    const m = /^--([^=]+)(?:=(.*))?$/.exec(argv[i]);
    if (!m || !(m[1] in spec)) bad(`unknown argument: ${argv[i]}`);
    const [, key, inline] = m;
    if (spec[key] === 'bool') {
      out[key] = true;
      continue;
    }
    const v = inline ?? argv[++i];
    if (v === undefined) bad(`--${key} needs a value`);
    out[key] = spec[key] === 'number' ? Number(v) : v;
    if (spec[key] === 'number' && !Number.isFinite(out[key])) bad(`--${key}: not a number: ${v}`);
  }
  return out;
}

/**
 * Starts `command args` as a stdio MCP server and connects the SDK client to it. Besides the
 * client it gives listRawTools(): every page of tools/list, as the raw JSON the server sent
 * (read off the transport before the SDK parses it, so nothing is dropped or reordered).
 * A failed connect throws with the end of the server's stderr.
 */
export async function connectRaw({ command, args = [], env = {}, cwd, name = 'mcpmux-search-bench' }) {
  const { Client } = await importNode('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await importNode('@modelcontextprotocol/sdk/client/stdio.js');
  const transport = new StdioClientTransport({ command, args, env: { ...process.env, ...env }, cwd, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d) => (stderr += d));
  const raw = new Map(); // request id -> raw result
  const start = transport.start.bind(transport);
  transport.start = async () => {
    // Client.connect has set onmessage by now: look at each message first.
    const onmessage = transport.onmessage;
    transport.onmessage = (msg, extra) => {
      if (msg && 'id' in msg && msg.result) raw.set(msg.id, msg.result);
      onmessage?.(msg, extra);
    };
    return start();
  };
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  try {
    await client.connect(transport);
  } catch (e) {
    throw new Error(`${e.message}\n--- server stderr:\n${stderr.slice(-2000)}`);
  }
  async function listRawTools() {
    try {
      return await listPages();
    } catch (e) {
      throw new Error(`${e.message}\n--- server stderr:\n${stderr.slice(-2000)}`);
    }
  }
  async function listPages() {
    const tools = [];
    let cursor;
    do {
      const before = new Set(raw.keys());
      const page = await client.listTools(cursor ? { cursor } : undefined);
      const id = [...raw.keys()].find((k) => !before.has(k) && Array.isArray(raw.get(k).tools));
      if (id === undefined) throw new Error('tools/list answer not seen on the transport');
      tools.push(...raw.get(id).tools);
      raw.clear();
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }
  return { client, listRawTools, stderr: () => stderr };
}

/**
 * A small value that satisfies JSON Schema `s`, with `text` for strings (best effort: required
 * properties only, the first branch of a union, empty arrays).
 */
export function minimalValue(s, text = '') {
  if (!s || typeof s !== 'object') return null;
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
  const branch = s.anyOf ?? s.oneOf;
  if (Array.isArray(branch) && branch.length) return minimalValue(branch[0], text);
  if (Array.isArray(s.allOf) && s.allOf.length) return Object.assign({}, ...s.allOf.map((x) => minimalValue(x, text)));
  const type = Array.isArray(s.type) ? s.type[0] : (s.type ?? (s.properties ? 'object' : undefined));
  switch (type) {
    case 'object':
      return Object.fromEntries((s.required ?? []).map((k) => [k, minimalValue(s.properties?.[k], text)]));
    case 'array':
      return [];
    case 'string':
      return text;
    case 'number':
    case 'integer':
      return typeof s.minimum === 'number' ? s.minimum : 0;
    case 'boolean':
      return false;
    default:
      return null;
  }
}
