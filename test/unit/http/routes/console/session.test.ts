import type { Response } from 'express';
import { describe, expect, it } from 'vitest';
import { escapeHtml, html } from '../../../../../src/http/routes/console/html.js';
import { csrfTokenOf, startSession } from '../../../../../src/http/routes/console/session.js';
import type { ConsoleSessionStore } from '../../../../../src/store/store.js';

/** The Set-Cookie line of a sign-in under a configuration. */
async function signInCookie(production: boolean): Promise<{ cookie: string; stored: string[] }> {
  const stored: string[] = [];
  const headers: string[] = [];
  const ctx = {
    config: { production, console: { enabled: true, idleSeconds: 1800, absoluteSeconds: 28_800 } },
    store: {
      consoleSessions: {
        endExpired: async () => 0,
        create: async (idHash: string, actor: string) => {
          stored.push(idHash, actor);
        },
      } as unknown as ConsoleSessionStore,
    },
  };
  const res = { append: (_name: string, value: string) => headers.push(value) } as unknown as Response;
  // The parts startSession reads; the rest of a context is not needed.
  await startSession(ctx as never, res, 'ops-alice', 'ops-alice-key');
  return { cookie: headers[0]!, stored };
}

// docs/security.md "The admin console".
describe('console session cookie', () => {
  it('is HttpOnly, SameSite=Strict, Path=/console, and Secure in production only', async () => {
    const prod = await signInCookie(true);
    expect(prod.cookie).toMatch(
      /^console_session=[A-Za-z0-9_-]{43}; Max-Age=28800; Path=\/console; HttpOnly; Secure; SameSite=Strict$/,
    );
    const dev = await signInCookie(false);
    expect(dev.cookie).not.toContain('Secure');
    expect(dev.cookie).toContain('HttpOnly');
  });

  it('stores only the SHA-256 of the session id, and derives a CSRF token that is neither', async () => {
    const { cookie, stored } = await signInCookie(true);
    const id = /^console_session=([^;]+)/.exec(cookie)![1]!;
    const { createHash } = await import('node:crypto');
    expect(stored).toEqual([createHash('sha256').update(id).digest('hex'), 'ops-alice']);
    const csrf = csrfTokenOf(id);
    expect(csrf).not.toBe(id);
    expect(stored).not.toContain(csrf);
    expect(csrfTokenOf(id)).toBe(csrf);
  });
});

describe('console html', () => {
  it('escapes every interpolated value unless it is already markup', () => {
    const evil = `<script>alert("x")</script>&'`;
    expect(html`<p title="${evil}">${evil}</p>`.text).toBe(
      `<p title="${escapeHtml(evil)}">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;</p>`,
    );
    expect(html`<div>${html`<b>${'<i>'}</b>`}</div>`.text).toBe('<div><b>&lt;i&gt;</b></div>');
  });
});
