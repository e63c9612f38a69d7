// modern_server.mjs — an MCP server of the 2026-07-28 era only, on the official v2 server SDK
// (@modelcontextprotocol/server 2.4.0, `legacy: 'reject'`: initialize is refused with -32022),
// for the era tests. Tools: echo {text}, slow {steps} (progress), confirm {what} (asks for
// input with an input_required result: an elicitation), add_tool (a new tool 100 ms later:
// tools/list_changed on the listen stream), touch (resources/updated for the resource
// fixture://counter, to listen streams that subscribed to it). LEGACY=serve makes it dual-era.
// `--http PORT` serves it over Streamable HTTP instead (modern only; a small node:http adapter
// around the SDK's web-standard handler), where each request has an instance of its own: the
// tools added and the changes to announce live in the process, not in an instance.
import { McpServer, inputRequired, acceptedContent, createMcpHandler, fromJsonSchema } from '@modelcontextprotocol/server';
import { createServer } from 'node:http';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod/v4';

let added = 0;
const httpPort = process.argv.includes('--http') ? Number(process.argv[process.argv.indexOf('--http') + 1]) : 0;
let handler; // the HTTP handler: its notify reaches every open listen stream

function build() {
  const server = new McpServer(
    { name: 'modern-fixture', version: '1.0.0' },
    { capabilities: { resources: { subscribe: true, listChanged: true } } },
  );
  server.registerResource('counter', 'fixture://counter', { mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: String(added) }],
  }));
  server.registerTool('touch', { description: 'Say fixture://counter changed (resources/updated)' }, async () => {
    if (handler) handler.notify.resourceUpdated('fixture://counter');
    else await server.server.sendResourceUpdated({ uri: 'fixture://counter' });
    return { content: [{ type: 'text', text: 'touched' }] };
  });
  server.registerTool('echo', { description: 'Echo the text', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text }] }));
  // Its region travels as the Mcp-Param-Region header too (x-mcp-header), over HTTP.
  server.registerTool('where', {
    description: 'Say the region',
    inputSchema: fromJsonSchema({ type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } }, required: ['region'] }),
  }, async ({ region }) => ({ content: [{ type: 'text', text: `region ${region}` }] }));
  server.registerTool('slow', { description: 'Report progress, then answer', inputSchema: z.object({ steps: z.number().int() }) },
    async ({ steps }, ctx) => {
      const token = ctx.mcpReq._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        await new Promise((r) => setTimeout(r, 20));
        if (token !== undefined)
          await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps } });
      }
      await new Promise((r) => setTimeout(r, 30));
      return { content: [{ type: 'text', text: `done ${steps}` }] };
    });
  server.registerTool('confirm', { description: 'Ask the user to confirm', inputSchema: z.object({ what: z.string() }) },
    async ({ what }, ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'ok', z.object({ ok: z.boolean() }));
      if (answer === undefined)
        return inputRequired({
          inputRequests: {
            ok: inputRequired.elicit({
              message: `Really ${what}?`,
              requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
            }),
          },
          requestState: `confirm:${what}`,
        });
      return { content: [{ type: 'text', text: `confirmed=${answer.ok} state=${ctx.mcpReq.requestState?.() ?? '-'}` }] };
    });
  server.registerTool('add_tool', { description: 'Add a tool (tools/list_changed)' }, async () => {
    const name = `added_${++added}`;
    setTimeout(() => {
      if (handler) handler.notify.toolsChanged(); // the next instances register it (below)
      else addedTool(server, name);
    }, 100);
    return { content: [{ type: 'text', text: `adding ${name}` }] };
  });
  if (handler) for (let i = 1; i <= added; i++) addedTool(server, `added_${i}`);
  return server;
}

function addedTool(server, name) {
  server.registerTool(name, { description: 'added later' }, async () => ({ content: [{ type: 'text', text: name }] }));
}

const onerror = (e) => console.error('modern-fixture:', e.message);
if (httpPort) {
  handler = createMcpHandler(build, { legacy: 'reject', onerror });
  createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const abort = new AbortController();
    res.on('close', () => abort.abort()); // the client closed the stream: the request is cancelled
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const response = await handler.fetch(
      new Request(`http://127.0.0.1:${httpPort}${req.url}`, { method: req.method, headers: req.headers, body, signal: abort.signal }),
    );
    res.writeHead(response.status, Object.fromEntries(response.headers));
    try {
      if (response.body) for await (const chunk of response.body) res.write(chunk);
    } catch {
      // aborted
    }
    res.end();
  }).listen(httpPort, '127.0.0.1', () => console.error(`modern-fixture: http on ${httpPort}`));
} else {
  serveStdio(build, { legacy: process.env.LEGACY === 'serve' ? 'serve' : 'reject', onerror });
}
