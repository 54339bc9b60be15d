import { createHash, randomUUID, sign } from 'node:crypto';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { queryStore, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import {
  type HolderKey,
  holderKey,
  receiveWithOpenid4vci,
  sdJwtMembershipSchemas,
} from '../helpers/oid4vci-wallet.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

/**
 * The OpenID4VCI door (docs/interface.md "OpenID4VCI: the wallet door") on two instances sharing
 * one database, as behind a load balancer (one ISSUER_ORIGIN), on both engines: the transaction
 * code's checks are counted in the database before the code is compared, so a burst of guesses
 * spread over both gets five between them; DPoP proofs (RFC 9449) are refused outside a 300 s
 * `iat` window and when their `jti` was seen by either instance; the server-provided DPoP nonce
 * (§8) of one instance is accepted by the other; and the `WWW-Authenticate` challenge carries
 * only the server's own words.
 */

const postgres = await postgresAvailable('the OpenID4VCI door on two PostgreSQL instances');
const engines = postgres ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);
const KEK = 'b2'.repeat(32);
const PRE_AUTH = 'urn:ietf:params:oauth:grant-type:pre-authorized_code';

interface Pair {
  a: TestIssuer;
  b: TestIssuer;
  /** ISSUER_ORIGIN of both (A's address). */
  origin: string;
  /** The PostgreSQL database both use. */
  databaseUrl?: string;
  close(): Promise<void>;
}

/** Two instances on one database; B answers as A's origin, as a second instance behind one name does. */
async function startPair(engine: 'sqlite' | 'postgres', env: Record<string, string> = {}): Promise<Pair> {
  const dir = tempDir();
  let db: TempDatabase | undefined;
  const common: Record<string, string> = { OID4VCI: 'on', SCHEMAS_DIR: sdJwtMembershipSchemas(dir), ...env };
  if (engine === 'postgres') {
    db = await createMigratedDatabase();
    Object.assign(common, {
      DATABASE_URL: db.url,
      KEY_ENCRYPTION_KEY: KEK,
      // A request waiting on a held row waits for as long as a test holds it.
      DATABASE_QUERY_TIMEOUT_MS: '600000',
      DATABASE_ACQUIRE_TIMEOUT_MS: '600000',
    });
  } else common.DATABASE_URL = `sqlite:${join(dir, 'issuer.db')}`;
  const a = await startIssuer({ dir, env: common });
  const b = await startIssuer({
    dir: engine === 'sqlite' ? dir : tempDir(),
    env: { ...common, ISSUER_ORIGIN: a.url, SERVICE_V1_BASE_URL: a.ctx.config.serviceBaseUrl! },
    exampleClaimsFile: '',
  });
  return {
    a,
    b,
    origin: a.url,
    ...(db ? { databaseUrl: db.url } : {}),
    close: async () => {
      await b.close();
      await a.close();
      await db?.drop();
    },
  };
}

