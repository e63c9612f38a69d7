#!/usr/bin/env node
// Conformance target of the 2026-07-28 era: an MCP server on the official v2 server SDK
// (@modelcontextprotocol/server, modern only: `legacy: 'reject'`) with the tools, resources and
// prompts the 2026-07-28 server scenarios of @modelcontextprotocol/conformance call for —
// including the input-required (MRTR) tools, whose keys and states the scenarios check.
// mcpmuxd runs it over stdio; the suite reaches it through the daemon's /mcp.
import { randomBytes } from 'node:crypto';
import { McpServer, ResourceTemplate, inputRequired, createRequestStateCodec, fromJsonSchema, MissingRequiredClientCapabilityError } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod/v4';
import { complete } from './completions.mjs';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV = 'UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==';
const text = (t) => ({ type: 'text', text: t });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// requestState: HMAC-signed by the SDK's codec; an altered state is refused (-32602) before any
// handler runs, and handlers read the verified payload with ctx.mcpReq.requestState().
const codec = createRequestStateCodec({ key: randomBytes(32), ttlSeconds: 600 });
const state = (ctx) => ctx.mcpReq.requestState?.();

const elicitName = (message = 'What is your name?') =>
  inputRequired.elicit({ message, requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } });
const responses = (ctx) => ctx.mcpReq.inputResponses ?? {};
const caps = (ctx) => ctx.mcpReq.envelope?.['io.modelcontextprotocol/clientCapabilities'] ?? {};

