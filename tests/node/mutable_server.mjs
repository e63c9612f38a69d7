// mutable_server.mjs DEFS.json — a stdio MCP server (2025-11-25, plain JSON-RPC lines) whose
// tools and prompts are read from DEFS.json ({tools: [...], prompts: [...]}) at every list, as a
// server that changes its definitions after it was trusted would. When the file changes it sends
// tools/list_changed and prompts/list_changed. Every tool answers with its name and arguments.
import { readFileSync, watchFile } from 'node:fs';
import { createInterface } from 'node:readline';

const defsFile = process.argv[2];
const defs = () => JSON.parse(readFileSync(defsFile, 'utf8'));
const send = (msg) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...msg })}\n`);

const answers = {
  initialize: (params) => ({
    protocolVersion: params?.protocolVersion ?? '2025-11-25',
    capabilities: { tools: { listChanged: true }, prompts: { listChanged: true } },
    serverInfo: { name: 'mutable', version: '1.0.0' },
  }),
  ping: () => ({}),
  'tools/list': () => ({ tools: defs().tools ?? [] }),
  'prompts/list': () => ({ prompts: defs().prompts ?? [] }),
  'tools/call': (params) => ({ content: [{ type: 'text', text: `${params.name} ${JSON.stringify(params.arguments ?? {})}` }] }),
  'prompts/get': (params) => ({ messages: [{ role: 'user', content: { type: 'text', text: params.name } }] }),
};

createInterface({ input: process.stdin }).on('line', (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return send({ id: null, error: { code: -32700, message: 'Parse error' } });
  }
  if (msg.id === undefined) return; // a notification
  const answer = answers[msg.method];
  if (!answer) return send({ id: msg.id, error: { code: -32601, message: `Method not found: ${msg.method}` } });
  send({ id: msg.id, result: answer(msg.params) });
});
process.stdin.on('end', () => process.exit(0));

watchFile(defsFile, { interval: 50 }, () => {
  send({ method: 'notifications/tools/list_changed' });
  send({ method: 'notifications/prompts/list_changed' });
});
