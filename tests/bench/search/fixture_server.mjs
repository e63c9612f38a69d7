// fixture_server.mjs — a stdio MCP server that serves the tools recorded in a fixture file.
//
// usage: node fixture_server.mjs FIXTURE.json
//
// tools/list answers the fixture's tools exactly as recorded (one page). tools/call answers any
// name with the text `called <tool> with <json args>`; for a tool that declares an outputSchema
// it also sends a minimal structuredContent that fits the schema (required fields only), so an
// SDK client that checks results against the schema accepts the answer.
import { readFileSync } from 'node:fs';
import { importNode, minimalValue } from './common.mjs';

const { Server } = await importNode('@modelcontextprotocol/sdk/server/index.js');
const { StdioServerTransport } = await importNode('@modelcontextprotocol/sdk/server/stdio.js');
const { ListToolsRequestSchema, CallToolRequestSchema } = await importNode('@modelcontextprotocol/sdk/types.js');

const file = process.argv[2];
if (!file) {
  console.error('usage: node fixture_server.mjs FIXTURE.json');
  process.exit(2);
}
const fixture = JSON.parse(readFileSync(file, 'utf8'));
const byName = new Map(fixture.tools.map((t) => [t.name, t]));

const server = new Server({ name: `fixture-${fixture.server}`, version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: fixture.tools }));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const { name, arguments: args = {} } = req.params;
  const text = `called ${name} with ${JSON.stringify(args)}`;
  const result = { content: [{ type: 'text', text }] };
  const outputSchema = byName.get(name)?.outputSchema;
  if (outputSchema) result.structuredContent = minimalValue(outputSchema, text);
  return result;
});
await server.connect(new StdioServerTransport());
