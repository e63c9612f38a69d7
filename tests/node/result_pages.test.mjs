// Big results paged (issue 46 point 2), end to end with the official SDK clients: a 300 KB tool
// answer cut at max_result_bytes and read back page by page with mcpmux__read_result through
// `mcpmux connect`, over /mcp as a 1.x session and as a stateless 2026-07-28 client; a handle
// another client got is refused; an outputSchema tool's structuredContent is never cut (the SDK
// validates what passes). The cut's rules and the store's expiry are unit-tested.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Client as V2Client, StreamableHTTPClientTransport as V2HTTP } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { fakeServer, freePort, startDaemon, waitFor, within } from './harness.mjs';

const READ = 'mcpmux__read_result';
const BIG = 300000;
const SERVERS = {
  big: fakeServer(), // the default cap, 100 000 bytes
  small: fakeServer({ max_result_bytes: 1000 }),
};

/** A page's own text and what its note says (`next` undefined: the last page). */
function split(text) {
  const at = text.lastIndexOf('\n\n[mcpmux: ');
  if (at < 0) return { text };
  const m = /"handle": "([^"]+)", "offset": (\d+)\}\]$/.exec(text.slice(at));
  assert.ok(m, `a handle in the note: ${text.slice(at)}`);
  return { text: text.slice(0, at), handle: m[1], next: Number(m[2]) };
}

/** Calls the huge tool and reads the whole text back; [pages, the text]. */
async function readWhole(client) {
  const first = split((await client.callTool({ name: 'big__huge_answer', arguments: { bytes: BIG } })).content[0].text);
  assert.ok(first.handle, 'the result was cut');
  let whole = first.text;
  let next = first.next;
  let pages = 1;
  while (next !== undefined && pages < 10) {
    const r = await client.callTool({ name: READ, arguments: { handle: first.handle, offset: next } });
    assert.ok(!r.isError, JSON.stringify(r).slice(0, 300));
    const p = split(r.content[0].text);
    whole += p.text;
    next = p.next;
    pages += 1;
  }
  return { pages, whole, handle: first.handle };
}

const names = async (client) => (await client.listTools()).tools.map((t) => t.name);

test('through mcpmux connect: cut, offered, read back whole; structured content kept whole', async () => {
  const d = await startDaemon({ servers: SERVERS });
  try {
    let changed = 0;
    const c = await d.connect({ setup: (cl) => cl.setNotificationHandler(ToolListChangedNotificationSchema, () => void (changed += 1)) });
    assert.ok(!(await names(c)).includes(READ), 'not offered before a cut');
    const { pages, whole, handle } = await readWhole(c);
    assert.equal(pages, 3);
    assert.equal(whole, 'x'.repeat(BIG));
    assert.ok(await waitFor(() => changed > 0), 'told that the tool list changed');
    assert.ok((await names(c)).includes(READ));

    // Another client gets none of it.
    const other = await d.connect({ name: 'other' });
    const theirs = await other.callTool({ name: READ, arguments: { handle, offset: 0 } });
    assert.equal(theirs.isError, true);
    assert.match(theirs.content[0].text, /belongs to another session/);

    // echo declares an outputSchema: within the cap the SDK validates it as it came...
    const fits = await c.callTool({ name: 'small__echo', arguments: { text: 'e'.repeat(450) } });
    assert.deepEqual(fits.structuredContent, { echo: 'e'.repeat(450) });
    // ...above it the call fails by name, never with a cut the SDK would reject.
    const over = await c.callTool({ name: 'small__echo', arguments: { text: 'e'.repeat(2000) } });
    assert.equal(over.isError, true);
    assert.match(over.content[0].text, /max_result_bytes \(1000\)/);
    assert.match(over.content[0].text, /small__echo/);
  } finally {
    await d.stop();
  }
});

test('over /mcp: a 1.x session and a stateless 2026-07-28 client read back; handles stay theirs', async () => {
  const port = await freePort();
  const d = await startDaemon({ daemon: { http: `127.0.0.1:${port}` }, servers: SERVERS });
  const closers = [];
  try {
    const tokenFile = (await d.status()).http.token_file;
    const opts = { requestInit: { headers: { Authorization: `Bearer ${readFileSync(tokenFile, 'utf8').trim()}` } } };
    const url = new URL(`http://127.0.0.1:${port}/mcp`);

    const v1 = new Client({ name: 'v1-pages', version: '1.0.0' });
    await within(15000, v1.connect(new StreamableHTTPClientTransport(url, opts)), 'v1 http connect');
    closers.push(() => v1.close());
    const legacy = await readWhole(v1);
    assert.equal(legacy.whole, 'x'.repeat(BIG));

    const v2 = new V2Client({ name: 'v2-pages', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await within(15000, v2.connect(new V2HTTP(url, opts)), 'v2 http connect');
    closers.push(() => v2.close());
    const modern = await readWhole(v2);
    assert.equal(modern.whole, 'x'.repeat(BIG));
    assert.ok((await names(v2)).includes(READ), 'offered to the modern client after its cut');

    // Each refuses the other's handle.
    const a = await v2.callTool({ name: READ, arguments: { handle: legacy.handle, offset: 0 } });
    assert.equal(a.isError, true);
    assert.match(a.content[0].text, /another session/);
    const b = await v1.callTool({ name: READ, arguments: { handle: modern.handle, offset: 0 } });
    assert.equal(b.isError, true);
    assert.match(b.content[0].text, /another session/);
  } finally {
    for (const close of closers) await close().catch(() => {});
    await d.stop();
  }
});
