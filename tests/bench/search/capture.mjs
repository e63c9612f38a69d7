// capture.mjs — records a real MCP server's tools/list as a fixture for the tool-search benchmark.
//
// usage:
//   node capture.mjs PKG@VERSION NAME [--env K=V]... [--bin BIN] [--node22] [--out DIR] [--keep] [-- ARGS...]
//   node capture.mjs --compat NAME... [--out DIR] [--keep]
//
// The first form installs PKG@VERSION with `npm install` in a dir of its own under /tmp (as
// `npx -y` would: its own dependency tree, which can change what it lists), runs its
// bin (BIN, else the package's only or same-named bin) as `node <script> ARGS...` with the env
// K=V added (dummy credentials), connects the SDK client over stdio, pages through tools/list
// and writes DIR/NAME.json (default fixtures/) as
//   { server, source: "PKG@VERSION", captured: "YYYY-MM-DD", tools: [...as the server sent them] }.
// `{wd}` in ARGS and env values is replaced by a working directory of the server's own in the
// scratch dir. --node22 runs it on Node 22 from the `node` npm package (for packages whose
// engines need it).
// The second form takes each server's package, bin script, env, args and setup from the
// compatibility sweep's recipes (tests/compat/servers.mjs) and installs them with `npm ci` from
// tests/compat's package.json and package-lock.json: the dependency tree pinned there, so a
// capture can be redone exactly. (A fresh `npm install` floats the dependencies a package does
// not pin; e.g. server-gitlab@2025.4.25 then gets zod 4 and lists empty input schemas, which
// the SDK client rejects.)
// The tools are the raw JSON of the server's answer (read off the transport), not the SDK's
// parsed copy, so nothing is dropped or reordered. The scratch dir is removed unless --keep.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FIXTURES, HERE, connectRaw } from './common.mjs';

const COMPAT = path.join(HERE, '../../compat');
// Node 22 for --node22: the version the compatibility sweep pins.
const NODE22_SPEC = `node@${JSON.parse(readFileSync(path.join(COMPAT, 'package.json'), 'utf8')).dependencies.node}`;

function usage(msg) {
  if (msg) console.error(`capture: ${msg}`);
  console.error(
    'usage: node capture.mjs PKG@VERSION NAME [--env K=V]... [--bin BIN] [--node22] [--out DIR] [--keep] [-- ARGS...]\n' +
      '       node capture.mjs --compat NAME... [--out DIR] [--keep]',
  );
  process.exit(2);
}

/** Splits `pkg@version` (the package may be scoped) into [pkg, version]. */
function splitSpec(spec) {
  const at = spec.lastIndexOf('@');
  if (at <= 0) usage(`${spec}: give an exact version, PKG@VERSION`);
  return [spec.slice(0, at), spec.slice(at + 1)];
}

/** Recipes [{name, pkg, version, entry?, bin?, node22, args(wd), env(wd), setup?(wd)}] from the command line. */
async function parseCommandLine(argv) {
  const opts = { out: FIXTURES, keep: false };
  const dash = argv.indexOf('--');
  const extra = dash >= 0 ? argv.slice(dash + 1) : [];
  const rest = dash >= 0 ? argv.slice(0, dash) : argv;
  const positional = [];
  const env = {};
  let bin;
  let node22 = false;
  let compat = false;
  for (let i = 0; i < rest.length; ++i) {
    const a = rest[i];
    if (a === '--out') opts.out = path.resolve(rest[++i] ?? usage('--out needs a dir'));
    else if (a === '--keep') opts.keep = true;
    else if (a === '--compat') compat = true;
    else if (a === '--node22') node22 = true;
    else if (a === '--bin') bin = rest[++i] ?? usage('--bin needs a name');
    else if (a === '--env') {
      const kv = rest[++i] ?? usage('--env needs K=V');
      const eq = kv.indexOf('=');
      if (eq <= 0) usage(`--env ${kv}: want K=V`);
      env[kv.slice(0, eq)] = kv.slice(eq + 1);
    } else if (a.startsWith('--')) usage(`unknown option ${a}`);
    else positional.push(a);
  }
  const fill = (s, wd) => s.replaceAll('{wd}', wd);
  if (!compat) {
    if (positional.length !== 2) usage();
    const [pkg, version] = splitSpec(positional[0]);
    return {
      opts,
      recipes: [
        {
          name: positional[1],
          pkg,
          version,
          bin,
          node22,
          args: (wd) => extra.map((s) => fill(s, wd)),
          env: (wd) => Object.fromEntries(Object.entries(env).map(([k, v]) => [k, fill(v, wd)])),
        },
      ],
    };
  }
  if (!positional.length) usage('--compat needs server names');
  const { servers } = await import(path.join(COMPAT, 'servers.mjs'));
  const pinned = JSON.parse(readFileSync(path.join(COMPAT, 'package.json'), 'utf8')).dependencies;
  const recipes = positional.map((name) => {
    const s = servers.find((x) => x.name === name);
    if (!s) usage(`no server "${name}" in tests/compat/servers.mjs (have: ${servers.map((x) => x.name).join(', ')})`);
    return { args: () => [], env: () => ({}), ...s, version: pinned[s.pkg] };
  });
  return { opts, recipes, compatMode: true };
}

