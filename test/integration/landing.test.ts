import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIssuer, type TestIssuer } from '../helpers/issuer.js';
import { tempDir } from '../helpers/tmp.js';

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
      for (const href of ['/docs', '/openapi.json', '/.well-known/did.json', '/.well-known/jwt-vc-issuer'])
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

describe('start-up log', () => {
  // `npm run dev` as a newcomer runs it: development, every secret generated.
  it('the listening line names the API docs URL, and that URL serves the docs', async () => {
    const dir = tempDir();
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        NODE_ENV: 'development',
        PORT: '0',
        KEYS_DIR: join(dir, 'keys'),
        DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = once(child, 'exit');
    try {
      let listening: { url?: string; docs?: string; msg?: string } | undefined;
      for await (const line of createInterface({ input: child.stdout! })) {
        const record = JSON.parse(line) as { event?: string; url?: string; docs?: string; msg?: string };
        if (record.event === 'listening') {
          listening = record;
          break;
        }
      }
      expect(listening?.docs).toBe(`${listening?.url}/docs`);
      expect(listening?.msg).toContain(listening?.docs);
      const docs = await fetch(listening!.docs!);
      expect(docs.status).toBe(200);
      expect(docs.headers.get('content-type')).toMatch(/^text\/html/);
      await docs.body?.cancel();
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
