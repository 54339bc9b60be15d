import { randomUUID } from 'node:crypto';
import { attester, walletAttestation } from '../../test/helpers/attesters.js';
import { startLoginProvider } from '../../test/helpers/login-provider.js';
import {
  followIssuerRedirect,
  receiveByAuthorizationCode,
} from '../../test/helpers/oid4vci-auth-code-wallet.js';
import { holderKey, receiveWithOpenid4vci } from '../../test/helpers/oid4vci-wallet.js';
import type { Row } from './issuance.js';
import { freePort, inFlight } from './oid4vci.js';
import { processCpuMs, startBenchServer } from './server.js';

/**
 * The OpenID4VCI authorization code flow beside the pre-authorized code flow, on one server in one
 * run (docs/benchmarks.md "The OpenID4VCI channel"): server CPU per credential of each whole flow,
 * as the `@openid4vc/openid4vci` wallet client runs it, with a wallet attestation
 * (OID4VCI_WALLET_TRUST) and DPoP on every token request in both, and their ratio.
 * Pre-authorized: the admin's offer, token, nonce, credential. Authorization code: PAR, authorize,
 * the login callback (the issuer exchanges the login provider's code and checks its ID token),
 * token, nonce, credential. The login provider (`oidc-provider`) and the holder's sign-in at it run
 * in this process, outside the server's CPU. The two flows alternate in rounds, so that a drift of
 * the shared machine falls on both.
 */
export async function benchOid4vciAuthorizationCode(
  options: { credentials?: number; concurrency?: number; rounds?: number } = {},
): Promise<Row[]> {
  const rounds = options.rounds ?? 4;
  const perRound = Math.max(1, Math.floor((options.credentials ?? 160) / rounds));
  const concurrency = options.concurrency ?? 8;
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const provider = await attester('bench-wallet-provider');
  const login = await startLoginProvider({ redirectUri: `${origin}/oid4vci/login/callback` });
  const server = await startBenchServer({
    PORT: String(port),
    ISSUER_ORIGIN: origin,
    OID4VCI: 'on',
    OID4VCI_WALLET_TRUST: provider.trustFile,
    OID4VCI_REQUIRE_DPOP: '1',
    OID4VCI_LOGIN_ISSUER: login.issuer,
    OID4VCI_LOGIN_CLIENT_ID: login.clientId,
    OID4VCI_LOGIN_CLIENT_SECRET: login.clientSecret,
    RATE_LIMIT_HOLDER_PER_MIN: '0',
    RATE_LIMIT_ADMIN_PER_MIN: '0',
    RATE_LIMIT_PUBLIC_PER_MIN: '0',
  });
  const cpu = () => processCpuMs(server.child.pid!) ?? Number.NaN;
  /** A wallet's attestation of its own key, as its provider gives it (made outside the server). */
  const attested = () => {
    const key = holderKey();
    const sub = `bench-wallet-${randomUUID()}`;
    return { sub, clientAttestation: { jwt: walletAttestation(provider, { sub, cnf: key.publicJwk }), key } };
  };
  let failures = { preAuthorized: 0, authorizationCode: 0 };
  const preAuthorized = async () => {
    try {
      const res = await fetch(`${origin}/admin/credential-offers`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-admin-api-key': server.adminApiKey },
        body: JSON.stringify({ schemaId: 'membership-v1', userId: 'demo-user-1' }),
      });
      const { offerUri } = (await res.json()) as { offerUri: string };
      await receiveWithOpenid4vci(offerUri, {
        dpop: holderKey(),
        clientAttestation: attested().clientAttestation,
      });
    } catch {
      failures.preAuthorized++;
    }
  };
  const authorizationCode = async () => {
    const { sub, clientAttestation } = attested();
    try {
      await receiveByAuthorizationCode({
        issuerUrl: origin,
        clientId: sub,
        clientAttestation,
        signIn: async (url) =>
          followIssuerRedirect(await login.signIn(await followIssuerRedirect(url), 'demo-user-1')),
      });
    } catch {
      failures.authorizationCode++;
    }
  };
  try {
    await inFlight(Array.from({ length: 10 }), concurrency, preAuthorized);
    await inFlight(Array.from({ length: 10 }), concurrency, authorizationCode);
    failures = { preAuthorized: 0, authorizationCode: 0 };
    const spent = { preAuthorized: 0, authorizationCode: 0 };
    for (let round = 0; round < rounds; round++)
      for (const [flow, run] of [
        ['preAuthorized', preAuthorized],
        ['authorizationCode', authorizationCode],
      ] as const) {
        const before = cpu();
        await inFlight(Array.from({ length: perRound }), concurrency, run);
        spent[flow] += cpu() - before;
      }
    const n = rounds * perRound;
    const pre = spent.preAuthorized / n;
    const code = spent.authorizationCode / n;
    return [
      {
        name: 'oid4vci pre-authorized whole flow, attested + DPoP, server CPU',
        value: pre,
        unit: 'ms/credential',
      },
      { name: 'oid4vci pre-authorized flow failures', value: failures.preAuthorized, unit: '' },
      {
        name: 'oid4vci authorization code whole flow, attested + DPoP, server CPU',
        value: code,
        unit: 'ms/credential',
      },
      { name: 'oid4vci authorization code flow failures', value: failures.authorizationCode, unit: '' },
      {
        name: 'oid4vci authorization code / pre-authorized whole flow CPU',
        value: code / pre,
        unit: '× (goal ≤ 1.5)',
      },
    ];
  } finally {
    await server.close();
    await login.close();
  }
}
