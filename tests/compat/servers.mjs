// servers.mjs — the MCP servers of the compatibility sweep (see README.md in this folder).
//
// Every package is pinned in package.json; each server runs as `node <its bin script>` (never
// npx) from node_modules, with dummy credentials, in a working directory of its own (`wd`)
// inside the sweep's temp dir. No server may reach anything but loopback: the credentials are
// fake, and kubernetes gets a kubeconfig of its own that points at 127.0.0.1 (never the
// developer's ~/.kube/config; an empty one makes it exit at start).
//
// A server entry:
//   name        config name and tool prefix (`<name>__<tool>`)
//   pkg         npm package; its version is read from package.json (and checked in node_modules)
//   entry       its bin script, relative to the package folder
//   node22      run on Node 22 from the `node` npm package (their engines field needs >= 22;
//               the system Node may be 20)
//   args, env   (wd) => [...] / {...}
//   setup       (wd) => void: writes files the server needs, before the daemon starts
//   uriSchemes  schemes of its resources and templates, to tell its share of the combined list
//   call        { tool, args, check(result, wd) -> true when the answer is the expected one }
//               a harmless call: no network, no credentials, no lasting effect outside wd
//   noCall      why there is no such call
//
// `needsService` lists servers that cannot come up here because they need a running service;
// they are shown in the table, not started.
import { writeFileSync } from 'node:fs';
import path from 'node:path';

