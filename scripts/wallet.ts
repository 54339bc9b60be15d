/**
 * `npm run wallet [-- --user <userId> --schema <schemaId> --out <file>]`: plays a standards wallet
 * and its holder against a running development issuer (ISSUER_URL, default http://localhost:3000)
 * through the OpenID4VCI authorization code flow
 * (docs/haip.md "Trying the authorization code flow"). The wallet is the `@openid4vc/openid4vci` client as the tests run it
 * (test/helpers/oid4vci-auth-code-wallet.ts): it pushes its authorization request (PKCE, DPoP), the
 * holder's browser follows the issuer to its login provider, which must be the development one
 * (`npm run login-provider`: its sign-in pages are filled as <userId>), and back with a code; the
 * wallet takes its DPoP-bound token, a nonce and the credential, which is then verified from the
 * issuer's public documents as `npm run admin -- verify` does. Development issuers only.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { DocumentFetcher, verifyCredential } from '../src/formats/verify.js';
import {
  followIssuerRedirect,
  receiveByAuthorizationCode,
} from '../test/helpers/oid4vci-auth-code-wallet.js';
import { signInAtDevProvider } from './login-provider/provider.js';

const USAGE = 'usage: npm run wallet [-- --user <userId> --schema <schemaId> --out <file>]';

let args: { user: string; schema: string; out?: string | undefined; help?: boolean | undefined };
try {
  args = parseArgs({
    options: {
      user: { type: 'string', default: 'demo-user-1' },
      schema: { type: 'string', default: 'membership-v1' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  }).values as typeof args;
} catch (err) {
  console.error(`wallet: ${(err as Error).message}\n${USAGE}`);
  process.exit(1);
}
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}

async function main(): Promise<void> {
  if (process.env.NODE_ENV === 'production') throw new Error('refuses to run with NODE_ENV=production');
  const serverUrl = (process.env.ISSUER_URL ?? `http://localhost:${process.env.PORT ?? 3000}`).replace(
    /\/$/,
    '',
  );
  const meta = await fetch(`${serverUrl}/.well-known/oauth-authorization-server`).catch(() => undefined);
  if (!meta?.ok) throw new Error(`no OpenID4VCI authorization server at ${serverUrl} (is OID4VCI on?)`);
  const server = (await meta.json()) as { issuer: string; authorization_endpoint?: string };
  if (server.issuer.startsWith('https:'))
    throw new Error(`${serverUrl} is a production issuer (its origin is https); development servers only`);
  if (!server.authorization_endpoint)
    throw new Error(`${serverUrl} offers no authorization code flow: start it with OID4VCI_LOGIN_ISSUER`);
  // A wallet knows the issuer by its identifier (ISSUER_ORIGIN), which its metadata must name.
  const issuerUrl = server.issuer;

  console.log(
    `1. the wallet asks ${issuerUrl} for ${args.schema}: pushed authorization request, PKCE S256, DPoP`,
  );
  const run = await receiveByAuthorizationCode({
    issuerUrl,
    configurationId: args.schema,
    clientId: 'issuer-kit-wallet',
    signIn: async (authorizationUrl) => {
      const atProvider = await followIssuerRedirect(authorizationUrl);
      console.log(`2. the holder signs in at ${new URL(atProvider).origin} as ${args.user}`);
      const back = await followIssuerRedirect(await signInAtDevProvider(atProvider, args.user));
      console.log('3. back in the wallet with an authorization code; token, nonce, credential');
      return back;
    },
  });
  const credential = run.credential;
  console.log(
    `   ${run.accessTokenResponse.token_type} access token; credential ${credential.slice(0, 40)}…`,
  );
  if (args.out) {
    writeFileSync(args.out, `${credential}\n`);
    console.log(`   written to ${args.out}`);
  }
  const verified = await verifyCredential(credential, {
    fetcher: new DocumentFetcher({ origin: serverUrl }),
    schemasDir: process.env.SCHEMAS_DIR ?? 'schemas',
  });
  console.log(`4. verified from ${serverUrl}'s public documents:`);
  for (const c of verified.checks)
    console.log(`   ${c.ok ? 'PASS' : 'FAIL'}  ${c.check}  ${c.ok ? '' : `${c.code}: `}${c.detail}`);
  if (!verified.ok) throw new Error('the credential did not verify');
  console.log('\ncredential received by the authorization code flow and verified ✔');
}

main().catch((err: unknown) => {
  console.error(`wallet failed: ${(err as Error).message}`);
  process.exit(1);
});
