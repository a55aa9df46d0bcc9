// A real OpenID Connect provider (the oidc-provider package) on loopback, for ADE's sign-in tests (tests/auth).
//
//   OIDC_PORT=9000 OIDC_KEYS=keys.json OIDC_RESOURCE=http://127.0.0.1:8765/mcp node provider.mjs
//
// OIDC_KEYS: a JSON array of private JWKs; the first signs (a restart with a new file rotates the key).
// OIDC_RESOURCE: the gateway's MCP URL, the default resource indicator (RFC 8707) and so the tokens' audience.
// Access tokens are JWTs (RFC 9068) carrying `scope`, `client_id` and, for users, their `groups`.
// Users sign in through /interaction/:uid (GET: what the provider asks; POST /interaction/:uid/login with
// `login=<user>`): no browser, no password, no consent screen (these clients are first-party).
// Prints "listening <issuer>" once it serves.

import http from 'node:http';
import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';

const port = Number(process.env.OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;
const keys = JSON.parse(readFileSync(process.env.OIDC_KEYS, 'utf8'));
const gatewayResource = process.env.OIDC_RESOURCE;

// Two users in different groups; each may be granted these scopes at most.
const USERS = {
  alice: { groups: ['analysts'], scopes: ['ade:read'] },
  bob: { groups: ['data-platform'], scopes: ['ade:read', 'ade:operate'] },
};
const RESOURCE_SCOPES = 'ade:read ade:operate ade:admin';
// Machine clients (client credentials) may only read.
const ROBOT_SCOPES = 'ade:read';

const configuration = {
  clients: [
    {
      client_id: 'ade-robot',
      client_secret: 'robot-secret-for-tests-only',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
    },
    {
      // the same robot, whose access tokens expire one second after they are issued
      client_id: 'ade-robot-brief',
      client_secret: 'brief-secret-for-tests-only',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
    },
    {
      // an MCP host on the user's machine: a public client, authorization code with PKCE
      client_id: 'ade-desktop',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      redirect_uris: ['http://127.0.0.1/callback'],
    },
  ],
  jwks: { keys },
  scopes: ['openid'],
  pkce: { required: () => true },
  findAccount: async (_ctx, sub) => (USERS[sub] ? { accountId: sub, claims: async () => ({ sub }) } : undefined),
  extraTokenClaims: async (_ctx, token) => (
    token.accountId && USERS[token.accountId] ? { groups: USERS[token.accountId].groups } : undefined
  ),
  // First-party clients: the grant is what the user may have, no consent screen. A requested scope the user may
  // not have is recorded as refused, so it is neither granted nor asked for again.
  loadExistingGrant: async (ctx) => {
    const { oidc } = ctx;
    const existing = oidc.session.grantIdFor(oidc.client.clientId);
    if (existing) {
      const found = await oidc.provider.Grant.find(existing);
      if (found) return found;
    }
    const user = USERS[oidc.session.accountId];
    if (!user) return undefined;
    const grant = new oidc.provider.Grant({ clientId: oidc.client.clientId, accountId: oidc.session.accountId });
    grant.addOIDCScope([...oidc.requestParamOIDCScopes].join(' '));
    for (const indicator of Object.keys(oidc.resourceServers || {})) {
      for (const scope of oidc.requestParamScopes) {
        if (!RESOURCE_SCOPES.split(' ').includes(scope)) continue;
        if (user.scopes.includes(scope)) grant.addResourceScope(indicator, scope);
        else grant.rejectResourceScope(indicator, scope);
      }
    }
    await grant.save();
    return grant;
  },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (_ctx, _client, oneOf) => oneOf ?? gatewayResource,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource, client) => ({
        scope: client.clientId.startsWith('ade-robot') ? ROBOT_SCOPES : RESOURCE_SCOPES,
        audience: resource,
        accessTokenFormat: 'jwt',
        accessTokenTTL: client.clientId === 'ade-robot-brief' ? 6 : 600,
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  // access tokens: the resource server's accessTokenTTL above (the package's own ttl functions read it)
  ttl: {
    AuthorizationCode: 60,
    Grant: 3600,
    IdToken: 600,
    Interaction: 600,
    Session: 3600,
  },
};

const provider = new Provider(issuer, configuration);
const serveProvider = provider.callback();

function reply(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readForm(req) {
  let data = '';
  for await (const chunk of req) data += chunk;
  return new URLSearchParams(data);
}

async function interaction(req, res, path) {
  const details = await provider.interactionDetails(req, res);
  if (req.method === 'GET') {
    reply(res, 200, { uid: details.uid, prompt: details.prompt.name, params: details.params });
    return;
  }
  if (req.method === 'POST' && path.endsWith('/login') && details.prompt.name === 'login') {
    const login = (await readForm(req)).get('login');
    if (!USERS[login]) {
      reply(res, 400, { error: 'unknown user' });
      return;
    }
    await provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
    return;
  }
  reply(res, 400, { error: `cannot ${req.method} ${path} at prompt ${details.prompt.name}` });
}

http
  .createServer((req, res) => {
    const path = new URL(req.url, issuer).pathname;
    if (path.startsWith('/interaction/')) {
      interaction(req, res, path).catch((err) => reply(res, 500, { error: String(err) }));
      return;
    }
    serveProvider(req, res);
  })
  .listen(port, '127.0.0.1', () => {
    console.log(`listening ${issuer}`);
  });
