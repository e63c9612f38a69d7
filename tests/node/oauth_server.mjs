// A loopback OAuth 2.1 authorization server and the MCP server it protects, in one process, for
// the cases the conformance suite does not cover: rotation of refresh tokens, a token refused
// mid-use, a revoked login, revocation on logout, a login kept across restarts. Tokens are
// strings with "SECRET" in them so that a test can look for leaks. Test hooks under /admin/.
//
//   const s = await startOAuthServer({ expiresIn: 3600 }); s.url ('…/mcp'), s.stats, s.admin
//   { challenge: false }: the 401 names no resource_metadata (found at the well-known URL only)
import http from 'node:http';
import { createHash } from 'node:crypto';

export async function startOAuthServer({ expiresIn = 3600, challenge = true } = {}) {
  const stats = { registrations: 0, authorizations: 0, codeGrants: 0, refreshes: 0, refused: 0, revoked: [], mcpCalls: 0, unauthorized: 0 };
  const access = new Map(); // token -> { expires }
  const refresh = new Set(); // live refresh tokens
  const codes = new Map(); // code -> { challenge, redirect }
  let n = 0;
  let base = '';

  const issue = () => {
    n++;
    const at = `at-${n}-SECRET`;
    const rt = `rt-${n}-SECRET`;
    access.set(at, { expires: Date.now() + expiresIn * 1000 });
    refresh.add(rt);
    return { access_token: at, token_type: 'Bearer', expires_in: expiresIn, refresh_token: rt };
  };
  const json = (res, status, body, headers = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const readBody = (req) =>
    new Promise((resolve) => {
      let b = '';
      req.on('data', (c) => (b += c));
      req.on('end', () => resolve(b));
    });

  const server = http.createServer(async (req, res) => {
    const u = new URL(req.url, base);
    const body = await readBody(req);
    const form = new URLSearchParams(body);
    switch (`${req.method} ${u.pathname}`) {
      case 'GET /.well-known/oauth-protected-resource/mcp':
        return json(res, 200, { resource: `${base}/mcp`, authorization_servers: [base] });
      case 'GET /.well-known/oauth-authorization-server':
        return json(res, 200, {
          issuer: base,
          authorization_endpoint: `${base}/authorize`,
          token_endpoint: `${base}/token`,
          registration_endpoint: `${base}/register`,
          revocation_endpoint: `${base}/revoke`,
          response_types_supported: ['code'],
          grant_types_supported: ['authorization_code', 'refresh_token'],
          code_challenge_methods_supported: ['S256'],
          token_endpoint_auth_methods_supported: ['none'],
          authorization_response_iss_parameter_supported: true,
        });
      case 'POST /register':
        stats.registrations++;
        return json(res, 201, { client_id: `client-${stats.registrations}`, token_endpoint_auth_method: 'none', ...JSON.parse(body) });
      case 'GET /authorize': {
        stats.authorizations++;
        const code = `code-${stats.authorizations}-SECRET`;
        codes.set(code, { challenge: u.searchParams.get('code_challenge'), redirect: u.searchParams.get('redirect_uri') });
        const to = new URL(u.searchParams.get('redirect_uri'));
        to.searchParams.set('code', code);
        to.searchParams.set('state', u.searchParams.get('state'));
        to.searchParams.set('iss', base);
        res.writeHead(302, { location: to.toString() });
        return res.end();
      }
      case 'POST /token': {
        const grant = form.get('grant_type');
        if (grant === 'authorization_code') {
          const c = codes.get(form.get('code'));
          codes.delete(form.get('code'));
          const s256 = createHash('sha256').update(form.get('code_verifier') ?? '').digest('base64url');
          if (!c || c.challenge !== s256 || c.redirect !== form.get('redirect_uri'))
            return json(res, 400, { error: 'invalid_grant' });
          stats.codeGrants++;
          return json(res, 200, issue());
        }
        if (grant === 'refresh_token') {
          const rt = form.get('refresh_token');
          if (!refresh.has(rt)) {
            stats.refused++;
            return json(res, 400, { error: 'invalid_grant', error_description: 'refresh token revoked' });
          }
          refresh.delete(rt); // rotation: each refresh token is good once
          stats.refreshes++;
          return json(res, 200, issue());
        }
        return json(res, 400, { error: 'unsupported_grant_type' });
      }
      case 'POST /revoke':
        stats.revoked.push(form.get('token'));
        refresh.delete(form.get('token'));
        access.delete(form.get('token'));
        res.writeHead(200);
        return res.end();
      case 'POST /admin/expire-access': // every access token refused from now on (a 401 mid-use)
        access.clear();
        return json(res, 200, {});
      case 'POST /admin/revoke-all': // the login revoked at the provider
        access.clear();
        refresh.clear();
        return json(res, 200, {});
      case 'POST /mcp': {
        const auth = req.headers.authorization ?? '';
        const tok = auth.startsWith('Bearer ') ? auth.slice(7) : '';
        const entry = access.get(tok);
        if (!entry || entry.expires < Date.now()) {
          stats.unauthorized++;
          return json(res, 401, { error: 'invalid_token' }, {
            'www-authenticate': challenge
              ? `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`
              : 'Bearer error="invalid_token"',
          });
        }
        const msg = JSON.parse(body);
        if (msg.id === undefined) {
          res.writeHead(202);
          return res.end();
        }
        const reply = (result) => json(res, 200, { jsonrpc: '2.0', id: msg.id, result });
        if (msg.method === 'initialize')
          return reply({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'oauth-fixture', version: '1.0.0' } });
        if (msg.method === 'tools/list')
          return reply({ tools: [{ name: 'whoami', description: 'which login answers', inputSchema: { type: 'object' } }] });
        if (msg.method === 'tools/call') {
          stats.mcpCalls++;
          return reply({ content: [{ type: 'text', text: `login ${tok.split('-')[1]}` }] });
        }
        if (msg.method === 'ping') return reply({});
        return json(res, 200, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
      }
      case 'GET /mcp':
        res.writeHead(405);
        return res.end();
      default:
        res.writeHead(404);
        return res.end();
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
  const admin = async (what) => (await fetch(`${base}/admin/${what}`, { method: 'POST' })).json();
  return { url: `${base}/mcp`, base, stats, admin, close: () => new Promise((r) => server.close(r)) };
}
