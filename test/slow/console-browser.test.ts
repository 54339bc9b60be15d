import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shortDid } from '../../src/short-did.js';
import { fetchList } from '../fixtures/status.js';
import { queryStore, startIssuer, TEST_ADMIN_API_KEY, type TestIssuer } from '../helpers/issuer.js';

// The browser's globals, for the functions page.evaluate runs in the page: the tsconfig has no DOM
// library (it would clash with Node's types in src/), and these bodies are checked by the browser.
declare const document: any, window: any, localStorage: any, sessionStorage: any;

const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available) {
  if (process.env.REQUIRE_SERVICES === '1')
    throw new Error(`${CHROMIUM} is missing (REQUIRE_SERVICES=1): run scripts/ensure-chromium.sh`);
  console.warn(
    `skipping the console browser test: ${CHROMIUM} is missing (scripts/ensure-chromium.sh installs it)`,
  );
}

/** Screenshots of each page, kept as test artefacts (git-ignored). */
const SHOTS = resolve('test-artifacts/console');
const OPERATOR_KEY = 'operator-key-0123456789abcdef0123456789ab';
const AXE = readFileSync(resolve('node_modules/axe-core/axe.min.js'), 'utf8');

interface AxeResult {
  violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown }> }>;
}

/** axe-core's scan of the page as it is: every violation, whatever its impact. */
async function axeViolations(page: Page): Promise<AxeResult['violations']> {
  // The console's CSP refuses inline script: axe's source is evaluated through the DevTools protocol.
  await page.evaluate(AXE);
  const result = (await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (ctx: unknown) => Promise<AxeResult> } }).axe;
    return axe.run(document);
  })) as AxeResult;
  return result.violations;
}

const describeViolations = (violations: AxeResult['violations']) =>
  violations.map((v) => `${v.impact} ${v.id}: ${v.help} at ${JSON.stringify(v.nodes.map((n) => n.target))}`);

