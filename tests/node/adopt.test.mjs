// Moving an agent onto mcpmux and back, as a user does it: `mcpmux agents`, `mcpmux adopt`,
// then the agent started the way its rewritten config says (the official SDK client over
// stdio) reaches the adopted server through mcpmux; `mcpmux unadopt` gives the file back byte
// for byte. A real mcpmuxd; a temporary HOME with the clients' files.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { FAKE_MCP_SERVER, MCPMUX, startDaemon } from './harness.mjs';

// Runs mcpmux with the temp HOME; `input` goes to its stdin (the answer to "Apply?").
function run(d, args, { input, onOutput, env = {} } = {}) {
  return new Promise((resolve) => {
    const p = spawn(MCPMUX, ['--socket', d.socket, ...args], {
      cwd: d.dir,
      env: { ...process.env, HOME: d.dir, XDG_CONFIG_HOME: path.join(d.dir, 'xdg'), XDG_STATE_HOME: path.join(d.dir, 'state'), ...env },
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c) => {
      stdout += c;
      onOutput?.(stdout, p);
    });
    p.stderr.on('data', (c) => (stderr += c));
    if (input !== undefined) p.stdin.end(input);
    p.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const desktopFile = (d) => path.join(d.dir, 'xdg/Claude/claude_desktop_config.json');
function writeDesktop(d) {
  mkdirSync(path.dirname(desktopFile(d)), { recursive: true });
  const text = JSON.stringify(
    {
      mcpServers: {
        fake: { command: FAKE_MCP_SERVER, args: ['--tools', '3'] },
        odd: { type: 'websocket', url: 'ws://localhost:9/x' },
      },
      globalShortcut: 'Ctrl+Space',
      unknownField: { kept: [1, 2, 3] },
    },
    null,
    2,
  );
  writeFileSync(desktopFile(d), text);
  return text;
}

test('adopt moves an agent onto mcpmux, its SDK client reaches the servers, unadopt restores every byte', async () => {
  const d = await startDaemon({ servers: {} });
  try {
    const original = writeDesktop(d);
    const agents = await run(d, ['agents', '--json']);
    assert.equal(agents.code, 0, agents.stderr);
    const desktop = JSON.parse(agents.stdout).agents.find((a) => a.agent === 'claude-desktop');
    assert.equal(desktop.servers, '1 (+1)'); // "odd" cannot be carried over: it stays
    assert.equal(desktop.adopted, false);

    const dry = await run(d, ['adopt', 'claude-desktop', '--dry-run', '--config', d.configFile]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /-\s+"fake": \{/);
    assert.match(dry.stdout, /\+\s+"mcpmux": \{/);
    assert.equal(readFileSync(desktopFile(d), 'utf8'), original, 'a dry run writes nothing');

    const out = await run(d, ['adopt', 'claude-desktop', '--yes', '--config', d.configFile]);
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.match(out.stdout, /adopted: .*claude_desktop_config\.json now runs mcpmux/);
    assert.match(out.stdout, /fake: ready/, 'the server is up before adopt returns');
    assert.match(out.stdout, /left in .*"odd" \(cannot be carried over\)/);
    assert.match(readFileSync(d.configFile, 'utf8'), /\[servers\.fake\]/);
    const backups = readdirSync(path.dirname(desktopFile(d))).filter((f) => f.includes('.mcpmux-backup-'));
    assert.equal(backups.length, 1);
    assert.equal(readFileSync(path.join(path.dirname(desktopFile(d)), backups[0]), 'utf8'), original);

    // The agent as its config now says: one entry, an absolute path, `connect`.
    const rewritten = JSON.parse(readFileSync(desktopFile(d), 'utf8'));
    assert.deepEqual(Object.keys(rewritten.mcpServers), ['mcpmux', 'odd']);
    assert.equal(rewritten.globalShortcut, 'Ctrl+Space');
    assert.deepEqual(rewritten.unknownField, { kept: [1, 2, 3] });
    const entry = rewritten.mcpServers.mcpmux;
    assert.ok(path.isAbsolute(entry.command));
    // The daemon's socket is not where an agent's bare environment would look: the entry says it.
    assert.deepEqual(entry.args, ['connect', '--spawn', '--socket', d.socket]);
    const client = new Client({ name: 'adopted-agent', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: entry.command, args: entry.args }));  // the SDK's default environment
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name.startsWith('fake__')), JSON.stringify(tools.map((t) => t.name)));
    await client.close();

    // A second adopt is a no-op.
    const again = await run(d, ['adopt', 'claude-desktop', '--yes', '--config', d.configFile]);
    assert.equal(again.code, 0);
    assert.match(again.stdout, /already uses mcpmux/);

    // An entry written before (no --socket) is brought up to date by adopting again; the first
    // adoption's backup stays the one unadopt restores from.
    writeFileSync(desktopFile(d), readFileSync(desktopFile(d), 'utf8').replace(/,\s*"--socket",\s*"[^"]*"/, ''));
    assert.deepEqual(JSON.parse(readFileSync(desktopFile(d), 'utf8')).mcpServers.mcpmux.args, ['connect', '--spawn']);
    const update = await run(d, ['adopt', 'claude-desktop', '--yes', '--config', d.configFile]);
    assert.equal(update.code, 0, update.stdout + update.stderr);
    assert.match(update.stdout, /updated: .*claude_desktop_config\.json/);
    assert.deepEqual(JSON.parse(readFileSync(desktopFile(d), 'utf8')).mcpServers.mcpmux.args, ['connect', '--spawn', '--socket', d.socket]);
    assert.equal(readdirSync(path.dirname(desktopFile(d))).filter((f) => f.includes('.mcpmux-backup-')).length, 1);

    const back = await run(d, ['unadopt', 'claude-desktop', '--yes']);
    assert.equal(back.code, 0, back.stdout + back.stderr);
    assert.equal(readFileSync(desktopFile(d), 'utf8'), original, 'unadopt gives back every byte');
    assert.match(readFileSync(d.configFile, 'utf8'), /\[servers\.fake\]/, 'mcpmux keeps its servers');
  } finally {
    await d.stop();
  }
});

test('a VS Code workspace file keeps its comments; an edit made while adopt waits is refused; unadopt --remove; bad JSON is not touched', async () => {
  const d = await startDaemon({ servers: {} });
  try {
    const file = path.join(d.dir, '.vscode/mcp.json');
    mkdirSync(path.dirname(file), { recursive: true });
    const original = `{
  // servers for this workspace
  "inputs": [{ "type": "promptString", "id": "k" }],
  "servers": {
    "fake": { "type": "stdio", "command": ${JSON.stringify(FAKE_MCP_SERVER)}, "args": [] }, // trailing comma next
  },
}
`;
    writeFileSync(file, original);

    // The person edits the file while the prompt waits: nothing is written to it.
    let edited = false;
    const raced = await run(d, ['adopt', 'vscode-workspace', '--config', d.configFile], {
      onOutput: (stdout, p) => {
        if (!edited && stdout.includes('Apply? [y/N]')) {
          edited = true;
          writeFileSync(file, original.replace('servers for this workspace', 'edited meanwhile'));
          p.stdin.end('y\n');
        }
      },
    });
    assert.equal(raced.code, 1);
    assert.match(raced.stderr, /changed while mcpmux was working on it; nothing was written/);
    assert.match(readFileSync(file, 'utf8'), /edited meanwhile/);
    assert.doesNotMatch(readFileSync(d.configFile, 'utf8'), /\[servers\.fake\]/, 'nor to mcpmux\'s config');
    writeFileSync(file, original);

    const out = await run(d, ['adopt', 'vscode-workspace', '--config', d.configFile], { input: 'y\n' });
    assert.equal(out.code, 0, out.stdout + out.stderr);
    const adopted = readFileSync(file, 'utf8');
    assert.match(adopted, /\/\/ servers for this workspace/);
    assert.match(adopted, /"inputs": \[\{ "type": "promptString", "id": "k" \}\]/);
    assert.match(adopted, /"type": "stdio",\s+"command": "\/.*mcpmux"/);
    assert.match(readFileSync(d.configFile, 'utf8'), /\[servers\.fake\]/);
    const back = await run(d, ['unadopt', 'vscode-workspace', '--yes', '--remove']);
    assert.equal(back.code, 0, back.stdout + back.stderr);
    assert.equal(readFileSync(file, 'utf8'), original);
    assert.doesNotMatch(readFileSync(d.configFile, 'utf8'), /\[servers\.fake\]/, '--remove drops mcpmux\'s copy');

    writeFileSync(file, '{ "servers": { "x": ');
    const bad = await run(d, ['adopt', 'vscode-workspace', '--yes', '--config', d.configFile]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /is not JSON \(line 1, column \d+: .*\); it was not touched/);
    assert.equal(readFileSync(file, 'utf8'), '{ "servers": { "x": ');
  } finally {
    await d.stop();
  }
});

test('Codex: its [mcp_servers.*] tables become one, the rest of the TOML stays, and come back', async () => {
  const d = await startDaemon({ servers: {} });
  try {
    const file = path.join(d.dir, '.codex/config.toml');
    mkdirSync(path.dirname(file), { recursive: true });
    const original = `model = "gpt-5-codex"\n\n[mcp_servers.fake]\ncommand = ${JSON.stringify(FAKE_MCP_SERVER)}\nargs = []\n\n[mcp_servers.fake.env]\nLEVEL = "2"\n\n[tui]\nnotifications = true\n`;
    writeFileSync(file, original);
    const out = await run(d, ['adopt', 'codex-project', '--yes', '--config', d.configFile]);
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.match(out.stdout, /fake: ready/);
    const adopted = readFileSync(file, 'utf8');
    assert.match(adopted, /^model = "gpt-5-codex"\n\n\[mcp_servers\.mcpmux\]\ncommand = "\/.*mcpmux"\nargs = \["connect", "--spawn", "--socket", ".*mcpmux\.sock"\]\n\n\[tui\]\nnotifications = true\n$/);
    assert.match(readFileSync(d.configFile, 'utf8'), /LEVEL = "2"/);
    const back = await run(d, ['unadopt', 'codex-project', '--yes']);
    assert.equal(back.code, 0, back.stderr);
    assert.equal(readFileSync(file, 'utf8'), original);
  } finally {
    await d.stop();
  }
});

// Claude Code's default scope: `claude mcp add` without --scope keeps a server under
// projects[PATH].mcpServers in ~/.claude.json. Two projects, two accounts of one server (the
// same command, another token): each project keeps seeing only its own through mcpmux, the
// tokens leave the config for the secrets file, and unadopt gives every byte back.
test('Claude Code local scope: a profile per project, tokens in the secret store, every byte back', async () => {
  // No Secret Service: the secrets file under the temp XDG_CONFIG_HOME, for the daemon and mcpmux.
  const d = await startDaemon({ servers: {} }, { env: { DBUS_SESSION_BUS_ADDRESS: '' } });
  const env = { XDG_CONFIG_HOME: path.join(d.dir, 'config'), DBUS_SESSION_BUS_ADDRESS: '' };
  try {
    const file = path.join(d.dir, '.claude.json');
    const server = (token) => ({ type: 'stdio', command: FAKE_MCP_SERVER, args: ['--tools', '2'], env: { GITHUB_PERSONAL_ACCESS_TOKEN: token } });
    const original = JSON.stringify(
      {
        numStartups: 3,
        projects: {
          '/src/work-app': { allowedTools: [], mcpServers: { 'gh-work': server('ghp_work_0123456789') } },
          '/src/home-app': { allowedTools: [], mcpServers: { 'gh-home': server('ghp_home_9876543210') } },
          '/src/other': { allowedTools: [], mcpServers: {} },
        },
      },
      null,
      2,
    );
    writeFileSync(file, original);

    const agents = await run(d, ['agents', '--json'], { env });
    assert.equal(agents.code, 0, agents.stderr);
    const local = JSON.parse(agents.stdout).agents.filter((a) => a.agent === 'claude-code' && a.local_project);
    assert.deepEqual(local.map((a) => [a.local_project, a.servers]), [['/src/work-app', '1'], ['/src/home-app', '1']]);

    const out = await run(d, ['adopt', 'claude-code', '--yes', '--config', d.configFile], { env });
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.match(out.stdout, /gh-work: ready/);
    assert.match(out.stdout, /gh-home: ready/, 'the second account is not folded into the first');
    const secretsFile = path.join(d.dir, 'config/mcpmux/secrets.json');
    assert.match(out.stdout, new RegExp(`moved to ${secretsFile}: gh-work_GITHUB_PERSONAL_ACCESS_TOKEN, gh-home_GITHUB_PERSONAL_ACCESS_TOKEN`));
    assert.match(out.stdout, /the backup still holds those credentials in plain text/);
    assert.doesNotMatch(out.stdout + out.stderr, /ghp_/, 'names only, never values');
    const config = readFileSync(d.configFile, 'utf8');
    assert.doesNotMatch(config, /ghp_/);
    assert.match(config, /GITHUB_PERSONAL_ACCESS_TOKEN = "\$\{secret:gh-home_GITHUB_PERSONAL_ACCESS_TOKEN\}"/);
    assert.deepEqual(JSON.parse(readFileSync(secretsFile, 'utf8')), {
      'gh-home_GITHUB_PERSONAL_ACCESS_TOKEN': 'ghp_home_9876543210',
      'gh-work_GITHUB_PERSONAL_ACCESS_TOKEN': 'ghp_work_0123456789',
    });
    assert.equal(statSync(secretsFile).mode & 0o777, 0o600);

    // Each project's entry names its profile; through it, only that project's server.
    const adopted = JSON.parse(readFileSync(file, 'utf8'));
    assert.deepEqual(adopted.projects['/src/other'].mcpServers, {}, 'an empty list is left alone');
    for (const [project, own] of [['/src/work-app', 'gh-work'], ['/src/home-app', 'gh-home']]) {
      const entry = adopted.projects[project].mcpServers.mcpmux;
      assert.deepEqual(Object.keys(adopted.projects[project].mcpServers), ['mcpmux']);
      assert.equal(entry.args[2], '--profile');
      const tools = await run(d, ['tools', '--json', '--profile', entry.args[3]], { env });
      assert.equal(tools.code, 0, tools.stderr);
      const servers = new Set(JSON.parse(tools.stdout).map((t) => t.server));
      assert.deepEqual([...servers], [own], `${project} sees ${[...servers]}`);
    }

    const back = await run(d, ['unadopt', 'claude-code', '--yes'], { env });
    assert.equal(back.code, 0, back.stdout + back.stderr);
    assert.equal(readFileSync(file, 'utf8'), original, 'unadopt gives back every byte');
    assert.match(back.stdout, /removed the backup /);
    assert.doesNotMatch(back.stdout + back.stderr, /ghp_/, 'the restored tokens are not printed');
    assert.deepEqual(readdirSync(d.dir).filter((f) => f.includes('.mcpmux-backup-')), [], 'the plain-text backup is gone');
    assert.ok(existsSync(d.configFile));
  } finally {
    await d.stop();
  }
});
