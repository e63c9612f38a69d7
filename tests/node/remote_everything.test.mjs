// remote_everything.test.mjs — the reference server server-everything in its two remote modes
// behind mcpmuxd: Streamable HTTP (`type = "http"`, /mcp) and legacy HTTP+SSE (`type = "sse"`,
// /sse). The official SDK client lists the tools, calls echo through each, and receives the
// server's notifications (progress of trigger-long-running-operation) through the mux.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { startDaemon, freePort, NODE, EVERYTHING_JS, resultText, within } from './harness.mjs';


// Starts server-everything in `mode` on a free port; resolves once it says it listens.
async function startEverything(mode) {
  const port = await freePort();
  const child = spawn(NODE, [EVERYTHING_JS, mode], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  await within(
    15000,
    new Promise((resolve, reject) => {
      child.stderr.on('data', (d) => {
        err += d;
        if (/listening|running on port/i.test(err)) resolve();
      });
      child.on('exit', (code) => reject(new Error(`server-everything ${mode} exited (${code}): ${err}`)));
    }),
    `server-everything ${mode} to listen`,
  );
  return { child, port };
}

describe('server-everything over Streamable HTTP and legacy SSE behind mcpmuxd', () => {
  let http;
  let sse;
  let daemon;
  let client;

  before(async () => {
    http = await startEverything('streamableHttp');
    sse = await startEverything('sse');
    daemon = await startDaemon(() => ({
      servers: {
        web: { type: 'http', url: `http://127.0.0.1:${http.port}/mcp` },
        legacy: { type: 'sse', url: `http://127.0.0.1:${sse.port}/sse` },
      },
    }));
    client = await daemon.connect({ capture: 'client.jsonl' });
  });

  after(async () => {
    await daemon?.stop();
    http?.child.kill('SIGKILL');
    sse?.child.kill('SIGKILL');
  });

  it('lists the tools of both remote servers', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of ['web__echo', 'legacy__echo', 'web__trigger-long-running-operation'])
      assert.ok(names.includes(n), `${n} missing from ${names.join(', ')}`);
  });

  for (const server of ['web', 'legacy']) {
    it(`${server}: echo answers through the mux`, async () => {
      const r = await client.callTool({ name: `${server}__echo`, arguments: { message: `hello ${server}` } });
      assert.equal(resultText(r), `Echo: hello ${server}`);
    });

    it(`${server}: the server's progress notifications reach the caller`, async () => {
      const progress = [];
      const r = await client.callTool(
        { name: `${server}__trigger-long-running-operation`, arguments: { duration: 1, steps: 3 } },
        undefined,
        { onprogress: (p) => progress.push(p), timeout: 20000 },
      );
      assert.match(resultText(r), /completed/i);
      assert.ok(progress.length >= 2, `saw ${progress.length} progress notifications`);
      assert.deepEqual(
        progress.map((p) => p.progress),
        progress.map((_, i) => i + 1),
      );
    });
  }

  it('status shows both remote servers ready, without their URLs or headers', async () => {
    const st = await daemon.status();
    for (const name of ['web', 'legacy']) {
      const s = st.servers.find((x) => x.name === name);
      assert.equal(s?.state, 'ready', JSON.stringify(s));
      assert.equal(s.pid, null);
    }
  });
});