interface Offer {
  offerId: string;
  offerUri: string;
  credentialOffer: { grants: Record<string, { 'pre-authorized_code': string }> };
  txCode?: string;
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function signed(key: HolderKey, header: Record<string, unknown>, payload: Record<string, unknown>): string {
  const input = `${b64(header)}.${b64(payload)}`;
  const signature = sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A DPoP proof (RFC 9449 §4.2) as a wallet makes it, with whatever a test overrides. */
function dpopProof(
  key: HolderKey,
  claims: { htu: string; htm?: string; accessToken?: string; iat?: number; jti?: string; nonce?: string },
): string {
  return signed(
    key,
    { typ: 'dpop+jwt', alg: 'ES256', jwk: key.publicJwk },
    {
      htm: claims.htm ?? 'POST',
      htu: claims.htu,
      iat: claims.iat ?? nowSeconds(),
      jti: claims.jti ?? randomUUID(),
      ...(claims.accessToken
        ? { ath: createHash('sha256').update(claims.accessToken).digest('base64url') }
        : {}),
      ...(claims.nonce ? { nonce: claims.nonce } : {}),
    },
  );
}

/** A credential request proof (OpenID4VCI 1.0 §8.2.1.1). */
const proofJwt = (key: HolderKey, payload: Record<string, unknown>) =>
  signed(key, { alg: 'ES256', typ: 'openid4vci-proof+jwt', jwk: key.publicJwk }, payload);

async function expectError(res: Response, status: number, error: string) {
  const body = (await res.json()) as { error: string; error_description: string };
  expect({ status: res.status, error: body.error }, body.error_description).toEqual({ status, error });
}

describe.each(engines)('the OpenID4VCI door on two instances (%s)', (engine) => {
  let pair: Pair;
  beforeAll(async () => {
    pair = await startPair(engine);
  }, 120_000);
  afterAll(async () => {
    await pair?.close();
  });

  const offer = async (body: Record<string, unknown> = {}): Promise<Offer> => {
    const res = await pair.a.admin('/admin/credential-offers', {
      schemaId: 'membership-v1',
      userId: 'demo-user-1',
      ...body,
    });
    expect(res.status).toBe(201);
    return (await res.json()) as Offer;
  };
  const codeOf = (o: Offer) => o.credentialOffer.grants[PRE_AUTH]!['pre-authorized_code'];
  const token = (on: TestIssuer, form: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${on.url}/oid4vci/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form).toString(),
    });
  const freshNonce = async (on: TestIssuer) =>
    ((await (await fetch(`${on.url}/oid4vci/nonce`, { method: 'POST' })).json()) as { c_nonce: string })
      .c_nonce;
  const credential = (on: TestIssuer, headers: Record<string, string>, jwt: string) =>
    fetch(`${on.url}/oid4vci/credential`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ credential_configuration_id: 'membership-v1', proofs: { jwt: [jwt] } }),
    });
  const tokenUrl = () => `${pair.origin}/oid4vci/token`;
  const credentialUrl = () => `${pair.origin}/oid4vci/credential`;
  const issuedCount = async () =>
    Number(
      (
        await queryStore<{ n: number | string }>(
          pair.a.ctx.store,
          "SELECT COUNT(*) AS n FROM issuances WHERE channel = 'oid4vci'",
        )
      )[0]!.n,
    );
  /** A DPoP-bound access token for a fresh offer, through A. */
  const boundToken = async (key: HolderKey): Promise<string> => {
    const res = await token(
      pair.a,
      { grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(await offer()) },
      { dpop: dpopProof(key, { htu: tokenUrl() }) },
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as { access_token: string; token_type: string };
    expect(body.token_type).toBe('DPoP');
    return body.access_token;
  };

  it('40 wrong transaction codes at once over both instances get five checks, lock the offer, and the right code is refused after', async () => {
    const o = await offer({ txCode: true });
    const wrong = (i: number) => String((Number(o.txCode) + 1 + i) % 1_000_000).padStart(6, '0');
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        token(i % 2 ? pair.b : pair.a, {
          grant_type: PRE_AUTH,
          'pre-authorized_code': codeOf(o),
          tx_code: wrong(i),
        }),
      ),
    );
    for (const res of answers) await expectError(res, 400, 'invalid_grant');
    const [row] = await queryStore<{ state: string; tx_code_attempts: number }>(
      pair.a.ctx.store,
      'SELECT state, tx_code_attempts FROM oid4vci_offers WHERE code_hash = ?',
      [createHash('sha256').update(codeOf(o)).digest('base64url')],
    );
    expect(row).toEqual({ state: 'locked', tx_code_attempts: 5 });
    for (const on of [pair.a, pair.b])
      await expectError(
        await token(on, { grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(o), tx_code: o.txCode! }),
        400,
        'invalid_grant',
      );
  });

  // The interleaving the finding saw on PostgreSQL, made certain: every guess is read and under
  // way before any of them is counted (the offer's row is held by another transaction meanwhile).
  it.runIf(engine === 'postgres')(
    'guesses that all read the offer before any is counted still get five checks between them',
    async () => {
      const o = await offer({ txCode: true });
      const codeHash = createHash('sha256').update(codeOf(o)).digest('base64url');
      const holder = new pg.Client({ connectionString: pair.databaseUrl! });
      // pg_stat_activity is read outside the holding transaction, which would see one snapshot of it.
      const watcher = new pg.Client({ connectionString: pair.databaseUrl! });
      await holder.connect();
      await watcher.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT 1 FROM oid4vci_offers WHERE code_hash = $1 FOR UPDATE', [codeHash]);
        const guesses = 12;
        const wrong = (i: number) => String((Number(o.txCode) + 1 + i) % 1_000_000).padStart(6, '0');
        const answers = Promise.all(
          Array.from({ length: guesses }, (_, i) =>
            token(i % 2 ? pair.b : pair.a, {
              grant_type: PRE_AUTH,
              'pre-authorized_code': codeOf(o),
              tx_code: wrong(i),
            }),
          ),
        );
        // Each guess waits on the held row with the write that would count it.
        await expect
          .poll(async () => {
            const { rows } = await watcher.query<{ n: string }>(
              `SELECT COUNT(*) AS n FROM pg_stat_activity
               WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE oid4vci_offers%'`,
            );
            return Number(rows[0]!.n);
          })
          .toBe(guesses);
        await holder.query('COMMIT');
        for (const res of await answers) await expectError(res, 400, 'invalid_grant');
      } finally {
        await holder.end();
        await watcher.end();
      }
      await expectError(
        await token(pair.a, { grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(o), tx_code: o.txCode! }),
        400,
        'invalid_grant',
      );
    },
  );

  it('the right transaction code still works after fewer than five wrong ones', async () => {
    const o = await offer({ txCode: true });
    const wrong = o.txCode === '000000' ? '111111' : '000000';
    const answers = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        token(i % 2 ? pair.b : pair.a, {
          grant_type: PRE_AUTH,
          'pre-authorized_code': codeOf(o),
          tx_code: wrong,
        }),
      ),
    );
    for (const res of answers) await expectError(res, 400, 'invalid_grant');
    const res = await token(pair.b, {
      grant_type: PRE_AUTH,
      'pre-authorized_code': codeOf(o),
      tx_code: o.txCode!,
    });
    expect(res.status).toBe(200);
  });

  // RFC 9449 §11.1: a DPoP proof an hour or a day old, or ahead, is refused.
  it('DPoP proofs outside the iat window are refused at the token and credential endpoints; the offer stays usable', async () => {
    const key = holderKey();
    const o = await offer();
    for (const iat of [nowSeconds() - 3600, nowSeconds() - 86_400, nowSeconds() + 3600])
      await expectError(
        await token(
          pair.a,
          { grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(o) },
          { dpop: dpopProof(key, { htu: tokenUrl(), iat }) },
        ),
        400,
        'invalid_dpop_proof',
      );
    const res = await token(
      pair.b,
      { grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(o) },
      { dpop: dpopProof(key, { htu: tokenUrl() }) },
    );
    expect(res.status).toBe(200);
    const { access_token: accessToken } = (await res.json()) as { access_token: string };
    const holder = holderKey();
    const before = await issuedCount();
    for (const iat of [nowSeconds() - 3600, nowSeconds() + 3600]) {
      const refused = await credential(
        pair.a,
        {
          authorization: `DPoP ${accessToken}`,
          dpop: dpopProof(key, { htu: credentialUrl(), accessToken, iat }),
        },
        proofJwt(holder, { aud: pair.origin, iat: nowSeconds(), nonce: await freshNonce(pair.a) }),
      );
      await expectError(refused, 401, 'invalid_dpop_proof');
      expect(refused.headers.get('www-authenticate')).toMatch(
        /^DPoP error="invalid_dpop_proof"|, DPoP error=/,
      );
    }
    // The credential request's jwt proof gets the same window.
    for (const iat of [nowSeconds() - 3600, nowSeconds() + 3600])
      await expectError(
        await credential(
          pair.b,
          {
            authorization: `DPoP ${accessToken}`,
            dpop: dpopProof(key, { htu: credentialUrl(), accessToken }),
          },
          proofJwt(holder, { aud: pair.origin, iat, nonce: await freshNonce(pair.b) }),
        ),
        400,
        'invalid_proof',
      );
    expect(await issuedCount()).toBe(before);
    const good = await credential(
      pair.a,
      { authorization: `DPoP ${accessToken}`, dpop: dpopProof(key, { htu: credentialUrl(), accessToken }) },
      proofJwt(holder, { aud: pair.origin, iat: nowSeconds(), nonce: await freshNonce(pair.a) }),
    );
    expect(good.status).toBe(200);
  });

  // RFC 9449 §11.1: each jti once, whichever instance saw it.
  it('a DPoP proof replayed on the other instance is refused: at the token endpoint, and for a credential bound to another key', async () => {
    const key = holderKey();
    const captured = dpopProof(key, { htu: tokenUrl() });
    const first = await token(
      pair.a,
      { grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(await offer()) },
      { dpop: captured },
    );
    expect(first.status).toBe(200);
    await expectError(
      await token(
        pair.b,
        { grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(await offer()) },
        { dpop: captured },
      ),
      400,
      'invalid_dpop_proof',
    );

    const accessToken = await boundToken(key);
    const victim = holderKey();
    const attacker = holderKey();
    const capturedAtCredential = dpopProof(key, { htu: credentialUrl(), accessToken });
    const before = await issuedCount();
    // The wallet's request is refused for its proof (a made-up nonce) after its DPoP proof passed.
    await expectError(
      await credential(
        pair.a,
        { authorization: `DPoP ${accessToken}`, dpop: capturedAtCredential },
        proofJwt(victim, { aud: pair.origin, iat: nowSeconds(), nonce: 'made-up' }),
      ),
      400,
      'invalid_nonce',
    );
    const replay = await credential(
      pair.b,
      { authorization: `DPoP ${accessToken}`, dpop: capturedAtCredential },
      proofJwt(attacker, { aud: pair.origin, iat: nowSeconds(), nonce: await freshNonce(pair.b) }),
    );
    await expectError(replay, 401, 'invalid_dpop_proof');
    expect(await issuedCount()).toBe(before);
    // The wallet's next request, with a proof of its own, gets the credential bound to its key.
    const good = await credential(
      pair.b,
      { authorization: `DPoP ${accessToken}`, dpop: dpopProof(key, { htu: credentialUrl(), accessToken }) },
      proofJwt(victim, { aud: pair.origin, iat: nowSeconds(), nonce: await freshNonce(pair.a) }),
    );
    expect(good.status).toBe(200);
    const { credentials } = (await good.json()) as { credentials: Array<{ credential: string }> };
    expect(
      (decodeJwt(credentials[0]!.credential.split('~')[0]!) as { cnf: { jwk: unknown } }).cnf.jwk,
    ).toEqual(victim.publicJwk);
  });

  // RFC 6750 §3: error_description holds %x20-21 / %x23-5B / %x5D-7E only.
  it('WWW-Authenticate carries only the server’s words: a quote or a non-Latin-1 character in the proof changes nothing', async () => {
    const key = holderKey();
    const accessToken = await boundToken(key);
    for (const htu of [`${pair.origin}/x", error="forged`, `${pair.origin}/caf\u00e9\u4e2d`]) {
      const res = await credential(
        pair.a,
        { authorization: `DPoP ${accessToken}`, dpop: dpopProof(key, { htu, accessToken }) },
        proofJwt(key, { aud: pair.origin, iat: nowSeconds(), nonce: await freshNonce(pair.a) }),
      );
      await expectError(res, 401, 'invalid_dpop_proof');
      const challenge = res.headers.get('www-authenticate')!;
      expect(challenge).toMatch(/^[\x20-\x7e]+$/);
      expect(challenge).not.toContain('forged');
      expect(challenge).not.toContain('/x');
      // Each scheme's parameters, quoted values without a quote inside.
      expect(challenge).toMatch(
        /^Bearer error="invalid_dpop_proof", error_description="[^"\\]*", DPoP error="invalid_dpop_proof", error_description="[^"\\]*", algs="ES256"$/,
      );
    }
  });
});

