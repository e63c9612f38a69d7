// filesystem.test.mjs — the official server-filesystem reference server behind mcpmuxd, given a
// temp dir as its allowed directory; the SDK client lists and reads a file created there, and
// everything mcpmux sent the client is validated against the MCP 2025-11-25 schema.
//
// server-filesystem replaces its command-line directories with whatever the client answers to
// roots/list. mcpmuxd answers roots/list with the configured roots, else the configured cwd,
// else no roots at all; the main suite configures `roots = [dir]` explicitly, the last suite
// checks that the default (no roots, no cwd) leaves the command-line directory in force.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, readFileSync, realpathSync } from 'node:fs';
import { startDaemon, NODE, FILESYSTEM_JS, resultText } from './harness.mjs';
import { validateDownstream, assertReport } from './schema.mjs';

describe('server-filesystem behind mcpmuxd (roots = [dir])', () => {
  let daemon;
  let client;
  let root;

  before(async () => {
    daemon = await startDaemon((dir) => {
      root = realpathSync(dir) + '/files';
      mkdirSync(root);
      writeFileSync(`${root}/hello.txt`, 'Hello from the filesystem test\nline two\n');
      mkdirSync(`${root}/sub`);
      return { servers: { fs: { command: NODE, args: [FILESYSTEM_JS, root], roots: [root] } } };
    });
    client = await daemon.connect({ capture: 'client.jsonl' });
  });

  after(async () => {
    await daemon?.stop();
  });

  it('tools/list has the filesystem tools as fs__<tool>', async () => {
    const names = (await client.listTools()).tools.map((t) => t.name);
    for (const n of ['fs__list_directory', 'fs__read_text_file', 'fs__write_file', 'fs__list_allowed_directories'])
      assert.ok(names.includes(n), `${n} missing from ${names.join(', ')}`);
  });

  it('list_allowed_directories names the configured directory', async () => {
    const r = await client.callTool({ name: 'fs__list_allowed_directories', arguments: {} });
    assert.ok(!r.isError, resultText(r));
    assert.ok(resultText(r).includes(root), `allowed directories: ${resultText(r)}\n(expected ${root})`);
  });

  it('list_directory shows the file and the subdirectory', async () => {
    const r = await client.callTool({ name: 'fs__list_directory', arguments: { path: root } });
    assert.ok(!r.isError, resultText(r));
    const lines = resultText(r).split('\n').sort();
    assert.deepEqual(lines, ['[DIR] sub', '[FILE] hello.txt']);
  });

  it('read_text_file returns the file content', async () => {
    const r = await client.callTool({ name: 'fs__read_text_file', arguments: { path: `${root}/hello.txt` } });
    assert.ok(!r.isError, resultText(r));
    assert.equal(resultText(r), 'Hello from the filesystem test\nline two\n');
  });

  it('write_file writes through mcpmux', async () => {
    const r = await client.callTool({ name: 'fs__write_file', arguments: { path: `${root}/sub/new.txt`, content: 'written ✓' } });
    assert.ok(!r.isError, resultText(r));
    assert.equal(readFileSync(`${root}/sub/new.txt`, 'utf8'), 'written ✓');
  });

  it('a path outside the allowed directory is refused by the server', async () => {
    const r = await client.callTool({ name: 'fs__read_text_file', arguments: { path: '/etc/passwd' } });
    assert.equal(r.isError, true, resultText(r));
    assert.match(resultText(r), /denied|outside/i);
  });

  it('schema: everything mcpmux sent the SDK client is valid MCP 2025-11-25', () => {
    assertReport(validateDownstream(client.captureFile), ['InitializeResult', 'ListToolsResult', 'CallToolResult']);
  });
});

describe('server-filesystem behind mcpmuxd with the default roots', () => {
  let daemon;
  let client;
  let root;

  before(async () => {
    daemon = await startDaemon((dir) => {
      root = realpathSync(dir) + '/files';
      mkdirSync(root);
      writeFileSync(`${root}/hello.txt`, 'default roots\n');
      return { servers: { fs: { command: NODE, args: [FILESYSTEM_JS, root] } } };
    });
    client = await daemon.connect({ capture: 'client.jsonl' });
    await client.listTools();
  });

  after(async () => {
    await daemon?.stop();
  });

  it('the directory given on the command line stays the only allowed directory', async () => {
    // Give the server time to ask roots/list after notifications/initialized.
    await new Promise((r) => setTimeout(r, 300));
    const r = await client.callTool({ name: 'fs__list_allowed_directories', arguments: {} });
    assert.equal(resultText(r), `Allowed directories:\n${root}`);
    const f = await client.callTool({ name: 'fs__read_text_file', arguments: { path: `${root}/hello.txt` } });
    assert.equal(resultText(f), 'default roots\n');
  });
});
