#!/usr/bin/env node
// Conformance target: an MCP server (official TypeScript SDK, low-level Server API) that
// implements every tool, resource, prompt and utility the server scenarios of
// @modelcontextprotocol/conformance call for. Names and results follow the scenario sources.
//
//   node target_server.mjs                 stdio (what mcpmuxd runs as an upstream)
//   node target_server.mjs --http PORT     Streamable HTTP at http://127.0.0.1:PORT/mcp, to run
//                                          the suite against the target directly (no mux)
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ErrorCode,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { complete } from './completions.mjs';

// 1x1 red pixel.
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

// A tiny valid WAV: 8 kHz, mono, 8-bit PCM, 8 samples of silence.
function wavBase64() {
  const samples = Buffer.alloc(8, 0x80);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0);
  h.writeUInt32LE(36 + samples.length, 4);
  h.write('WAVE', 8);
  h.write('fmt ', 12);
  h.writeUInt32LE(16, 16); // fmt chunk size
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(1, 22); // channels
  h.writeUInt32LE(8000, 24); // sample rate
  h.writeUInt32LE(8000, 28); // byte rate
  h.writeUInt16LE(1, 32); // block align
  h.writeUInt16LE(8, 34); // bits per sample
  h.write('data', 36);
  h.writeUInt32LE(samples.length, 40);
  return Buffer.concat([h, samples]).toString('base64');
}
const WAV = wavBase64();

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const noArgs = { type: 'object', properties: {}, required: [] };

const TOOLS = [
  { name: 'test_simple_text', description: 'Returns simple text content', inputSchema: noArgs },
  { name: 'test_image_content', description: 'Returns image content (1x1 PNG)', inputSchema: noArgs },
  { name: 'test_audio_content', description: 'Returns audio content (WAV)', inputSchema: noArgs },
  { name: 'test_embedded_resource', description: 'Returns an embedded resource', inputSchema: noArgs },
  {
    name: 'test_multiple_content_types',
    description: 'Returns text, image and resource content',
    inputSchema: noArgs,
  },
  {
    name: 'test_tool_with_logging',
    description: 'Sends three info log notifications while running',
    inputSchema: noArgs,
  },
  { name: 'test_error_handling', description: 'Always fails with isError: true', inputSchema: noArgs },
  {
    name: 'test_tool_with_progress',
    description: 'Reports progress 0, 50, 100 of 100',
    inputSchema: noArgs,
  },
  {
    name: 'test_sampling',
    description: 'Asks the client for an LLM completion (sampling/createMessage)',
    inputSchema: {
      type: 'object',
      properties: { prompt: { type: 'string', description: 'The prompt to send to the LLM' } },
      required: ['prompt'],
    },
  },
  {
    name: 'test_elicitation',
    description: 'Asks the user for input (elicitation/create)',
    inputSchema: {
      type: 'object',
      properties: { message: { type: 'string', description: 'The message to show the user' } },
      required: ['message'],
    },
  },
  {
    name: 'test_elicitation_sep1034_defaults',
    description: 'Elicitation whose schema has defaults for every primitive type (SEP-1034)',
    inputSchema: noArgs,
  },
  {
    name: 'test_elicitation_sep1330_enums',
    description: 'Elicitation with the five enum schema variants (SEP-1330)',
    inputSchema: noArgs,
  },
  {
    name: 'json_schema_2020_12_tool',
    description: 'Tool with JSON Schema 2020-12 features',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: {
        address: {
          type: 'object',
          properties: { street: { type: 'string' }, city: { type: 'string' } },
        },
      },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false,
    },
  },
  {
    name: 'test_reconnection',
    description: 'Closes its SSE stream mid-call (over HTTP), then answers',
    inputSchema: noArgs,
  },
];

const RESOURCES = [
  {
    uri: 'test://static-text',
    name: 'static-text',
    description: 'A static text resource',
    mimeType: 'text/plain',
  },
  {
    uri: 'test://static-binary',
    name: 'static-binary',
    description: 'A static binary resource (1x1 PNG)',
    mimeType: 'image/png',
  },
  {
    uri: 'test://watched-resource',
    name: 'watched-resource',
    description: 'A resource that can be subscribed to',
    mimeType: 'text/plain',
  },
];

const TEMPLATES = [
  {
    uriTemplate: 'test://template/{id}/data',
    name: 'template-data',
    description: 'Data for an id',
    mimeType: 'application/json',
  },
];

const PROMPTS = [
  { name: 'test_simple_prompt', description: 'A simple prompt without arguments' },
  {
    name: 'test_prompt_with_arguments',
    description: 'A prompt with two required arguments',
    arguments: [
      { name: 'arg1', description: 'First test argument', required: true },
      { name: 'arg2', description: 'Second test argument', required: true },
    ],
  },
  {
    name: 'test_prompt_with_embedded_resource',
    description: 'A prompt that embeds a resource',
    arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }],
  },
  { name: 'test_prompt_with_image', description: 'A prompt with image content' },
];