// RFC 9449 §8 and §9, OID4VCI_DPOP_NONCE=required.
describe.each(engines)('OID4VCI_DPOP_NONCE=required on two instances (%s)', (engine) => {
  let pair: Pair;
  beforeAll(async () => {
    pair = await startPair(engine, { OID4VCI_DPOP_NONCE: 'required' });
  }, 120_000);
  afterAll(async () => {
    await pair?.close();
  });

  const offer = async (): Promise<Offer> => {
    const res = await pair.a.admin('/admin/credential-offers', {
      schemaId: 'membership-v1',
      userId: 'demo-user-1',
    });
    expect(res.status).toBe(201);
    return (await res.json()) as Offer;
  };
  const codeOf = (o: Offer) => o.credentialOffer.grants[PRE_AUTH]!['pre-authorized_code'];

  it('a proof without the server’s nonce is answered use_dpop_nonce with one; the other instance accepts it', async () => {
    const key = holderKey();
    const form = new URLSearchParams({ grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(await offer()) });
    const tokenAt = (on: TestIssuer, dpop: string) =>
      fetch(`${on.url}/oid4vci/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', dpop },
        body: form.toString(),
      });
    const htu = `${pair.origin}/oid4vci/token`;
    for (const nonce of [undefined, 'made-up']) {
      const asked = await tokenAt(pair.a, dpopProof(key, { htu, nonce }));
      await expectError(asked, 400, 'use_dpop_nonce');
      expect(asked.headers.get('dpop-nonce')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    }
    const asked = await tokenAt(pair.a, dpopProof(key, { htu }));
    const nonce = asked.headers.get('dpop-nonce')!;
    const res = await tokenAt(pair.b, dpopProof(key, { htu, nonce }));
    expect(res.status).toBe(200);
    const { access_token: accessToken } = (await res.json()) as { access_token: string };
    const next = res.headers.get('dpop-nonce');
    expect(next).toMatch(/^[A-Za-z0-9_-]{20,}$/);

    // The credential endpoint: 401 with a DPoP use_dpop_nonce challenge (§9), then the nonce given.
    const holder = holderKey();
    const credentialAt = async (on: TestIssuer, dpopNonce?: string) => {
      const cNonce = (
        (await (await fetch(`${on.url}/oid4vci/nonce`, { method: 'POST' })).json()) as {
          c_nonce: string;
        }
      ).c_nonce;
      return fetch(`${on.url}/oid4vci/credential`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `DPoP ${accessToken}`,
          dpop: dpopProof(key, {
            htu: `${pair.origin}/oid4vci/credential`,
            accessToken,
            ...(dpopNonce ? { nonce: dpopNonce } : {}),
          }),
        },
        body: JSON.stringify({
          credential_configuration_id: 'membership-v1',
          proofs: { jwt: [proofJwt(holder, { aud: pair.origin, iat: nowSeconds(), nonce: cNonce })] },
        }),
      });
    };
    const refused = await credentialAt(pair.b);
    await expectError(refused, 401, 'use_dpop_nonce');
    expect(refused.headers.get('www-authenticate')).toMatch(/^DPoP error="use_dpop_nonce", /);
    const given = refused.headers.get('dpop-nonce')!;
    expect(given).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    const issued = await credentialAt(pair.a, given);
    expect(issued.status).toBe(200);
  });

  it('the @openid4vc/openid4vci wallet retries with the nonce by itself; a wallet without DPoP is not asked', async () => {
    const withDpop = await receiveWithOpenid4vci((await offer()).offerUri, { dpop: holderKey() });
    expect((await verifySdJwtVc(pair.origin, withDpop.credential)).claims).toMatchObject({
      givenName: 'Alice',
    });
    const bearer = await receiveWithOpenid4vci((await offer()).offerUri);
    expect((await verifySdJwtVc(pair.origin, bearer.credential)).claims).toMatchObject({
      givenName: 'Alice',
    });
  });
});
