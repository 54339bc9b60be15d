import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { startIssuer } from '../helpers/issuer.js';

const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available) {
  if (process.env.REQUIRE_SERVICES === '1')
    throw new Error(`${CHROMIUM} is missing (REQUIRE_SERVICES=1): run scripts/ensure-chromium.sh`);
  console.warn(
    `skipping the /docs browser test: ${CHROMIUM} is missing (scripts/ensure-chromium.sh installs it)`,
  );
}

// `GET /docs`: Swagger UI served from our own origin, rendered in headless Chromium.
describe.skipIf(!available)('/docs in a browser', () => {
  it('loads with no failed request, nothing from another origin, and shows the issue-vc operation', async () => {
    const issuer = await startIssuer();
    const profile = mkdtempSync(join(tmpdir(), 'issuer-kit-chromium-'));
    // A fresh profile (user-data-dir) per run.
    const browser = await chromium.launchPersistentContext(profile, {
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
    });
    // Playwright's own 30 s deadlines (launch, navigation, waits) would fail a browser that a busy
    // machine starts or renders late; the test's timeout bounds it instead.
    browser.setDefaultTimeout(0);
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      const origins = new Set<string>();
      page.on('request', (r) => {
        origins.add(new URL(r.url()).origin);
      });
      page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
      page.on('response', (r) => {
        if (r.status() >= 400) problems.push(`${r.status()}: ${r.url()}`);
      });
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      await page.goto(`${issuer.url}/docs`, { waitUntil: 'networkidle' });
      const operation = page.locator('#operations-holder-facing-issue-vc');
      await operation.waitFor({ state: 'visible' });
      expect(await operation.textContent()).toContain('/issue-vc');
      if (process.env.DOCS_SCREENSHOT)
        await page.screenshot({ path: process.env.DOCS_SCREENSHOT, fullPage: false });
      expect(problems).toEqual([]);
      expect([...origins]).toEqual([issuer.url]);
    } finally {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
      await issuer.close();
    }
  });
});