/** axe-core's scan of the page as it is: the serious and critical violations. */
async function seriousViolations(page: Page): Promise<string[]> {
  return describeViolations(
    (await axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical'),
  );
}

// The admin console (docs/operations.md "The admin console") in Debian's Chromium.
describe.skipIf(!available)('the admin console in a browser', () => {
  let issuer: TestIssuer;
  let profile: string;
  let browser: BrowserContext;
  let credentialId: string;
  let nonce: string;
  const email = 'ada.lovelace@example.org';
  const pageErrors: string[] = [];
  const foreign: string[] = [];

  const issue = async (to: string) => {
    const res = await issuer.admin('/admin/issue-vc', {
      userId: to,
      schemaId: 'membership-v1',
      vct: 'https://issuer.example/vct/membership-v1',
      expiration: new Date(Date.now() + 30 * 86_400_000).toISOString(),
      credentialSubject: {
        givenName: 'Ada',
        familyName: 'Lovelace',
        memberSince: '2020-01-01',
        tier: 'gold',
        memberNumber: 7,
      },
    });
    expect([201, 202]).toContain(res.status);
    return (await res.json()) as { credentialId: string; revocationNonce: string };
  };

  const newPage = async () => {
    const page = await browser.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('request', (r) => {
      const origin = new URL(r.url()).origin;
      if (origin !== issuer.url && !r.url().startsWith('data:')) foreign.push(r.url());
    });
    return page;
  };

  const signIn = async (page: Page, key = OPERATOR_KEY) => {
    // Each test signs in afresh: the browser profile would otherwise still hold the last session.
    await browser.clearCookies();
    await page.goto(`${issuer.url}/console`);
    await page.waitForURL(/\/console\/sign-in/);
    await page.getByLabel('Admin key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    issuer = await startIssuer({
      env: {
        ADMIN_API_KEYS: `ops-alice:${OPERATOR_KEY}`,
        STATUS_LIST_BITS: '2',
        CONSOLE_SESSION_IDLE_SECONDS: '600',
      },
    });
    ({ credentialId, revocationNonce: nonce } = await issue(email));
    await issue('someone.else@example.org');
    profile = mkdtempSync(join(tmpdir(), 'issuer-kit-console-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      timeout: 0,
      args: [
        '--no-sandbox',
        '--headless',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
      viewport: { width: 1280, height: 900 },
    });
    // Playwright's own 30 s deadlines would fail a browser a busy machine renders late; two
    // minutes only ends a wait that would never end.
    browser.setDefaultTimeout(120_000);
  });

  afterAll(async () => {
    await browser?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await issuer?.close();
  });

  it('signs in, finds a holder by email, revokes with a reason: the public status, the status list and the audit row follow', async () => {
    const page = await newPage();
    await signIn(page);
    await page.screenshot({ path: join(SHOTS, 'overview.png'), fullPage: true });
    // The doctor report arrives after the first paint.
    await page.locator('#doctor table').waitFor();

    await page.getByRole('link', { name: 'Issuances' }).click();
    await page.getByLabel('Recipient email').fill(email);
    await page.getByRole('button', { name: 'Search' }).click();
    const rows = page.locator('main table tbody tr');
    await expect.poll(() => rows.count()).toBe(1);
    await page.screenshot({ path: join(SHOTS, 'issuances.png'), fullPage: true });
    await rows.first().getByRole('link').click();
    await page.getByRole('heading', { level: 1, name: `Credential ${credentialId}` }).waitFor();
    expect(await page.locator('dl.facts').textContent()).toContain(nonce);

    const list = (
      (await await fetch(`${issuer.url}/admin/issuance-history?revocationNonce=${nonce}`, {
        headers: { 'x-admin-api-key': TEST_ADMIN_API_KEY },
      }).then((r) => r.json())) as { data: Array<{ statusList: { uri: string; idx: number } }> }
    ).data[0]!.statusList;
    expect((await fetchList(list.uri)).list.getStatus(list.idx)).toBe(0);

    await page
      .getByLabel('Reason (required, kept in the audit log)')
      .first()
      .fill('holder reported the phone stolen');
    await page.getByRole('button', { name: 'Revoke…' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain(credentialId);
    await page.screenshot({ path: join(SHOTS, 'credential-confirm.png') });
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await page.locator('.status.revoked').waitFor();
    await page.screenshot({ path: join(SHOTS, 'credential.png'), fullPage: true });

    const status = await (await fetch(`${issuer.url}/revocation-status/${nonce}`)).json();
    expect(status).toEqual({ isRevoked: true, status: 'revoked' });
    expect((await fetchList(list.uri)).list.getStatus(list.idx)).toBe(1);
    const audit = await queryStore<{ actor: string; reason: string }>(
      issuer.ctx.store,
      'SELECT actor, reason FROM audit_log WHERE action = ? AND target = ?',
      ['revoke', nonce],
    );
    expect(audit).toEqual([{ actor: 'ops-alice', reason: 'holder reported the phone stolen' }]);
    // The credential's own audit trail shows it.
    expect(await page.locator('section[aria-labelledby="h-audit"]').textContent()).toContain('ops-alice');
    await page.close();
  });

  it('does the same revoke with the keyboard alone', async () => {
    const { credentialId: id, revocationNonce: n } = await issue('keyboard.user@example.org');
    const page = await newPage();
    await signIn(page);
    const press = (key: string) => page.keyboard.press(key);
    const tabTo = async (predicate: () => Promise<boolean>, limit = 80) => {
      for (let i = 0; i < limit; i++) {
        await press('Tab');
        if (await predicate()) return;
      }
      throw new Error('focus never reached the element');
    };
    const focused = (selector: string) => () =>
      page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector);
    await tabTo(focused('nav a[href="/console/issuances"]'));
    await press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Issuances' }).waitFor();
    await tabTo(focused('#f-email'));
    await page.keyboard.type('keyboard.user@example.org');
    await press('Enter');
    await expect.poll(() => page.locator('main table tbody tr').count()).toBe(1);
    await tabTo(focused(`a[href="/console/credentials/${encodeURIComponent(id)}"]`));
    await press('Enter');
    await page.getByRole('heading', { level: 1, name: `Credential ${id}` }).waitFor();
    await tabTo(focused('#revoke-reason'));
    await page.keyboard.type('keyboard-only revoke');
    await press('Tab');
    await press('Enter');
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    // The dialog opens on Cancel: one Tab reaches Confirm.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await press('Tab');
    await press('Enter');
    await page.locator('.status.revoked').waitFor();
    const status = await (await fetch(`${issuer.url}/revocation-status/${n}`)).json();
    expect(status).toEqual({ isRevoked: true, status: 'revoked' });
    await page.close();
  });

  it('every page passes an axe-core scan with no serious or critical violation, and is photographed', async () => {
    const page = await newPage();
    await signIn(page);
    const paths = {
      overview: '/console',
      issuances: '/console/issuances',
      credential: `/console/credentials/${encodeURIComponent(credentialId)}`,
      audit: '/console/audit',
      keys: '/console/keys',
      schemas: '/console/schemas',
      bulk: '/console/bulk',
    };
    const problems: string[] = [];
    for (const [name, path] of Object.entries(paths)) {
      await page.goto(`${issuer.url}${path}`);
      if (name === 'overview') await page.locator('#doctor table').waitFor();
      await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
      problems.push(...(await seriousViolations(page)).map((v) => `${path}: ${v}`));
    }
    await browser.clearCookies();
    await page.goto(`${issuer.url}/console/sign-in`);
    await page.screenshot({ path: join(SHOTS, 'sign-in.png') });
    problems.push(...(await seriousViolations(page)).map((v) => `/console/sign-in: ${v}`));
    expect(problems).toEqual([]);
    await page.close();
  });

  it('at 420 px wide the Issuances table scrolls in its own region, the page does not; holder DIDs are shortened as the CLI shows them', async () => {
    const page = await newPage();
    await page.setViewportSize({ width: 420, height: 900 });
    await signIn(page);
    await page.goto(`${issuer.url}/console/issuances`);
    const rows = page.locator('main table tbody tr');
    await expect.poll(() => rows.count()).toBeGreaterThan(1);
    await page.screenshot({ path: join(SHOTS, 'issuances-420.png'), fullPage: true });
    const layout = await page.evaluate(() => {
      const region = document.querySelector('.table-scroll');
      const header = document.querySelector('header.top').getBoundingClientRect();
      return {
        viewport: window.innerWidth,
        pageWidth: document.documentElement.scrollWidth,
        header: { left: header.left, right: header.right },
        region: { scrollWidth: region.scrollWidth, clientWidth: region.clientWidth },
        overflowX: window.getComputedStyle(region).overflowX,
        // A header cell is cut when its text is wider than the cell or broken over lines.
        cutHeaders: [...document.querySelectorAll('main table thead th')]
          .filter((th: any) => {
            const text = document.createRange();
            text.selectNodeContents(th);
            return th.scrollWidth > th.clientWidth || text.getClientRects().length !== 1;
          })
          .map((th: any) => th.textContent),
      };
    });
    expect(layout.viewport).toBe(420);
    expect(layout.pageWidth).toBeLessThanOrEqual(layout.viewport);
    expect(layout.header.left).toBeGreaterThanOrEqual(0);
    expect(layout.header.right).toBeLessThanOrEqual(layout.viewport);
    expect(layout.overflowX).toBe('auto');
    expect(layout.region.scrollWidth).toBeGreaterThan(layout.region.clientWidth);
    expect(layout.cutHeaders).toEqual([]);

    const cells = await page
      .locator('main table tbody td.did')
      .evaluateAll((tds) =>
        tds.map((td: any) => ({ text: td.textContent, title: td.getAttribute('title') })),
      );
    expect(cells.length).toBeGreaterThan(1);
    for (const cell of cells) {
      expect(cell.title).toMatch(/^did:/);
      expect(cell.title!.length).toBeGreaterThan(24);
      expect(cell.text).toBe(shortDid(cell.title!));
    }
    // The holder DID cell is one line, not six-character fragments.
    const lines = await page
      .locator('main table tbody td.did')
      .first()
      .evaluate((td: any) => {
        const text = document.createRange();
        text.selectNodeContents(td);
        return text.getClientRects().length;
      });
    expect(lines).toBe(1);
    expect(describeViolations(await axeViolations(page))).toEqual([]);
    await page.close();
  });

  it('refuses a cross-origin form, a missing CSRF token, and keeps the session cookie strict', async () => {
    const page = await newPage();
    await signIn(page);
    const cookie = (await browser.cookies(`${issuer.url}/console`)).find(
      (c) => c.name === 'console_session',
    )!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
    // A test issuer is not production: Secure is set there only (checked in the unit test).
    expect(cookie.secure).toBe(false);

    // Another origin's page posts a form to the console: the browser sends the cookie? SameSite
    // keeps it home, and the Origin check refuses the request anyway.
    const { credentialId: id, revocationNonce: n } = await issue('cross.site@example.org');
    const evil: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><form id="f" method="post" action="${issuer.url}/console/api/admin/revoke" enctype="text/plain">
<input name='{"revocationNonce":"${n}","reason":"x","a":"' value='"}'></form><p>evil</p>`);
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.2', () => r()));
    try {
      const evilUrl = `http://127.0.0.2:${(evil.address() as AddressInfo).port}`;
      const attack = await newPage();
      await attack.goto(evilUrl);
      const answer = attack.waitForResponse((r) => r.url().includes('/console/api/admin/revoke'));
      await attack.evaluate(() => document.getElementById('f').submit());
      expect([401, 403]).toContain((await answer).status());
      await attack.close();
    } finally {
      // Chromium keeps its connection open: closed here, not waited for.
      evil.closeAllConnections();
      await new Promise((r) => evil.close(r));
    }
    // Same origin, signed in, but no CSRF token: refused.
    const noToken = await page.evaluate(
      async ([nonce]) =>
        (
          await fetch('/console/api/admin/revoke', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ revocationNonce: nonce, reason: 'no token' }),
          })
        ).status,
      [n],
    );
    expect(noToken).toBe(403);
    // With the cookie and the right token, but from another origin: refused too.
    const session = (await browser.cookies(`${issuer.url}/console`)).find(
      (c) => c.name === 'console_session',
    )!.value;
    const token = await page.locator('meta[name="csrf-token"]').getAttribute('content');
    const foreignOrigin = await fetch(`${issuer.url}/console/api/admin/revoke`, {
      method: 'POST',
      headers: {
        cookie: `console_session=${session}`,
        origin: 'http://127.0.0.2:1',
        'content-type': 'application/json',
        'x-csrf-token': token!,
      },
      body: JSON.stringify({ revocationNonce: n, reason: 'foreign' }),
    });
    expect(foreignOrigin.status).toBe(403);
    // A revoke without a reason is refused by the console even with the token.
    const noReason = await page.evaluate(
      async ([nonce]) =>
        (
          await fetch('/console/api/admin/revoke', {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-csrf-token': document.querySelector('meta[name="csrf-token"]').getAttribute('content'),
            },
            body: JSON.stringify({ revocationNonce: nonce }),
          })
        ).status,
      [n],
    );
    expect(noReason).toBe(400);
    const after = (await (await fetch(`${issuer.url}/revocation-status/${n}`)).json()) as {
      isRevoked: boolean;
    };
    expect(after.isRevoked).toBe(false);
    expect((await issuer.ctx.store.issuances.get(id))?.status).toBe(0);
    await page.close();
  });

  it('sends CSP that blocks inline script, and shows no admin key in any page, storage or URL', async () => {
    const page = await newPage();
    const urls: string[] = [];
    page.on('request', (r) => urls.push(r.url()));
    await signIn(page);
    const response = await page.goto(`${issuer.url}/console/keys`);
    const csp = response!.headers()['content-security-policy']!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    // An inline script added to the page does not run.
    const ran = await page.evaluate(() => {
      const s = document.createElement('script');
      s.textContent = 'window.__inlineRan = true';
      document.head.append(s);
      return (window as unknown as { __inlineRan?: boolean }).__inlineRan === true;
    });
    expect(ran).toBe(false);
    for (const path of [
      '/console',
      '/console/issuances',
      '/console/audit',
      '/console/keys',
      '/console/schemas',
    ]) {
      await page.goto(`${issuer.url}${path}`);
      const seen = await page.evaluate(() => ({
        html: document.documentElement.outerHTML,
        local: JSON.stringify({ ...localStorage }),
        session: JSON.stringify({ ...sessionStorage }),
        cookie: document.cookie,
      }));
      for (const key of [OPERATOR_KEY, TEST_ADMIN_API_KEY])
        for (const [where, text] of Object.entries(seen))
          expect(text.includes(key), `${path} ${where}`).toBe(false);
    }
    for (const url of urls) expect(url).not.toContain(OPERATOR_KEY);
    const cookies = JSON.stringify(await browser.cookies());
    expect(cookies).not.toContain(OPERATOR_KEY);
    await page.close();
  });

  it('sends an ended session back to sign-in, and sign-out ends it on the server', async () => {
    const page = await newPage();
    await signIn(page);
    const id = (await browser.cookies(`${issuer.url}/console`)).find(
      (c) => c.name === 'console_session',
    )!.value;
    // Sign-out, then the old cookie is replayed: the server no longer knows it.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/console\/sign-in$/);
    const replay = await fetch(`${issuer.url}/console/keys`, {
      headers: { cookie: `console_session=${id}` },
      redirect: 'manual',
    });
    expect(replay.status).toBe(303);
    expect(replay.headers.get('location')).toMatch(/^\/console\/sign-in/);
    const rows = await queryStore(issuer.ctx.store, 'SELECT 1 FROM console_sessions WHERE id_hash = ?', [
      createHash('sha256').update(id).digest('hex'),
    ]);
    expect(rows).toEqual([]);

    // A session idle past CONSOLE_SESSION_IDLE_SECONDS: its last request moved into the past.
    await signIn(page);
    await queryStore(issuer.ctx.store, 'UPDATE console_sessions SET last_seen_at = ?', [
      Date.now() - 3_600_000,
    ]);
    await page.goto(`${issuer.url}/console/audit`);
    await page.waitForURL(/\/console\/sign-in\?next=%2Fconsole%2Faudit$/);
    // Signing in again returns to the page asked for.
    await page.getByLabel('Admin key').fill(OPERATOR_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    await page.screenshot({ path: join(SHOTS, 'audit.png'), fullPage: true });
    await page.close();
  });

  it('Bulk: counts the selection, starts only once the count is typed, and follows the job to its end', async () => {
    const to = 'bulk.holder@example.org';
    const issued = [await issue(to), await issue(to)];
    const page = await newPage();
    await signIn(page);
    await page.getByRole('link', { name: 'Bulk' }).click();
    await page.getByRole('heading', { level: 1, name: 'Bulk status change' }).waitFor();
    await page.getByLabel('Recipient email').fill(to);
    await page.getByLabel('Reason (required, kept in the audit log)').fill('the holder left the club');
    await page.getByRole('button', { name: 'Count the matching credentials' }).click();
    await expect.poll(() => page.locator('#b-matched').textContent()).toContain('2 credential(s) match');
    const start = page.getByRole('button', { name: 'Start the change' });
    const typed = page.getByLabel('Type the number of credentials to change, to confirm');
    await typed.fill('1');
    expect(await start.isDisabled()).toBe(true);
    await typed.fill('2');
    expect(await start.isEnabled()).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'bulk-confirm.png'), fullPage: true });
    await start.click();
    await expect.poll(() => page.locator('#b-state').textContent()).toMatch(/: done, 2 of 2 changed/);
    await page.screenshot({ path: join(SHOTS, 'bulk.png'), fullPage: true });
    for (const { revocationNonce } of issued) {
      const status = await (await fetch(`${issuer.url}/revocation-status/${revocationNonce}`)).json();
      expect(status).toEqual({ isRevoked: true, status: 'revoked' });
      const rows = await queryStore<{ actor: string }>(
        issuer.ctx.store,
        'SELECT actor FROM audit_log WHERE action = ? AND target = ?',
        ['revoke', revocationNonce],
      );
      expect(rows.map((r) => r.actor)).toEqual(['ops-alice']);
    }
    await page.close();
  });

  it('loaded nothing from another origin and raised no page error', () => {
    expect(pageErrors).toEqual([]);
    expect(foreign.filter((u) => !u.startsWith('http://127.0.0.2'))).toEqual([]);
  });
});
