import type { Request, Response } from 'express';
import { z } from 'zod';
import { type RouteFactory, TAGS } from '../route.js';

/** The documents a newcomer (or a wallet developer) looks for first, by path on this origin. */
const LINKS = {
  docs: '/docs',
  openapi: '/openapi.json',
  didDocument: '/.well-known/did.json',
  jwtVcIssuer: '/.well-known/jwt-vc-issuer',
  jwks: '/.well-known/jwks.json',
} as const;

/** The admin console (docs/operations.md "The admin console"), listed where it answers. */
const CONSOLE = '/console';

const TITLES: Record<keyof typeof LINKS | 'console', string> = {
  console: 'Admin console (sign in with an admin key)',
  docs: 'API documentation (Swagger UI)',
  openapi: 'OpenAPI 3.1 document',
  didDocument: 'did:web document',
  jwtVcIssuer: 'SD-JWT VC issuer metadata',
  jwks: 'Partner JWT keys (JWKS)',
};

/**
 * `GET /`: who answers here and where its documents are. An HTML page, or `{ name, version,
 * links }` when the client asks for JSON (`Accept: application/json`).
 */
export const landingRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: '/',
  group: 'ops',
  auth: 'none',
  doc: {
    operationId: 'landing',
    summary: 'Landing page: name, version and links to the documentation and public documents',
    tags: TAGS.ops,
    responses: {
      200: {
        description: 'An HTML page, or `{ name, version, links }` with `Accept: application/json`',
        contentType: ['text/html', 'application/json'],
        schema: z.object({
          name: z.string(),
          version: z.string(),
          links: z.object({
            console: z.string().optional(),
            docs: z.string(),
            openapi: z.string(),
            didDocument: z.string(),
            jwtVcIssuer: z.string(),
            jwks: z.string(),
          }),
        }),
      },
    },
  },
  // The console answers on this listener when it is on and no ADMIN_PORT takes it elsewhere.
  handler: landing(
    'issuer-kit',
    ctx.version,
    ctx.config.console.enabled && !ctx.config.admin ? { console: CONSOLE, ...LINKS } : LINKS,
  ),
});

function landing(name: string, version: string, links: Record<string, string>) {
  const body = { name, version, links };
  const html = page(name, version, links);
  return (req: Request, res: Response) => {
    res.vary('Accept').set('cache-control', 'no-cache');
    if (req.accepts(['html', 'json']) === 'json') res.json(body);
    else res.type('html').set('content-security-policy', "default-src 'none'").send(html);
  };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(name: string, version: string, links: Record<string, string>): string {
  const items = Object.entries(links)
    .map(
      ([key, href]) =>
        `<li><a href="${href}">${escapeHtml(TITLES[key as keyof typeof TITLES])}</a> <code>${href}</code></li>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(name)} ${escapeHtml(version)}</title>
</head>
<body>
<h1>${escapeHtml(name)} <small>${escapeHtml(version)}</small></h1>
<ul>
${items}
</ul>
</body>
</html>
`;
}
