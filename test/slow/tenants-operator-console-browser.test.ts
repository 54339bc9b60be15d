import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTenants, TEST_OPERATOR_KEY, type TestTenants } from '../helpers/tenants.js';

// The browser's globals, for the functions page.evaluate runs in the page (no DOM library here).
declare const document: any;

const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available) {
  if (process.env.REQUIRE_SERVICES === '1')
    throw new Error(`${CHROMIUM} is missing (REQUIRE_SERVICES=1): run scripts/ensure-chromium.sh`);
  console.warn(`skipping the operator console browser test: ${CHROMIUM} is missing`);
}
const SHOTS = resolve('test-artifacts/console');
const AXE = readFileSync(resolve('node_modules/axe-core/axe.min.js'), 'utf8');

// docs/several-issuers.md "The operator's console" in Debian's Chromium: sign in with the operator
// key, see the tenants, disable one through the confirmation dialog.
describe.skipIf(!available)("the operator's console in a browser", () => {
  let d: TestTenants;
  let profile: string;
  let browser: BrowserContext;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    // Chromium sends Origin with the sign-in form and the actions: the listener's own.
    d = await startTenants(2, { env: (url) => ({ CONSOLE_ORIGIN: url }) });
    profile = mkdtempSync(join(tmpdir(), 'issuer-kit-operator-console-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      timeout: 0,
      args: [
        '--no-sandbox',
        '--headless',
        '--disable-gpu',
        '--disable-background-networking',
        '--no-first-run',
      ],
      viewport: { width: 1280, height: 900 },
    });
    // Only ends a wait that would never end on a busy machine.
    browser.setDefaultTimeout(120_000);
  });
  afterAll(async () => {
    await browser?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await d?.close();
  });

  it('signs in with the operator key, lists the tenants and disables one after confirming', async () => {
    const page = await browser.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(`${d.url}/console`);
    await page.waitForURL(/\/console\/sign-in/);
    await page.getByLabel('Operator key').fill(TEST_OPERATOR_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Tenants' }).waitFor();
    await page.locator('tr[data-tenant="t2"]').waitFor();
    await page.screenshot({ path: join(SHOTS, 'operator-tenants.png'), fullPage: true });

    await page.evaluate(AXE);
    const { violations } = (await page.evaluate(async () =>
      (globalThis as unknown as { axe: { run: (c: unknown) => Promise<unknown> } }).axe.run(document),
    )) as { violations: Array<{ id: string; impact: string | null }> };
    expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);

    await page.getByRole('button', { name: 'Disable t2' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain('t2');
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await page.getByRole('button', { name: 'Enable t2' }).waitFor();
    expect(await page.locator('#flash').textContent()).toContain('Tenant t2 disabled.');
    expect(d.running.deployment.byId('t2')?.record.enabled).toBe(false);
    expect(d.running.deployment.byId('t1')?.record.enabled).toBe(true);
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});
