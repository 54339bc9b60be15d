import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIssuer, type TestIssuer } from '../helpers/issuer.js';

const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };

describe('GET / (landing page)', () => {
  let issuer: TestIssuer;
  beforeAll(async () => {
    issuer = await startIssuer();
  });
  afterAll(async () => {
    await issuer.close();
  });

  it('answers JSON { name, version, links } when the client asks for JSON, and every link answers', async () => {
    const res = await fetch(`${issuer.url}/`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('vary')).toMatch(/accept/i);
    const body = (await res.json()) as { name: string; version: string; links: Record<string, string> };
    expect(body.name).toBe('issuer-kit');
    expect(body.version).toBe(version);
    expect(Object.values(body.links).sort()).toEqual(
      [
        '/.well-known/did.json',
        '/.well-known/jwks.json',
        '/.well-known/jwt-vc-issuer',
        '/console',
        '/docs',
        '/openapi.json',
      ].sort(),
    );
    for (const link of Object.values(body.links)) {
      const linked = await fetch(`${issuer.url}${link}`);
      expect(linked.status, link).toBe(200);
      await linked.body?.cancel();
    }
  });

  it('answers an HTML page to a browser (and to a client that takes anything)', async () => {
    for (const accept of ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', '*/*']) {
      const res = await fetch(`${issuer.url}/`, { headers: { accept } });
      expect(res.status, accept).toBe(200);
      expect(res.headers.get('content-type'), accept).toMatch(/^text\/html/);
      const html = await res.text();
      expect(html).toContain(version);
      for (const href of [
        '/console',
        '/docs',
        '/openapi.json',
        '/.well-known/did.json',
        '/.well-known/jwt-vc-issuer',
      ])
        expect(html).toContain(`href="${href}"`);
    }
  });

  it('is described in /openapi.json', async () => {
    const doc = (await (await fetch(`${issuer.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId: string }>>;
    };
    expect(doc.paths['/']?.get?.operationId).toBe('landing');
  });
});