function build() {
  const server = new McpServer(
    { name: 'mcpmux-conformance-target-2026', version: '1.0.0' },
    {
      capabilities: { tools: { listChanged: true }, resources: { listChanged: true }, prompts: { listChanged: true }, completions: {} },
      requestState: { verify: codec.verify },
    },
  );
  // Without an input schema the SDK calls a tool with (ctx) alone: every tool here takes (args, ctx).
  const tool = (name, description, run, inputSchema) =>
    server.registerTool(name, { description, ...(inputSchema ? { inputSchema } : {}) }, inputSchema ? run : (ctx) => run({}, ctx));

  tool('test_simple_text', 'Returns simple text content', async () => ({ content: [text('This is a simple text response for testing.')] }));
  tool('test_image_content', 'Returns image content', async () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }));
  tool('test_audio_content', 'Returns audio content', async () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }));
  tool('test_embedded_resource', 'Returns an embedded resource', async () => ({
    content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
  }));
  tool('test_multiple_content_types', 'Returns text, image and resource content', async () => ({
    content: [
      text('Multiple content types test:'),
      { type: 'image', data: PNG, mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: JSON.stringify({ test: 'data', value: 123 }) } },
    ],
  }));
  tool('test_error_handling', 'Always fails with isError: true', async () => ({ isError: true, content: [text('This tool intentionally returns an error for testing')] }));
  tool('test_tool_with_progress', 'Reports progress 0, 50, 100 of 100', async (_args, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    for (const progress of [0, 50, 100]) {
      if (token !== undefined) await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress, total: 100 } });
      if (progress < 100) await sleep(50);
    }
    return { content: [text('Tool with progress executed successfully')] };
  });
  // (Its -32021 is thrown below the McpServer: a tool's own error would become isError.)
  tool('test_missing_capability', 'Needs the client to declare sampling', async () => ({ content: [text('the client declared sampling')] }));
  tool('test_streaming_elicitation', 'Asks for a name on the request stream (input_required, never a request)', async (_args, ctx) => {
    const r = responses(ctx).user_name;
    if (!r || r.action !== 'accept') return inputRequired({ inputRequests: { user_name: elicitName() } });
    return { content: [text(`Hello, ${r.content?.name}!`)] };
  });
  tool('test_logging_tool', 'Logs three lines (only to a request that asked with logLevel)', async (_args, ctx) => {
    for (const data of ['started', 'working', 'done']) await ctx.mcpReq.log?.('info', data);
    return { content: [text('logged')] };
  });
  tool('test_trigger_tool_change', 'Adds a tool (tools/list_changed)', async () => {
    const name = `added_tool_${Date.now()}`;
    server.registerTool(name, { description: 'added at run time' }, async () => ({ content: [text(name)] }));
    return { content: [text(`added ${name}`)] };
  });
  tool('test_trigger_prompt_change', 'Adds a prompt (prompts/list_changed)', async () => {
    const name = `added_prompt_${Date.now()}`;
    server.registerPrompt(name, { description: 'added at run time' }, async () => ({ messages: [{ role: 'user', content: text(name) }] }));
    return { content: [text(`added ${name}`)] };
  });
  server.registerTool(
    'json_schema_2020_12_tool',
    {
      description: 'Tool with JSON Schema 2020-12 features',
      inputSchema: fromJsonSchema({
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        $defs: { address: { $anchor: 'address', type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
        properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' }, kind: { type: 'string' }, code: { type: 'string' } },
        allOf: [{ anyOf: [{ required: ['name'] }, { required: ['address'] }] }],
        if: { properties: { kind: { const: 'company' } }, required: ['kind'] },
        then: { required: ['code'] },
        else: { properties: { code: { type: 'string' } } },
        additionalProperties: false,
      }),
    },
    async (args) => ({ content: [text(JSON.stringify(args))] }),
  );
  // Arguments mirrored into Mcp-Param-* headers (x-mcp-header), which mcpmux's /mcp checks.
  server.registerTool(
    'test_custom_headers',
    {
      description: 'Echoes its arguments; region and priority travel as Mcp-Param-* headers too',
      inputSchema: fromJsonSchema({
        type: 'object',
        properties: {
          region: { type: 'string', 'x-mcp-header': 'Region' },
          priority: { type: 'integer', 'x-mcp-header': 'Priority' },
          note: { type: 'string' },
        },
        required: ['region'],
      }),
    },
    async (args) => ({ content: [text(JSON.stringify(args))] }),
  );

  // ---- input required (MRTR) ----
  tool('test_input_required_result_elicitation', 'Asks for a name', async (_args, ctx) => {
    const r = responses(ctx).user_name;
    if (!r || r.action !== 'accept' || typeof r.content?.name !== 'string')
      return inputRequired({ inputRequests: { user_name: elicitName() } });
    return { content: [text(`Hello, ${r.content.name}!`)] };
  });
  tool('test_input_required_result_sampling', 'Asks for a completion', async (_args, ctx) => {
    const r = responses(ctx).capital_question;
    if (!r) return inputRequired({ inputRequests: { capital_question: inputRequired.createMessage({ messages: [{ role: 'user', content: text('What is the capital of France?') }], maxTokens: 100 }) } });
    return { content: [text(`The model said: ${r.content?.text ?? JSON.stringify(r.content)}`)] };
  });
  tool('test_input_required_result_list_roots', 'Asks for the roots', async (_args, ctx) => {
    const r = responses(ctx).client_roots;
    if (!r) return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
    return { content: [text(`Roots: ${(r.roots ?? []).map((x) => x.uri).join(', ')}`)] };
  });
  tool('test_input_required_result_request_state', 'Round-trips a requestState', async (_args, ctx) => {
    const r = responses(ctx).confirm;
    if (!r)
      return inputRequired({
        inputRequests: { confirm: inputRequired.elicit({ message: 'Please confirm', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } }) },
        requestState: await codec.mint({ tool: 'request_state' }),
      });
    return { content: [text(`state-ok: confirmed (${state(ctx)?.tool})`)] };
  });
  tool('test_input_required_result_multiple_inputs', 'Asks three questions at once', async (_args, ctx) => {
    const r = responses(ctx);
    if (!r.user_name || !r.greeting || !r.client_roots)
      return inputRequired({
        inputRequests: {
          user_name: elicitName(),
          greeting: inputRequired.createMessage({ messages: [{ role: 'user', content: text('Generate a greeting') }], maxTokens: 50 }),
          client_roots: inputRequired.listRoots(),
        },
        requestState: await codec.mint({ tool: 'multiple' }),
      });
    return { content: [text('all three answered')] };
  });
  tool('test_input_required_result_multi_round', 'Asks twice', async (_args, ctx) => {
    const r = responses(ctx);
    const st = state(ctx);
    if (r.step2 && st?.round === 2) return { content: [text(`Done: ${st.name}, ${r.step2.content?.color}`)] };
    if (r.step1 && st?.round === 1)
      return inputRequired({
        inputRequests: { step2: inputRequired.elicit({ message: 'Step 2: What is your favorite color?', requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] } }) },
        requestState: await codec.mint({ round: 2, name: r.step1.content?.name }),
      });
    return inputRequired({ inputRequests: { step1: elicitName('Step 1: What is your name?') }, requestState: await codec.mint({ round: 1 }) });
  });
  tool('test_input_required_result_tampered_state', 'Refuses an altered state', async (_args, ctx) => {
    const r = responses(ctx).confirm;
    if (!r || state(ctx)?.tool !== 'tampered')
      return inputRequired({
        inputRequests: { confirm: inputRequired.elicit({ message: 'Please confirm', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } }) },
        requestState: await codec.mint({ tool: 'tampered' }),
      });
    return { content: [text('state verified')] };
  });
  tool('test_input_required_result_capabilities', 'Asks only what the client can answer', async (_args, ctx) => {
    const c = caps(ctx);
    const r = responses(ctx);
    const asks = {};
    if (c.elicitation && !r.user_name) asks.user_name = elicitName();
    if (c.sampling && !r.greeting) asks.greeting = inputRequired.createMessage({ messages: [{ role: 'user', content: text('Generate a greeting') }], maxTokens: 50 });
    if (c.roots && !r.client_roots) asks.client_roots = inputRequired.listRoots();
    if (Object.keys(asks).length) return inputRequired({ inputRequests: asks });
    return { content: [text('nothing more to ask')] };
  });

  // ---- resources ----
  server.registerResource('static-text', 'test://static-text', { description: 'A static text resource', mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }],
  }));
  server.registerResource('static-binary', 'test://static-binary', { description: 'A static binary resource', mimeType: 'image/png' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'image/png', blob: PNG }],
  }));
  server.registerResource(
    'template-data',
    new ResourceTemplate('test://template/{id}/data', { list: undefined }),
    { description: 'Data for an id', mimeType: 'application/json' },
    async (uri, { id }) => ({ contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }] }),
  );

  // ---- prompts ----
  server.registerPrompt('test_simple_prompt', { description: 'A simple prompt without arguments' }, async () => ({
    messages: [{ role: 'user', content: text('This is a simple prompt for testing.') }],
  }));
  server.registerPrompt('test_prompt_with_arguments', { description: 'A prompt with two required arguments', argsSchema: z.object({ arg1: z.string(), arg2: z.string() }) }, async ({ arg1, arg2 }) => ({
    messages: [{ role: 'user', content: text(`Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`) }],
  }));
  server.registerPrompt('test_prompt_with_embedded_resource', { description: 'A prompt that embeds a resource', argsSchema: z.object({ resourceUri: z.string() }) }, async ({ resourceUri }) => ({
    messages: [
      { role: 'user', content: { type: 'resource', resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
      { role: 'user', content: text('Please process the embedded resource above.') },
    ],
  }));
  server.registerPrompt('test_prompt_with_image', { description: 'A prompt with image content' }, async () => ({
    messages: [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: text('Please analyze the image above.') },
    ],
  }));
  server.registerPrompt('test_input_required_result_prompt', { description: 'A prompt that asks for context' }, async (ctx) => {
    const r = responses(ctx).user_context;
    if (!r)
      return inputRequired({
        inputRequests: { user_context: inputRequired.elicit({ message: 'What context should the prompt use?', requestedSchema: { type: 'object', properties: { context: { type: 'string' } }, required: ['context'] } }) },
      });
    return { messages: [{ role: 'user', content: text(`Context: ${r.content?.context ?? ''}`) }] };
  });
  // Completion for the prompt's arguments and the template's variable (as the 2025 target).
  server.server.setRequestHandler('completion/complete', async (request) => complete(request.params));
  // tools/call of test_missing_capability without sampling declared: the JSON-RPC error
  // MissingRequiredClientCapabilityError (-32021), which McpServer's own handler would turn into
  // an isError result. The registered handler is wrapped in place (setRequestHandler would wrap
  // it a second time, requestState verification included).
  const callTool = server.server._requestHandlers.get('tools/call');
  server.server._requestHandlers.set('tools/call', async (req, ctx) => {
    if (req.params.name === 'test_missing_capability' && !caps(ctx).sampling)
      throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { sampling: {} } });
    return callTool(req, ctx);
  });
  return server;
}

serveStdio(build, { legacy: 'reject', onerror: (e) => console.error('target-2026:', e.message) });
