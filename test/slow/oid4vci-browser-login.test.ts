import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import { type LoginProvider, startLoginProvider } from '../helpers/login-provider.js';
import { receiveByAuthorizationCode, WALLET_REDIRECT } from '../helpers/oid4vci-auth-code-wallet.js';
import { sdJwtMembershipSchemas } from '../helpers/oid4vci-wallet.js';

const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available) {
  if (process.env.REQUIRE_SERVICES === '1')
    throw new Error(`${CHROMIUM} is missing (REQUIRE_SERVICES=1): run scripts/ensure-chromium.sh`);
  console.warn(
    `skipping the OpenID4VCI browser sign-in test: ${CHROMIUM} is missing (scripts/ensure-chromium.sh installs it)`,
  );
}

/**
 * The OpenID4VCI authorization code flow (docs/interface.md "OpenID4VCI: the wallet door") with
 * the holder's part played in Debian's Chromium: the `@openid4vc/openid4vci` wallet client pushes
 * its request and hands the browser the issuer's authorization URL; the browser follows the
 * issuer to the login provider (`oidc-provider`), the holder types a user name into its sign-in
 * page and confirms, and the browser is sent back through the issuer to the wallet's redirect_uri,
 * which the wallet (here, the test) takes from the browser.
 */
describe.skipIf(!available)('the authorization code flow, signed in through a real browser', () => {
  let issuer: TestIssuer;
  let provider: LoginProvider;
  let profile: string;
  let browser: BrowserContext;

  beforeAll(async () => {
    const dir = tempDir();
    const env: Record<string, string> = { OID4VCI: 'on', SCHEMAS_DIR: sdJwtMembershipSchemas(dir) };
    issuer = await startIssuer({
      dir,
      env,
      prepare: async (_dir, origin) => {
        provider = await startLoginProvider({ redirectUri: `${origin}/oid4vci/login/callback` });
        Object.assign(env, {
          OID4VCI_LOGIN_ISSUER: provider.issuer,
          OID4VCI_LOGIN_CLIENT_ID: provider.clientId,
          OID4VCI_LOGIN_CLIENT_SECRET: provider.clientSecret,
        });
      },
    });
    profile = mkdtempSync(join(tmpdir(), 'issuer-kit-oid4vci-browser-'));
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
    });
    // A busy shared machine renders late; two minutes only ends a wait that would never end.
    browser.setDefaultTimeout(120_000);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await issuer?.close();
    await provider?.close();
  });

  it('the holder signs in on the provider’s page; the wallet gets the signed-in user’s credential', async () => {
    const page = await browser.newPage();
    const visited: string[] = [];
    page.on('framenavigated', (frame) => {
      if (frame === page.mainFrame()) visited.push(new URL(frame.url()).origin);
    });
    // The wallet's redirect_uri: an app link on a phone; here the test answers it and keeps the URL.
    let back: ((url: string) => void) | undefined;
    const arrived = new Promise<string>((done) => {
      back = done;
    });
    await page.route(`${WALLET_REDIRECT}**`, async (route) => {
      back!(route.request().url());
      await route.fulfill({ status: 200, contentType: 'text/plain', body: 'back in the wallet' });
    });

    const { credential } = await receiveByAuthorizationCode({
      issuerUrl: issuer.url,
      signIn: async (authorizationUrl) => {
        await page.goto(authorizationUrl);
        await page.locator('input[name="login"]').fill('demo-user-2');
        await page.locator('input[name="password"]').fill('any password');
        await page.getByRole('button', { name: 'Sign-in' }).click();
        await page.getByRole('button', { name: 'Continue' }).click();
        return arrived;
      },
    });
    // `arrived` answers when the wallet's URL is requested, before the browser commits it: wait for
    // the commit itself (an event, not a time) before reading where the browser went.
    await page.waitForURL(`${WALLET_REDIRECT}**`, { waitUntil: 'commit' });
    expect(visited, visited.join(' -> ')).toContain(new URL(provider.issuer).origin);
    expect(visited.at(-1), visited.join(' -> ')).toBe(new URL(WALLET_REDIRECT).origin);
    const verified = await verifySdJwtVc(issuer.url, credential);
    expect(verified.claims).toMatchObject({ givenName: 'Bram' });
    await page.close();
  }, 180_000);
});
