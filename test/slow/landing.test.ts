import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { entryArgs } from '../helpers/entry.js';
import { tempDir } from '../helpers/tmp.js';

// src/main.ts as a process; the landing page itself is tested in test/integration/landing.test.ts.
describe('start-up log', () => {
  // `npm run dev` as a newcomer runs it: development, every secret generated.
  it('the listening line names the API docs and admin console URLs, and each answers', async () => {
    const dir = tempDir();
    const child = spawn(process.execPath, entryArgs('src/main.ts'), {
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
      type Listening = { event?: string; url?: string; docs?: string; console?: string; msg?: string };
      let listening: Listening | undefined;
      for await (const line of createInterface({ input: child.stdout! })) {
        const record = JSON.parse(line) as Listening;
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
      // CONSOLE is on in development: the line names it, and it leads to its sign-in page.
      expect(listening?.console).toBe(`${listening?.url}/console`);
      expect(listening?.msg).toContain(`admin console at ${listening?.console}`);
      const signIn = await fetch(listening!.console!);
      expect(signIn.status).toBe(200);
      expect(signIn.url).toMatch(/\/console\/sign-in/);
      await signIn.body?.cancel();
      // The OpenID4VCI metadata offers request encryption beside response encryption, as
      // OpenID4VCI 1.0 asks: with the key this start generated in KEYS_DIR.
      const metadata = (await (
        await fetch(`${listening!.url}/.well-known/openid-credential-issuer`)
      ).json()) as Record<string, { jwks?: { keys: { crv?: string; use?: string }[] } }>;
      expect(metadata.credential_response_encryption).toBeDefined();
      expect(metadata.credential_request_encryption?.jwks?.keys).toEqual([
        expect.objectContaining({ crv: 'P-256', use: 'enc' }),
      ]);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