const text = (t) => ({ type: 'text', text: t });

export function createTargetServer() {
  const server = new Server(
    { name: 'mcpmux-conformance-target', version: '1.0.0' },
    {
      capabilities: {
        tools: {},
        resources: { subscribe: true },
        prompts: {},
        logging: {},
        completions: {},
      },
    },
  );
  const subscriptions = new Set();

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = request.params.arguments ?? {};
    switch (request.params.name) {
      case 'test_simple_text':
        return { content: [text('This is a simple text response for testing.')] };
      case 'test_image_content':
        return { content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] };
      case 'test_audio_content':
        return { content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] };
      case 'test_embedded_resource':
        return {
          content: [
            {
              type: 'resource',
              resource: {
                uri: 'test://embedded-resource',
                mimeType: 'text/plain',
                text: 'This is an embedded resource content.',
              },
            },
          ],
        };
      case 'test_multiple_content_types':
        return {
          content: [
            text('Multiple content types test:'),
            { type: 'image', data: PNG, mimeType: 'image/png' },
            {
              type: 'resource',
              resource: {
                uri: 'test://mixed-content-resource',
                mimeType: 'application/json',
                text: JSON.stringify({ test: 'data', value: 123 }),
              },
            },
          ],
        };
      case 'test_tool_with_logging': {
        const log = (data) =>
          extra.sendNotification({
            method: 'notifications/message',
            params: { level: 'info', logger: 'conformance-target', data },
          });
        await log('Tool execution started');
        await sleep(50);
        await log('Tool processing data');
        await sleep(50);
        await log('Tool execution completed');
        return { content: [text('Tool with logging executed successfully')] };
      }
      case 'test_error_handling':
        return {
          isError: true,
          content: [text('This tool intentionally returns an error for testing')],
        };
      case 'test_tool_with_progress': {
        const token = request.params._meta?.progressToken;
        for (const progress of [0, 50, 100]) {
          if (token !== undefined) {
            await extra.sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress, total: 100 },
            });
          }
          if (progress < 100) await sleep(50);
        }
        return { content: [text('Tool with progress executed successfully')] };
      }
      case 'test_sampling': {
        if (!server.getClientCapabilities()?.sampling) {
          return { isError: true, content: [text('Client does not support sampling')] };
        }
        const result = await extra.sendRequest(
          {
            method: 'sampling/createMessage',
            params: {
              messages: [{ role: 'user', content: text(String(args.prompt ?? '')) }],
              maxTokens: 100,
            },
          },
          CreateMessageResultSchema,
        );
        const reply = result.content?.type === 'text' ? result.content.text : JSON.stringify(result.content);
        return { content: [text(`LLM response: ${reply}`)] };
      }
      case 'test_elicitation': {
        if (!server.getClientCapabilities()?.elicitation) {
          return { isError: true, content: [text('Client does not support elicitation')] };
        }
        const result = await elicit(extra, {
          message: String(args.message ?? ''),
          requestedSchema: {
            type: 'object',
            properties: {
              username: { type: 'string', description: "User's response" },
              email: { type: 'string', description: "User's email address" },
            },
            required: ['username', 'email'],
          },
        });
        return {
          content: [
            text(`User response: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`),
          ],
        };
      }
      case 'test_elicitation_sep1034_defaults': {
        const result = await elicit(extra, {
          message: 'Please review and update the form fields with defaults',
          requestedSchema: {
            type: 'object',
            properties: {
              name: { type: 'string', description: 'User name', default: 'John Doe' },
              age: { type: 'integer', description: 'User age', default: 30 },
              score: { type: 'number', description: 'User score', default: 95.5 },
              status: {
                type: 'string',
                description: 'User status',
                enum: ['active', 'inactive', 'pending'],
                default: 'active',
              },
              verified: { type: 'boolean', description: 'Verification status', default: true },
            },
            required: [],
          },
        });
        return { content: [text(elicitationSummary(result))] };
      }
      case 'test_elicitation_sep1330_enums': {
        const result = await elicit(extra, {
          message: 'Please select options from the enum fields',
          requestedSchema: {
            type: 'object',
            properties: {
              untitledSingle: {
                type: 'string',
                description: 'Untitled single-select',
                enum: ['option1', 'option2', 'option3'],
              },
              titledSingle: {
                type: 'string',
                description: 'Titled single-select',
                oneOf: [
                  { const: 'value1', title: 'First Option' },
                  { const: 'value2', title: 'Second Option' },
                  { const: 'value3', title: 'Third Option' },
                ],
              },
              legacyEnum: {
                type: 'string',
                description: 'Legacy titled enum',
                enum: ['opt1', 'opt2', 'opt3'],
                enumNames: ['Option One', 'Option Two', 'Option Three'],
              },
              untitledMulti: {
                type: 'array',
                description: 'Untitled multi-select',
                items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
              },
              titledMulti: {
                type: 'array',
                description: 'Titled multi-select',
                items: {
                  anyOf: [
                    { const: 'value1', title: 'First Choice' },
                    { const: 'value2', title: 'Second Choice' },
                    { const: 'value3', title: 'Third Choice' },
                  ],
                },
              },
            },
            required: [],
          },
        });
        return { content: [text(elicitationSummary(result))] };
      }
      case 'json_schema_2020_12_tool':
        return { content: [text(`Received: ${JSON.stringify(args)}`)] };
      case 'test_reconnection': {
        // Over Streamable HTTP with an event store this closes the POST stream so that the
        // client resumes with GET + Last-Event-ID; over stdio it is a plain call.
        if (typeof extra.closeSSEStream === 'function') {
          await sleep(50);
          extra.closeSSEStream();
          await sleep(200);
        }
        return { content: [text('Reconnection test completed successfully')] };
      }
      default:
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: RESOURCES }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: TEMPLATES,
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    if (uri === 'test://static-text') {
      return {
        contents: [{ uri, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }],
      };
    }
    if (uri === 'test://static-binary') {
      return { contents: [{ uri, mimeType: 'image/png', blob: PNG }] };
    }
    if (uri === 'test://watched-resource') {
      return { contents: [{ uri, mimeType: 'text/plain', text: 'Watched resource content.' }] };
    }
    const m = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
    if (m) {
      const id = decodeURIComponent(m[1]);
      return {
        contents: [
          {
            uri,
            mimeType: 'application/json',
            text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }),
          },
        ],
      };
    }
    throw new McpError(-32002, `Resource not found: ${uri}`, { uri });
  });
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    subscriptions.add(request.params.uri);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });

  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: PROMPTS }));
  server.setRequestHandler(GetPromptRequestSchema, async (request) => {
    const args = request.params.arguments ?? {};
    switch (request.params.name) {
      case 'test_simple_prompt':
        return { messages: [{ role: 'user', content: text('This is a simple prompt for testing.') }] };
      case 'test_prompt_with_arguments':
        return {
          messages: [
            {
              role: 'user',
              content: text(`Prompt with arguments: arg1='${args.arg1 ?? ''}', arg2='${args.arg2 ?? ''}'`),
            },
          ],
        };
      case 'test_prompt_with_embedded_resource':
        return {
          messages: [
            {
              role: 'user',
              content: {
                type: 'resource',
                resource: {
                  uri: String(args.resourceUri ?? 'test://example-resource'),
                  mimeType: 'text/plain',
                  text: 'Embedded resource content for testing.',
                },
              },
            },
            { role: 'user', content: text('Please process the embedded resource above.') },
          ],
        };
      case 'test_prompt_with_image':
        return {
          messages: [
            { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
            { role: 'user', content: text('Please analyze the image above.') },
          ],
        };
      default:
        throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${request.params.name}`);
    }
  });

  server.setRequestHandler(CompleteRequestSchema, async (request) => complete(request.params));

  return server;
}

// elicitation/create on the calling request's stream, without the SDK's client-side checks (the
// SEP-1330 legacy enumNames variant is deliberately outside the current schema types).
function elicit(extra, params) {
  return extra.sendRequest({ method: 'elicitation/create', params }, ElicitResultSchema);
}

function elicitationSummary(result) {
  return `Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`;
}

async function serveHttp(port) {
  const { randomUUID } = await import('node:crypto');
  const { createMcpExpressApp } = await import('@modelcontextprotocol/sdk/server/express.js');
  const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const { InMemoryEventStore } = await import('@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js');
  const { isInitializeRequest } = await import('@modelcontextprotocol/sdk/types.js');

  const app = createMcpExpressApp({ host: '127.0.0.1' });
  const transports = new Map();
  app.all('/mcp', async (req, res) => {
    const sid = req.headers['mcp-session-id'];
    let transport = sid ? transports.get(sid) : undefined;
    if (!transport) {
      if (sid || req.method !== 'POST' || !isInitializeRequest(req.body)) {
        res.status(sid ? 404 : 400).json({
          jsonrpc: '2.0',
          error: { code: -32000, message: sid ? 'Session not found' : 'Missing session id' },
          id: null,
        });
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore: new InMemoryEventStore(),
        retryInterval: 500,
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
      await createTargetServer().connect(transport);
    }
    await transport.handleRequest(req, res, req.body);
  });
  const listener = app.listen(port, '127.0.0.1', () => {
    process.stderr.write(`conformance target on http://127.0.0.1:${listener.address().port}/mcp\n`);
  });
  const stop = () => listener.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

const httpAt = process.argv.indexOf('--http');
if (httpAt >= 0) {
  await serveHttp(Number(process.argv[httpAt + 1] ?? 0));
} else {
  await createTargetServer().connect(new StdioServerTransport());
}