/** Text of all text content items of a tool result, joined by newlines. */
export function resultText(result) {
  return (result.content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
}

// A cluster on the discard port of loopback: nothing listens there, so the server starts (it
// connects lazily) and any tool that needs the cluster fails at once, without leaving the machine.
const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- name: compat
  cluster:
    server: https://127.0.0.1:9
contexts:
- name: compat
  context:
    cluster: compat
    user: compat
current-context: compat
users:
- name: compat
  user:
    token: dummy
`;

const reachesApi = (service) => `every tool calls the ${service} API`;

export const servers = [
  {
    name: 'everything',
    pkg: '@modelcontextprotocol/server-everything',
    entry: 'dist/index.js',
    uriSchemes: ['demo'],
    call: { tool: 'echo', args: { message: 'compat sweep' }, check: (r) => resultText(r) === 'Echo: compat sweep' },
  },
  {
    name: 'filesystem',
    pkg: '@modelcontextprotocol/server-filesystem',
    entry: 'dist/index.js',
    args: (wd) => [wd],
    call: { tool: 'list_allowed_directories', args: {}, check: (r, wd) => resultText(r).includes(wd) },
  },
  {
    name: 'memory',
    pkg: '@modelcontextprotocol/server-memory',
    entry: 'dist/index.js',
    env: (wd) => ({ MEMORY_FILE_PATH: path.join(wd, 'memory.jsonl') }),
    uriSchemes: ['memory'],
    call: { tool: 'read_graph', args: {}, check: (r) => /"entities"/.test(resultText(r)) },
  },
  {
    name: 'thinking',
    pkg: '@modelcontextprotocol/server-sequential-thinking',
    entry: 'dist/index.js',
    call: {
      tool: 'sequentialthinking',
      args: { thought: 'one small thought', nextThoughtNeeded: false, thoughtNumber: 1, totalThoughts: 1 },
      check: (r) => /"thoughtNumber": 1/.test(resultText(r)),
    },
  },
  {
    name: 'github',
    pkg: '@modelcontextprotocol/server-github',
    entry: 'dist/index.js',
    env: () => ({ GITHUB_PERSONAL_ACCESS_TOKEN: 'ghp_dummy' }),
    noCall: reachesApi('GitHub'),
  },
  {
    name: 'gitlab',
    pkg: '@modelcontextprotocol/server-gitlab',
    entry: 'dist/index.js',
    env: () => ({ GITLAB_PERSONAL_ACCESS_TOKEN: 'glpat-dummy', GITLAB_API_URL: 'http://127.0.0.1:9/api/v4' }),
    noCall: reachesApi('GitLab'),
  },
  {
    name: 'slack',
    pkg: '@modelcontextprotocol/server-slack',
    entry: 'dist/index.js',
    env: () => ({ SLACK_BOT_TOKEN: 'xoxb-dummy', SLACK_TEAM_ID: 'T00000000' }),
    noCall: reachesApi('Slack'),
  },
  {
    name: 'maps',
    pkg: '@modelcontextprotocol/server-google-maps',
    entry: 'dist/index.js',
    env: () => ({ GOOGLE_MAPS_API_KEY: 'dummy' }),
    noCall: reachesApi('Google Maps'),
  },
  {
    name: 'brave',
    pkg: '@modelcontextprotocol/server-brave-search',
    entry: 'dist/index.js',
    env: () => ({ BRAVE_API_KEY: 'dummy' }),
    noCall: reachesApi('Brave Search'),
  },
  {
    name: 'puppeteer',
    pkg: '@modelcontextprotocol/server-puppeteer',
    entry: 'dist/index.js',
    // The browser is launched on the first tool call; none is downloaded (PUPPETEER_SKIP_DOWNLOAD).
    env: () => ({ PUPPETEER_SKIP_DOWNLOAD: '1' }),
    uriSchemes: ['console'],
    noCall: 'every tool drives Chromium, which is not downloaded',
  },
  {
    name: 'playwright',
    pkg: '@playwright/mcp',
    entry: 'cli.js',
    args: (wd) => ['--headless', '--isolated', '--output-dir', path.join(wd, 'output')],
    noCall: 'every tool first launches Chrome (browser_tabs, browser_close too), not installed',
  },
  {
    name: 'notion',
    pkg: '@notionhq/notion-mcp-server',
    entry: 'bin/cli.mjs',
    env: () => ({ NOTION_TOKEN: 'ntn_dummy' }),
    noCall: reachesApi('Notion'),
  },
  {
    name: 'firecrawl',
    pkg: 'firecrawl-mcp',
    entry: 'dist/index.js',
    node22: true,
    env: () => ({ FIRECRAWL_API_KEY: 'fc-dummy' }),
    noCall: reachesApi('Firecrawl'),
  },
  {
    name: 'sentry',
    pkg: '@sentry/mcp-server',
    entry: 'dist/index.js',
    node22: true,
    env: () => ({ SENTRY_ACCESS_TOKEN: 'dummy' }),
    call: {
      // Searches its own tool catalogue, locally.
      tool: 'search_sentry_tools',
      args: { query: 'issues' },
      check: (r) => resultText(r).includes('search_issues'),
    },
  },
  {
    name: 'kubernetes',
    pkg: 'mcp-server-kubernetes',
    entry: 'dist/index.js',
    setup: (wd) => writeFileSync(path.join(wd, 'kubeconfig'), KUBECONFIG),
    env: (wd) => ({ KUBECONFIG: path.join(wd, 'kubeconfig') }),
    uriSchemes: ['k8s'],
    call: { tool: 'ping', args: {}, check: (r) => Array.isArray(r.content) },
  },
  {
    name: 'context7',
    pkg: '@upstash/context7-mcp',
    entry: 'dist/index.js',
    env: () => ({ CONTEXT7_API_KEY: 'dummy' }),
    noCall: reachesApi('Context7'),
  },
  {
    name: 'tavily',
    pkg: 'tavily-mcp',
    entry: 'build/index.js',
    env: () => ({ TAVILY_API_KEY: 'tvly-dummy' }),
    noCall: reachesApi('Tavily'),
  },
  {
    name: 'exa',
    pkg: 'exa-mcp-server',
    entry: 'dist/stdio.cjs',
    env: () => ({ EXA_API_KEY: 'dummy' }),
    uriSchemes: ['exa'],
    noCall: reachesApi('Exa'),
  },
];

export const needsService = [
  {
    name: 'postgres',
    pkg: '@modelcontextprotocol/server-postgres',
    needs: 'postgres',
    why: 'its resources/list queries the database',
  },
  {
    name: 'redis',
    pkg: '@modelcontextprotocol/server-redis',
    needs: 'redis',
    why: 'connects before it answers initialize',
  },
];