/** The script a recipe runs: its `entry`, else the package's bin named `bin` (or its only or same-named bin). */
function scriptOf(scratch, r) {
  const dir = path.join(scratch, 'node_modules', r.pkg);
  const meta = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
  if (meta.version !== r.version) throw new Error(`${r.pkg}: installed ${meta.version}, wanted ${r.version}`);
  if (r.entry) return path.join(dir, r.entry);
  const bins = typeof meta.bin === 'string' ? { [meta.name.split('/').pop()]: meta.bin } : (meta.bin ?? {});
  const names = Object.keys(bins);
  const pick = r.bin ?? (names.length === 1 ? names[0] : names.find((n) => n === meta.name.split('/').pop()));
  if (!pick || !bins[pick]) throw new Error(`${r.pkg}: choose a bin with --bin (has: ${names.join(', ') || 'none'})`);
  return path.join(dir, bins[pick]);
}

const { opts, recipes, compatMode } = await parseCommandLine(process.argv.slice(2));
const scratch = mkdtempSync(path.join(os.tmpdir(), 'mcpmux-capture-'));

/** Runs `npm ARGS` in `dir` (no audit, no browser downloads: only tools/list is asked). */
function npm(dir, args) {
  console.error(`capture: npm ${args.join(' ')} (in ${dir})`);
  execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, PUPPETEER_SKIP_DOWNLOAD: '1', PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1' },
  });
}

/** `npm install SPECS` in a new dir `scratch/sub`, as `npx -y` would (each package with its own dependency tree). */
function install(sub, specs) {
  const dir = path.join(scratch, sub);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'capture', private: true }));
  npm(dir, ['install', '--save-exact', ...specs]);
  return dir;
}

try {
  // Where each recipe's package is installed, and Node 22 for the recipes that need it.
  let pkgDirOf;
  let node22 = null;
  if (compatMode) {
    const dir = path.join(scratch, 'compat');
    mkdirSync(dir);
    for (const f of ['package.json', 'package-lock.json']) copyFileSync(path.join(COMPAT, f), path.join(dir, f));
    npm(dir, ['ci']);
    pkgDirOf = () => dir;
    node22 = path.join(dir, 'node_modules/node/bin/node');
  } else {
    if (recipes.some((r) => r.node22)) node22 = path.join(install('node22', [NODE22_SPEC]), 'node_modules/node/bin/node');
    pkgDirOf = (r) => install(`pkg-${r.name}`, [`${r.pkg}@${r.version}`]);
  }
  const date = new Date().toISOString().slice(0, 10);
  mkdirSync(opts.out, { recursive: true });
  let failed = 0;
  for (const r of recipes) {
    const wd = path.join(scratch, 'wd', r.name);
    mkdirSync(wd, { recursive: true });
    try {
      const pkgDir = pkgDirOf(r);
      r.setup?.(wd);
      const command = r.node22 ? node22 : process.execPath;
      const { client, listRawTools } = await connectRaw({ command, args: [scriptOf(pkgDir, r), ...r.args(wd)], env: r.env(wd), cwd: wd });
      const tools = await listRawTools().finally(() => client.close().catch(() => {}));
      const serverInfo = client.getServerVersion();
      const fixture = { server: r.name, source: `${r.pkg}@${r.version}`, captured: date, tools };
      const file = path.join(opts.out, `${r.name}.json`);
      writeFileSync(file, JSON.stringify(fixture, null, 2) + '\n');
      console.log(`${r.name.padEnd(12)} ${String(tools.length).padStart(3)} tools  ${fixture.source} (${serverInfo?.name} ${serverInfo?.version}) -> ${file}`);
    } catch (e) {
      ++failed;
      console.error(`${r.name}: FAILED: ${e.message}`);
    }
  }
  process.exitCode = failed ? 1 : 0;
} finally {
  if (opts.keep) console.error(`capture: kept ${scratch}`);
  else rmSync(scratch, { recursive: true, force: true });
}
