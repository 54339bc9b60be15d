import { generateKeyPairSync } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { IssuerMetadataResult, Openid4vciClient } from '@openid4vc/openid4vci';
import { CompactEncrypt, compactDecrypt, importJWK, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { queryStore, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import {
  type HolderKey,
  holderKey,
  openid4vciWallet,
  proofJwt,
  sdJwtMembershipSchemas,
} from '../helpers/oid4vci-wallet.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';
import { type WebhookReceiver, webhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * Deferred issuance (OpenID4VCI 1.0 §9) and notifications (§11) over HTTP on loopback, driven by
 * the `@openid4vc/openid4vci` wallet client against an http claims provider this test controls:
 * the provider answers "pending" until the test releases the claims (or an admin supplies them),
 * the wallet polls the deferred credential endpoint, and the credential it finally receives
 * verifies with `@sd-jwt/sd-jwt-vc`. The wallet's notifications show in the audit trail and as
 * Standard Webhooks events verified with the `standardwebhooks` package. Both engines.
 */

const postgres = await postgresAvailable('OpenID4VCI deferred issuance on PostgreSQL');
const engines = postgres ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);
const KEK = Buffer.alloc(32, 7).toString('base64');

const READY = {
  givenName: 'Dana',
  familyName: 'Ortiz',
  memberSince: '2020-01-01',
  tier: 'gold',
  memberNumber: 7,
};

/** The claims source: per user, pending (with its retryAfterSeconds) or the claims. */
async function claimsSource() {
  const answers = new Map<string, Record<string, unknown>>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { userId } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { userId: string };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answers.get(userId) ?? { eligible: false }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/claims`,
    pending: (userId: string) => answers.set(userId, { eligible: true, pending: true, retryAfterSeconds: 2 }),
    release: (userId: string) => answers.set(userId, { eligible: true, credentialSubject: READY }),
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}

function writeSchemas(dir: string, claimsUrl: string): string {
  const schemas = join(dir, 'schemas');
  const schema = JSON.parse(readFileSync('schemas/membership-v1.json', 'utf8'));
  schema.proofTypes = ['SD_JWT_VC'];
  delete schema.iden3;
  schema.claims = { provider: 'http', url: claimsUrl, timeoutMs: 60_000 };
  mkdirSync(schemas, { recursive: true });
  writeFileSync(join(schemas, 'membership-v1.json'), JSON.stringify(schema));
  return schemas;
}

/** A wallet through the credential request: its token, metadata and the credential endpoint's answer. */
async function request(issuer: TestIssuer, userId: string, holder: HolderKey = holderKey()) {
  const res = await issuer.admin('/admin/credential-offers', { schemaId: 'membership-v1', userId });
  expect(res.status, await res.clone().text()).toBe(201);
  const { offerUri } = (await res.json()) as { offerUri: string };
  const wallet = openid4vciWallet([holder]);
  const credentialOffer = await wallet.resolveCredentialOffer(offerUri);
  const issuerMetadata = await wallet.resolveIssuerMetadata(credentialOffer.credential_issuer);
  const { accessTokenResponse } = await wallet.retrievePreAuthorizedCodeAccessTokenFromOffer({
    credentialOffer,
    issuerMetadata,
  });
  const accessToken = accessTokenResponse.access_token;
  const { c_nonce } = await wallet.requestNonce({ issuerMetadata });
  const { jwt } = await wallet.createCredentialRequestJwtProof({
    issuerMetadata,
    signer: holder.signer,
    nonce: c_nonce,
    credentialConfigurationId: 'membership-v1',
  });
  const { credentialResponse, response } = await wallet.retrieveCredentials({
    issuerMetadata,
    accessToken,
    credentialConfigurationId: 'membership-v1',
    proofs: { jwt: [jwt] },
  });
  return { wallet, issuerMetadata, accessToken, credentialResponse, status: response.status, holder };
}

const poll = (
  s: { wallet: Openid4vciClient; issuerMetadata: IssuerMetadataResult; accessToken: string },
  transactionId: string,
) =>
  s.wallet.retrieveDeferredCredentials({
    issuerMetadata: s.issuerMetadata,
    accessToken: s.accessToken,
    transactionId,
  });

/** The deferred credential endpoint called by hand (a hostile or confused wallet). */
async function rawPoll(issuer: TestIssuer, accessToken: string, body: unknown) {
  const res = await fetch(`${issuer.url}/oid4vci/deferred-credential`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function rawNotify(issuer: TestIssuer, accessToken: string, body: unknown) {
  const res = await fetch(`${issuer.url}/oid4vci/notification`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    body: res.status === 204 ? undefined : ((await res.json()) as { error?: string }),
  };
}

async function issuedCount(issuer: TestIssuer, credentialId: string): Promise<number> {
  const rows = await queryStore<{ n: number | string }>(
    issuer.ctx.store,
    'SELECT COUNT(*) AS n FROM issuances WHERE credential_id = ?',
    [credentialId],
  );
  return Number(rows[0]!.n);
}

describe.each(engines)('OpenID4VCI deferred issuance and notifications (%s)', (engine) => {
  let issuer: TestIssuer;
  let source: Awaited<ReturnType<typeof claimsSource>>;
  let hooks: WebhookReceiver;
  let db: TempDatabase | undefined;

  beforeAll(async () => {
    source = await claimsSource();
    hooks = await webhookReceiver();
    const dir = tempDir();
    // Request encryption offered (not required): one test sends its requests encrypted.
    const requestKey = join(dir, 'request-encryption.pem');
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(requestKey, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
    const env: Record<string, string> = {
      OID4VCI: 'on',
      OID4VCI_REQUEST_ENCRYPTION_KEY_FILE: requestKey,
      SCHEMAS_DIR: writeSchemas(dir, source.url),
    };
    if (engine === 'postgres') {
      db = await createMigratedDatabase();
      Object.assign(env, { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY: KEK });
    } else env.DATABASE_URL = `sqlite:${join(dir, 'issuer.db')}`;
    issuer = await startIssuer({
      dir,
      env,
      exampleClaimsFile: '',
      context: { webhooks: { baseBackoffMs: 5, maxBackoffMs: 20, sweepMs: 20 } },
    });
    const added = await issuer.admin('/admin/webhooks', { url: hooks.url, events: ['*'] });
    expect(added.status).toBe(201);
    hooks.setSecret(((await added.json()) as { secret: string }).secret);
  }, 120_000);
  afterAll(async () => {
    await issuer?.close();
    await source?.close();
    await hooks?.close();
    await db?.drop();
  });

  /** The signed event of `type` whose data `where` accepts (by default: about `credentialId`), once it arrived. */
  async function event(
    type: string,
    credentialId: string,
    where = (data: Record<string, unknown>) => data.credentialId === credentialId,
  ) {
    const match = () => hooks.attempts.find((a) => a.type === type && where(a.data));
    await hooks.until(() => match() !== undefined);
    const found = match()!;
    expect(found.valid).toBe(true);
    return found.data;
  }

  it('publishes the deferred credential and notification endpoints', async () => {
    const meta = (await (await fetch(`${issuer.url}/.well-known/openid-credential-issuer`)).json()) as Record<
      string,
      unknown
    >;
    expect(meta).toMatchObject({
      deferred_credential_endpoint: `${issuer.url}/oid4vci/deferred-credential`,
      notification_endpoint: `${issuer.url}/oid4vci/notification`,
    });
  });

  it('defers while the provider says pending, and serves the credential once it releases the claims', async () => {
    source.pending(`${engine}-late`);
    const s = await request(issuer, `${engine}-late`);
    expect(s.status).toBe(202);
    const transactionId = s.credentialResponse.transaction_id!;
    expect(s.credentialResponse).toEqual({ transaction_id: expect.any(String), interval: 2 });
    const holderDid = `did:jwk:${Buffer.from(JSON.stringify(s.holder.publicJwk)).toString('base64url')}`;
    const deferred = await event('credential.deferred', '', (data) => data.holderDid === holderDid);
    const credentialId = String(deferred.credentialId);
    // Exactly its listed fields (src/events/catalogue.ts): no claim value, key or token.
    expect(deferred).toEqual({
      credentialId: expect.any(String),
      schemaId: 'membership-v1',
      channel: 'oid4vci',
      holderDid,
      transactionExpiresAt: expect.any(String),
      interval: 2,
    });
    expect(await issuedCount(issuer, credentialId)).toBe(0);

    // Still pending: 202 again, the same transaction.
    const again = await poll(s, transactionId);
    expect(again.response.status).toBe(202);
    expect(again.deferredCredentialResponse).toEqual({ transaction_id: transactionId, interval: 2 });

    source.release(`${engine}-late`);
    // By hand: the wallet library (0.4.6) refuses a deferred response carrying notification_id
    // beside credentials, which OpenID4VCI 1.0 §9.2 allows (@openid4vc/openid4vci 0.4.6 checks the reverse).
    const done = await rawPoll(issuer, s.accessToken, { transaction_id: transactionId });
    expect(done.status).toBe(200);
    const { credentials, notification_id } = done.body as {
      credentials: Array<{ credential: string }>;
      notification_id: string;
    };
    expect(notification_id).toEqual(expect.any(String));
    const verified = await verifySdJwtVc(issuer.url, credentials[0]!.credential);
    expect(verified.claims).toMatchObject({ givenName: 'Dana', tier: 'gold' });
    expect((verified.payload as { cnf: { jwk: unknown } }).cnf.jwk).toEqual(s.holder.publicJwk);
    expect(await event('credential.issued', credentialId)).toMatchObject({ channel: 'oid4vci' });

    // Used: a second poll is refused and nothing is signed twice.
    expect(await rawPoll(issuer, s.accessToken, { transaction_id: transactionId })).toMatchObject({
      status: 400,
      body: { error: 'invalid_transaction_id' },
    });
    expect(await issuedCount(issuer, credentialId)).toBe(1);
  });

  it('serves an admin’s claims at the next poll (the provider still pending)', async () => {
    source.pending(`${engine}-pushed`);
    const s = await request(issuer, `${engine}-pushed`);
    expect(s.status).toBe(202);
    const rows = await queryStore<{ credential_id: string }>(
      issuer.ctx.store,
      "SELECT credential_id FROM oid4vci_offers WHERE state = 'deferred' AND user_id = ?",
      [`${engine}-pushed`],
    );
    const credentialId = rows[0]!.credential_id;
    const path = `/admin/deferred-credentials/${credentialId}/claims`;
    expect((await issuer.admin(path, { claims: { ...READY, tier: 7 } })).status).toBe(422);
    const unknown = await issuer.admin(
      '/admin/deferred-credentials/00000000-0000-4000-8000-000000000000/claims',
      {
        claims: READY,
      },
    );
    expect(unknown.status).toBe(404);
    const supplied = await issuer.admin(path, {
      claims: { ...READY, givenName: 'Pushed' },
      reason: 'back office',
    });
    expect(supplied.status, await supplied.clone().text()).toBe(200);
    expect(await supplied.json()).toMatchObject({ credentialId });

    const done = await rawPoll(issuer, s.accessToken, {
      transaction_id: s.credentialResponse.transaction_id,
    });
    expect(done.status).toBe(200);
    const credential = (done.body as { credentials: Array<{ credential: string }> }).credentials[0]!
      .credential;
    expect((await verifySdJwtVc(issuer.url, credential)).claims).toMatchObject({ givenName: 'Pushed' });
    // The claims can no longer be supplied: the transaction is used.
    expect((await issuer.admin(path, { claims: READY })).status).toBe(404);
  });

  it('refuses an unknown, another wallet’s, expired or missing transaction_id', async () => {
    source.pending(`${engine}-a`);
    source.pending(`${engine}-b`);
    const a = await request(issuer, `${engine}-a`);
    const b = await request(issuer, `${engine}-b`);
    const refused = { status: 400, body: { error: 'invalid_transaction_id' } };
    expect(await rawPoll(issuer, a.accessToken, { transaction_id: 'nope' })).toMatchObject(refused);
    // B's transaction with A's access token.
    expect(
      await rawPoll(issuer, a.accessToken, { transaction_id: b.credentialResponse.transaction_id }),
    ).toMatchObject(refused);
    expect((await rawPoll(issuer, a.accessToken, {})).status).toBe(400);
    expect((await rawPoll(issuer, 'not-a-token', { transaction_id: 'x' })).status).toBe(401);
    // Lapsed: the transaction's expiry put in the past, as time would.
    await queryStore(
      issuer.ctx.store,
      "UPDATE oid4vci_offers SET transaction_expires_at = 1 WHERE user_id = ? AND state = 'deferred'",
      [`${engine}-b`],
    );
    source.release(`${engine}-b`);
    expect(
      await rawPoll(issuer, b.accessToken, { transaction_id: b.credentialResponse.transaction_id }),
    ).toMatchObject(refused);
    const lapsed = await queryStore<{ credential_id: string }>(
      issuer.ctx.store,
      'SELECT credential_id FROM oid4vci_offers WHERE user_id = ?',
      [`${engine}-b`],
    );
    expect(await issuedCount(issuer, lapsed[0]!.credential_id)).toBe(0);
  });

  it('records a notification once in the audit trail and sends it as a signed webhook', async () => {
    source.release(`${engine}-now`);
    const s = await request(issuer, `${engine}-now`);
    expect(s.status).toBe(200);
    const notificationId = s.credentialResponse.notification_id!;
    expect(notificationId).toEqual(expect.any(String));
    const notify = (event: 'credential_accepted' | 'credential_deleted', eventDescription?: string) =>
      s.wallet.sendNotification({
        issuerMetadata: s.issuerMetadata,
        accessToken: s.accessToken,
        notification: { notificationId, event, ...(eventDescription ? { eventDescription } : {}) },
      });
    expect((await notify('credential_accepted', 'stored in wallet')).response.status).toBe(204);
    // The same event again: acknowledged, not recorded twice.
    expect((await notify('credential_accepted', 'stored in wallet')).response.status).toBe(204);

    const credentialId = String(
      (
        await queryStore<{ credential_id: string }>(
          issuer.ctx.store,
          'SELECT credential_id FROM oid4vci_offers WHERE user_id = ?',
          [`${engine}-now`],
        )
      )[0]!.credential_id,
    );
    expect(await event('credential.wallet_accepted', credentialId)).toEqual({
      credentialId,
      schemaId: 'membership-v1',
      eventDescription: 'stored in wallet',
    });
    const audit = (await (await issuer.admin('/admin/audit?action=oid4vci.notification')).json()) as {
      data: Array<{ actor: string; target: string; reason: string }>;
    };
    expect(audit.data.filter((r) => r.target === credentialId)).toEqual([
      expect.objectContaining({ actor: 'wallet', reason: 'credential_accepted: stored in wallet' }),
    ]);

    expect((await notify('credential_deleted')).response.status).toBe(204);
    expect(await event('credential.wallet_deleted', credentialId)).toEqual({
      credentialId,
      schemaId: 'membership-v1',
    });

    expect(
      await rawNotify(issuer, s.accessToken, { notification_id: 'unknown', event: 'credential_accepted' }),
    ).toMatchObject({ status: 400, body: { error: 'invalid_notification_id' } });
    expect(
      await rawNotify(issuer, s.accessToken, { notification_id: notificationId, event: 'credential_lost' }),
    ).toMatchObject({ status: 400, body: { error: 'invalid_notification_request' } });
    expect(await rawNotify(issuer, s.accessToken, { event: 'credential_accepted' })).toMatchObject({
      status: 400,
      body: { error: 'invalid_notification_request' },
    });
    const rows = await queryStore<{ n: number | string }>(
      issuer.ctx.store,
      "SELECT COUNT(*) AS n FROM audit_log WHERE action = 'oid4vci.notification' AND target = ?",
      [credentialId],
    );
    expect(Number(rows[0]!.n)).toBe(2);
  });

  it('encrypted requests (§10) at both endpoints: the 202 and each poll answered as JWEs, the credential once released', async () => {
    const userId = `${engine}-sealed`;
    source.pending(userId);
    const meta = (await (await fetch(`${issuer.url}/.well-known/openid-credential-issuer`)).json()) as {
      credential_request_encryption: { jwks: { keys: JWK[] } };
    };
    const issuerKey = await importJWK(meta.credential_request_encryption.jwks.keys[0]!, 'ECDH-ES');
    const wallet = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const walletJwk = wallet.publicKey.export({ format: 'jwk' });
    /** The request as the wallet sends it: JSON encrypted with jose to the issuer's key, asking for an encrypted answer. */
    const sealed = async (path: string, accessToken: string, body: Record<string, unknown>) => {
      const jwe = await new CompactEncrypt(
        new TextEncoder().encode(
          JSON.stringify({ ...body, credential_response_encryption: { jwk: walletJwk, enc: 'A128GCM' } }),
        ),
      )
        .setProtectedHeader({ alg: 'ECDH-ES', enc: 'A256GCM' })
        .encrypt(issuerKey);
      const res = await fetch(`${issuer.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/jwt', authorization: `Bearer ${accessToken}` },
        body: jwe,
      });
      expect(res.headers.get('content-type'), await res.clone().text()).toBe('application/jwt');
      const { plaintext } = await compactDecrypt(await res.text(), wallet.privateKey);
      return {
        status: res.status,
        body: JSON.parse(new TextDecoder().decode(plaintext)) as Record<string, any>,
      };
    };

    const offered = await issuer.admin('/admin/credential-offers', { schemaId: 'membership-v1', userId });
    const { credentialOffer } = (await offered.json()) as {
      credentialOffer: { grants: Record<string, { 'pre-authorized_code': string }> };
    };
    const grant = 'urn:ietf:params:oauth:grant-type:pre-authorized_code';
    const token = await fetch(`${issuer.url}/oid4vci/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: grant,
        'pre-authorized_code': credentialOffer.grants[grant]!['pre-authorized_code'],
      }).toString(),
    });
    const { access_token: accessToken } = (await token.json()) as { access_token: string };
    const holder = holderKey();
    const nonce = (
      (await (await fetch(`${issuer.url}/oid4vci/nonce`, { method: 'POST' })).json()) as {
        c_nonce: string;
      }
    ).c_nonce;
    const deferred = await sealed('/oid4vci/credential', accessToken, {
      credential_configuration_id: 'membership-v1',
      proofs: { jwt: [proofJwt(holder, { aud: issuer.url, iat: Math.floor(Date.now() / 1000), nonce })] },
    });
    expect(deferred.status).toBe(202);
    const transactionId = deferred.body.transaction_id as string;
    expect(transactionId).toEqual(expect.any(String));

    const stillPending = await sealed('/oid4vci/deferred-credential', accessToken, {
      transaction_id: transactionId,
    });
    expect({ status: stillPending.status, transactionId: stillPending.body.transaction_id }).toEqual({
      status: 202,
      transactionId,
    });
    source.release(userId);
    const done = await sealed('/oid4vci/deferred-credential', accessToken, { transaction_id: transactionId });
    expect(done.status).toBe(200);
    const verified = await verifySdJwtVc(issuer.url, done.body.credentials[0].credential);
    expect((verified.payload as Record<string, any>).cnf.jwk).toEqual(holder.publicJwk);
    expect(verified.claims).toMatchObject({ givenName: 'Dana', memberNumber: 7 });
  });

  it('a credential_failure notification is recorded and delivered as a signed credential.wallet_failure event', async () => {
    source.release(`${engine}-failed`);
    const s = await request(issuer, `${engine}-failed`);
    expect(s.status).toBe(200);
    const notificationId = s.credentialResponse.notification_id!;
    const sent = await s.wallet.sendNotification({
      issuerMetadata: s.issuerMetadata,
      accessToken: s.accessToken,
      notification: {
        notificationId,
        event: 'credential_failure',
        eventDescription: 'could not store the key',
      },
    });
    expect(sent.response.status).toBe(204);

    const credentialId = String(
      (
        await queryStore<{ credential_id: string }>(
          issuer.ctx.store,
          'SELECT credential_id FROM oid4vci_offers WHERE user_id = ?',
          [`${engine}-failed`],
        )
      )[0]!.credential_id,
    );
    expect(await event('credential.wallet_failure', credentialId)).toEqual({
      credentialId,
      schemaId: 'membership-v1',
      eventDescription: 'could not store the key',
    });
    const audit = (await (await issuer.admin('/admin/audit?action=oid4vci.notification')).json()) as {
      data: Array<{ actor: string; target: string; reason: string }>;
    };
    expect(audit.data.filter((r) => r.target === credentialId)).toEqual([
      expect.objectContaining({ actor: 'wallet', reason: 'credential_failure: could not store the key' }),
    ]);
    // The wallet reported a failure: the credential itself stays as issued (valid, not revoked).
    const [row] = await queryStore<{ status: number | string }>(
      issuer.ctx.store,
      'SELECT status FROM issuances WHERE credential_id = ?',
      [credentialId],
    );
    expect(Number(row!.status)).toBe(0);
  });
});

describe('OID4VCI_NOTIFICATIONS=off', () => {
  let issuer: TestIssuer;
  beforeAll(async () => {
    const dir = tempDir();
    issuer = await startIssuer({
      dir,
      env: { OID4VCI: 'on', OID4VCI_NOTIFICATIONS: 'off', SCHEMAS_DIR: sdJwtMembershipSchemas(dir) },
    });
  }, 120_000);
  afterAll(async () => {
    await issuer?.close();
  });

  it('has no notification endpoint, in the metadata or served, and no notification_id', async () => {
    const meta = (await (await fetch(`${issuer.url}/.well-known/openid-credential-issuer`)).json()) as Record<
      string,
      unknown
    >;
    expect(meta).not.toHaveProperty('notification_endpoint');
    expect(meta).toHaveProperty('deferred_credential_endpoint');
    const s = await request(issuer, 'demo-user-1');
    expect(s.status).toBe(200);
    expect(s.credentialResponse).not.toHaveProperty('notification_id');
    expect(s.credentialResponse.credentials).toHaveLength(1);
    const res = await fetch(`${issuer.url}/oid4vci/notification`, { method: 'POST' });
    expect(res.status).toBe(404);
  });
});
