import { once } from 'node:events';
import { cpSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { x25519DidKey } from '../../src/development/emulator/did-key.js';
import { openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import { generateEncodedKeyPair } from '../../src/envelope/keys.js';
import { credentialIdFor } from '../../src/issuance/direct-issuance.js';
import { renewalKey } from '../../src/issuance/renewal.js';
import { holderKey } from '../fixtures/status.js';
import { runCli } from '../helpers/cli.js';
import { expectError } from '../helpers/errors.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import {
  queryStore,
  removeDir,
  startIssuer,
  TEST_ADMIN_API_KEY,
  type TestIssuer,
  tempDir,
} from '../helpers/issuer.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

// docs/operations.md "Renewal": the sweep and POST /admin/renew, through the real app, the
// emulator (which keeps the envelopes it stores) and an independent SD-JWT VC verifier.

const DAY = 86_400_000;
const inDays = (days: number) => new Date(Date.now() + days * DAY).toISOString().replace(/\.\d{3}Z$/, 'Z');
let counter = 0;
const nextEmail = () => `renewal.${Date.now()}.${counter++}@example.org`;

/** Two schemas that declare renewal within 30 days; the second revokes the previous credential. */
function renewalSchemas(work: string): string {
  const schemas = join(work, 'schemas');
  cpSync(resolve('schemas'), schemas, { recursive: true });
  const schema = (schemaId: string, revokePrevious: boolean) => ({
    schemaId,
    proofTypes: ['SD_JWT_VC'],
    expiresInSeconds: 31_536_000,
    credentialSubject: {
      type: 'object',
      properties: { name: { type: 'string' }, tier: { type: 'string' } },
      required: ['name'],
    },
    claims: { provider: 'sqlite' },
    sdJwt: { vct: `urn:vct:${schemaId}` },
    renewal: { beforeExpirySeconds: 30 * 86_400, revokePrevious },
  });
  writeFileSync(join(schemas, 'renewing.json'), JSON.stringify(schema('renewing-v1', false)));
  writeFileSync(join(schemas, 'renewing-revoke.json'), JSON.stringify(schema('renewing-revoke-v1', true)));
  return schemas;
}

interface HistoryRow {
  credentialId: string;
  status: string;
  renewedFrom: string | null;
  renewedBy: string | null;
}

async function historyRow(issuer: TestIssuer, credentialId: string): Promise<HistoryRow | undefined> {
  const rows: HistoryRow[] = [];
  let cursor: string | null = null;
  do {
    const res = await issuer.admin(
      `/admin/issuance-history?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    const page = (await res.json()) as { data: HistoryRow[]; pagination: { nextCursor: string | null } };
    rows.push(...page.data);
    cursor = page.pagination.nextCursor;
  } while (cursor);
  return rows.find((r) => r.credentialId === credentialId);
}

async function setClaims(
  issuer: TestIssuer,
  userId: string,
  schemaId: string,
  claims: Record<string, unknown>,
  expiresAt: Date | null = null,
) {
  await issuer.ctx.store.claims.upsertClaims([{ userId, schemaId, claims, expiresAt }]);
}

async function issueDirect(issuer: TestIssuer, body: Record<string, unknown>): Promise<string> {
  const res = await issuer.admin('/admin/issue-vc', { vct: 'urn:vct:x', ...body });
  expect(res.status).toBe(201);
  return ((await res.json()) as { credentialId: string }).credentialId;
}

/** The credential the emulator stored, opened with the key of the holder `email` resolves to, and verified. */
async function openedAndVerified(issuer: TestIssuer, email: string, credentialId: string) {
  const holder = issuer.emulator!.state.holderByEmail(email)!;
  const stored = issuer.emulator!.state.envelopes.get(credentialId)!;
  const compact = openEnvelope(privateKeyFromPkcs8Hex(holder.privateKeyPkcs8Hex), stored.envelope) as string;
  return verifySdJwtVc(issuer.url, compact);
}

const auditRows = (issuer: TestIssuer, action: string, target: string) =>
  queryStore<{ actor: string; reason: string | null }>(
    issuer.ctx.store,
    'SELECT actor, reason FROM audit_log WHERE action = ? AND target = ?',
    [action, target],
  );

/**
 * A credential of `renewing-revoke-v1` whose renewal was cut short right after its new credential was recorded:
 * the renewing credential recorded under the renewal's key, the previous one still valid, no
 * outcome, no `renew` audit row, no event (what a crash right after step 3 leaves).
 */
async function cutShort(issuer: TestIssuer, userId: string, expiresInDays: number) {
  await setClaims(issuer, userId, 'renewing-revoke-v1', { name: userId });
  const email = nextEmail();
  const old = await issueDirect(issuer, {
    userId: email,
    schemaId: 'renewing-revoke-v1',
    expiration: inDays(expiresInDays),
    claimsUserId: userId,
  });
  const cut = await issuer.ctx.direct.issue({
    claimsUserId: userId,
    email,
    schemaId: 'renewing-revoke-v1',
    vct: 'urn:vct:renewing-revoke-v1',
    expiresAt: new Date(Date.now() + 300 * DAY),
    onDuplicate: 'allow',
    idempotencyKey: renewalKey(old),
    renewedFrom: old,
  });
  return { old, renewedBy: cut.record.credentialId };
}

describe('renewal on one instance', () => {
  let issuer: TestIssuer;
  let work: string;

  beforeAll(async () => {
    work = tempDir();
    issuer = await startIssuer({
      env: { SCHEMAS_DIR: renewalSchemas(work) },
      exampleClaimsFile: '',
      // The sweep runs when the test calls it, not on a timer.
      context: { renewal: { sweepMs: 3_600_000 } },
    });
    // Events are recorded while an endpoint exists (nothing listens: only the event table is read).
    await issuer.ctx.webhooks.add({ url: 'http://127.0.0.1:9/hook', events: ['credential.renewed'] });
  });
  afterAll(async () => {
    await issuer?.close();
    removeDir(work);
  });

  it('the sweep renews a credential inside the window once, with the claims the provider has now', async () => {
    await setClaims(issuer, 'sweep-u1', 'renewing-v1', { name: 'Ada', tier: 'gold' });
    const email = nextEmail();
    const due = await issueDirect(issuer, {
      userId: email,
      schemaId: 'renewing-v1',
      expiration: inDays(10),
      claimsUserId: 'sweep-u1',
    });
    const later = await issueDirect(issuer, {
      userId: nextEmail(),
      schemaId: 'renewing-v1',
      expiration: inDays(60),
      claimsUserId: 'sweep-u1',
    });
    await setClaims(issuer, 'sweep-u1', 'renewing-v1', { name: 'Ada', tier: 'platinum' });

    const report = await issuer.ctx.renewal.sweep();
    expect(report).toMatchObject({ ran: true, renewed: 1, failed: 0 });
    const old = await historyRow(issuer, due);
    expect(old).toMatchObject({ status: 'valid', renewedFrom: null });
    const renewedBy = old!.renewedBy!;
    expect(await historyRow(issuer, renewedBy)).toMatchObject({
      status: 'valid',
      renewedFrom: due,
      renewedBy: null,
    });
    expect(await historyRow(issuer, later)).toMatchObject({ renewedBy: null });

    const verified = await openedAndVerified(issuer, email, renewedBy);
    expect(verified.claims).toMatchObject({ name: 'Ada', tier: 'platinum' });
    expect(new Date((verified.claims.exp as number) * 1000).getTime()).toBeGreaterThan(
      Date.now() + 300 * DAY,
    );

    expect(await auditRows(issuer, 'renew', due)).toEqual([
      { actor: 'renewal-sweep', reason: 'renewal sweep' },
    ]);
    const events = await queryStore<{ data: string }>(
      issuer.ctx.store,
      "SELECT data FROM webhook_events WHERE type = 'credential.renewed'",
    );
    expect(events.map((e) => JSON.parse(e.data))).toContainEqual({
      credentialId: renewedBy,
      renewedFrom: due,
      schemaId: 'renewing-v1',
    });

    // Not again: the next sweep finds nothing to do, and one credential renews `due`.
    expect(await issuer.ctx.renewal.sweep()).toMatchObject({ renewed: 0, skipped: 0, failed: 0 });
    const renewing = await queryStore(
      issuer.ctx.store,
      'SELECT credential_id FROM issuances WHERE renewed_from = ?',
      [due],
    );
    expect(renewing).toHaveLength(1);
  });

  it('a holder the provider no longer finds eligible is skipped and recorded, once', async () => {
    await setClaims(issuer, 'sweep-gone', 'renewing-v1', { name: 'Bo' });
    const due = await issueDirect(issuer, {
      userId: nextEmail(),
      schemaId: 'renewing-v1',
      expiration: inDays(5),
      claimsUserId: 'sweep-gone',
    });
    // The claims source's expiry in the past: no longer eligible.
    await setClaims(issuer, 'sweep-gone', 'renewing-v1', { name: 'Bo' }, new Date(Date.now() - DAY));

    expect(await issuer.ctx.renewal.sweep()).toMatchObject({ renewed: 0, skipped: 1, failed: 0 });
    expect(await historyRow(issuer, due)).toMatchObject({ status: 'valid', renewedBy: null });
    expect(await issuer.ctx.store.renewals.get(due)).toMatchObject({ outcome: 'ineligible' });
    const audit = await auditRows(issuer, 'renewal.skipped', due);
    expect(audit).toHaveLength(1);
    expect(audit[0]!.actor).toBe('renewal-sweep');
    expect(await issuer.ctx.renewal.sweep()).toMatchObject({ renewed: 0, skipped: 0 });
  });

  it('a credential with no sealed recipient (issued before renewal) is recorded not renewable once', async () => {
    await setClaims(issuer, 'sweep-old', 'renewing-v1', { name: 'Cy' });
    const due = await issueDirect(issuer, {
      userId: nextEmail(),
      schemaId: 'renewing-v1',
      expiration: inDays(3),
      claimsUserId: 'sweep-old',
    });
    const sealed = await issuer.ctx.store.renewals.get(due);
    expect(sealed?.recipientSealed).toMatch(/^v1\./);
    expect(sealed?.recipientSealed).not.toContain('example.org');
    // What the migration leaves for a direct credential issued before it.
    await queryStore(
      issuer.ctx.store,
      'UPDATE renewals SET recipient_sealed = NULL WHERE credential_id = ?',
      [due],
    );
    expect(await issuer.ctx.renewal.sweep()).toMatchObject({ renewed: 0, skipped: 1 });
    expect(await issuer.ctx.store.renewals.get(due)).toMatchObject({ outcome: 'not_renewable' });
    expect(await issuer.ctx.renewal.sweep()).toMatchObject({ skipped: 0 });
    await expectError(
      await issuer.admin('/admin/renew', { credentialId: due, reason: 'try' }),
      409,
      'CONFLICT',
      'credentialId',
    );
  });

  it('POST /admin/renew: caller-given claims are renewed from the provider for the holder’s user id', async () => {
    const email = nextEmail();
    const given = await issueDirect(issuer, {
      userId: email,
      schemaId: 'membership-v1',
      expiration: inDays(200),
      credentialSubject: {
        givenName: 'Old',
        familyName: 'Name',
        memberSince: '2020-01-01',
        tier: 'basic',
        memberNumber: 1,
      },
    });
    const { userId } = (await issuer.ctx.store.issuances.get(given))!;
    await setClaims(issuer, userId, 'membership-v1', {
      givenName: 'New',
      familyName: 'Name',
      memberSince: '2020-01-01',
      tier: 'gold',
      memberNumber: 1,
    });
    const res = await issuer.admin('/admin/renew', { credentialId: given, reason: 'name change' });
    expect(res.status).toBe(201);
    const body = (await res.json()) as {
      credentialId: string;
      renewedFrom: string;
      previousRevoked: boolean;
    };
    expect(body).toMatchObject({ renewedFrom: given, previousRevoked: false });
    const verified = await openedAndVerified(issuer, email, body.credentialId);
    expect(verified.claims).toMatchObject({ givenName: 'New', tier: 'gold' });
    expect(await auditRows(issuer, 'renew', given)).toEqual([{ actor: 'admin', reason: 'name change' }]);
    // Renewed once: asking again is a conflict (renew the newer one).
    await expectError(
      await issuer.admin('/admin/renew', { credentialId: given, reason: 'again' }),
      409,
      'CONFLICT',
      'credentialId',
    );
  });

  it('a holder whose wallet key changed gets the renewed credential sealed to the new key', async () => {
    await setClaims(issuer, 'wallet-u', 'renewing-v1', { name: 'Gil' });
    const email = nextEmail();
    const old = await issueDirect(issuer, {
      userId: email,
      schemaId: 'renewing-v1',
      expiration: inDays(100),
      claimsUserId: 'wallet-u',
    });
    // The hosting service now answers initialize-user with another key and DID for the same account.
    const state = issuer.emulator!.state;
    const before = state.holderByEmail(email)!;
    const { spki, pkcs8 } = generateEncodedKeyPair('x25519');
    state.holders.set(before.email, {
      ...before,
      did: x25519DidKey(spki.subarray(12)),
      publicKey: spki.toString('hex'),
      privateKeyPkcs8Hex: pkcs8.toString('hex'),
    });
    const res = await issuer.admin('/admin/renew', { credentialId: old, reason: 'new wallet' });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { credentialId: string; holderDid: string };
    expect(body.holderDid).toBe(state.holderByEmail(email)!.did);
    expect(body.holderDid).not.toBe(before.did);
    expect((await openedAndVerified(issuer, email, body.credentialId)).claims).toMatchObject({ name: 'Gil' });
  });

  it('revokePrevious: the previous credential is revoked once the new one is recorded', async () => {
    await setClaims(issuer, 'rev-u', 'renewing-revoke-v1', { name: 'Di' });
    const email = nextEmail();
    const old = await issueDirect(issuer, {
      userId: email,
      schemaId: 'renewing-revoke-v1',
      expiration: inDays(100),
      claimsUserId: 'rev-u',
    });
    const res = await issuer.admin('/admin/renew', { credentialId: old, reason: 'rotate' });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { credentialId: string; previousRevoked: boolean };
    expect(body.previousRevoked).toBe(true);
    expect(await historyRow(issuer, old)).toMatchObject({ status: 'revoked', renewedBy: body.credentialId });
    expect(await historyRow(issuer, body.credentialId)).toMatchObject({ status: 'valid', renewedFrom: old });
    expect((await openedAndVerified(issuer, email, body.credentialId)).claims).toMatchObject({ name: 'Di' });
  });

  it('a renewal cut short after its credential was recorded is finished by the next sweep, not signed again', async () => {
    const { old, renewedBy } = await cutShort(issuer, 'cut-u', 9);
    expect(await issuer.ctx.store.renewals.get(old)).toMatchObject({ outcome: null });

    expect(await issuer.ctx.renewal.sweep()).toMatchObject({ renewed: 1, failed: 0 });
    expect(await historyRow(issuer, old)).toMatchObject({
      status: 'revoked',
      renewedBy: renewedBy,
    });
    expect(await issuer.ctx.store.renewals.get(old)).toMatchObject({
      outcome: 'renewed',
      renewedBy: renewedBy,
    });
    expect(await auditRows(issuer, 'renew', old)).toHaveLength(1);
    const renewing = await queryStore(
      issuer.ctx.store,
      'SELECT credential_id FROM issuances WHERE renewed_from = ?',
      [old],
    );
    expect(renewing).toHaveLength(1);
    expect(await issuer.ctx.renewal.sweep()).toMatchObject({ renewed: 0, skipped: 0, failed: 0 });
  });

  it('the admin CLI renews one credential', async () => {
    await setClaims(issuer, 'cli-u', 'renewing-v1', { name: 'Ed' });
    const old = await issueDirect(issuer, {
      userId: nextEmail(),
      schemaId: 'renewing-v1',
      expiration: inDays(100),
      claimsUserId: 'cli-u',
    });
    const cli = await runCli(
      ['renew', old, '--reason', 'from the CLI', '--json'],
      { ISSUER_URL: issuer.url, ADMIN_API_KEY: TEST_ADMIN_API_KEY, KEYS_DIR: join(work, 'cli-keys') },
      work,
    );
    expect(cli.code).toBe(0);
    const printed = JSON.parse(cli.stdout) as { credentialId: string; renewedFrom: string };
    expect(printed.renewedFrom).toBe(old);
    expect(await historyRow(issuer, old)).toMatchObject({ renewedBy: printed.credentialId });
    const missing = await runCli(
      ['renew', old],
      { ISSUER_URL: issuer.url, ADMIN_API_KEY: TEST_ADMIN_API_KEY, KEYS_DIR: join(work, 'cli-keys') },
      work,
    );
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('--reason');
  });

  it('bad input is a 400 naming the field; an unknown credential 404; a hosted one 409', async () => {
    await expectError(
      await issuer.admin('/admin/renew', { reason: 'x' }),
      400,
      'INVALID_PARAMETER',
      'credentialId',
    );
    await expectError(
      await issuer.admin('/admin/renew', { credentialId: 'abc' }),
      400,
      'INVALID_PARAMETER',
      'reason',
    );
    await expectError(
      await issuer.admin('/admin/renew', { credentialId: 'abc', reason: ' ' }),
      400,
      'INVALID_PARAMETER',
      'reason',
    );
    await expectError(
      await issuer.admin('/admin/renew', { credentialId: 'abc', reason: 'x', extra: 1 }),
      400,
      'INVALID_PARAMETER',
      'extra',
    );
    await expectError(
      await issuer.admin('/admin/renew', { credentialId: 'no-such-credential', reason: 'x' }),
      404,
      'NOT_FOUND',
    );
    await setClaims(issuer, 'hosted-u', 'membership-v1', {
      givenName: 'Hu',
      familyName: 'Sted',
      memberSince: '2021-01-01',
      tier: 'basic',
      memberNumber: 3,
    });
    const hosted = await issuer.ctx.hosted.issueHosted({
      holderDid: 'did:example:hosted-u',
      userId: 'hosted-u',
      schemaId: 'membership-v1',
      proofType: 'SD_JWT_VC',
      encryptTo: holderKey,
    });
    await expectError(
      await issuer.admin('/admin/renew', { credentialId: hosted.credentialId, reason: 'x' }),
      409,
      'CONFLICT',
      'credentialId',
    );
  });
});

const available = await postgresAvailable('the renewal sweep on two instances');

/**
 * A renewal cut short whose previous credential has expired by the next sweep: the sweep finishes
 * it (revoke, outcome, `renew` audit row, `credential.renewed` event) up to
 * RENEWAL_FINISH_GRACE_DAYS after the expiry, once, and starts no renewal of an expired credential.
 * The sweep's clock is moved past the expiries; everything else runs on the real one.
 */
describe.each([
  ['SQLite', true],
  ['PostgreSQL', available],
] as const)('renewal cut short, then expired: %s', (engine, runs) => {
  let issuer: TestIssuer;
  let db: TempDatabase | undefined;
  let work: string;
  let ahead = 0;

  beforeAll(async () => {
    if (!runs) return;
    work = tempDir();
    db = engine === 'PostgreSQL' ? await createMigratedDatabase() : undefined;
    issuer = await startIssuer({
      env: {
        SCHEMAS_DIR: renewalSchemas(work),
        KEY_ENCRYPTION_KEY: 'c3'.repeat(32),
        ...(db ? { DATABASE_URL: db.url } : {}),
      },
      exampleClaimsFile: '',
      context: { renewal: { sweepMs: 3_600_000, now: () => new Date(Date.now() + ahead) } },
    });
    await issuer.ctx.webhooks.add({ url: 'http://127.0.0.1:9/hook', events: ['credential.renewed'] });
  });
  afterAll(async () => {
    await issuer?.close();
    await db?.drop();
    if (work) removeDir(work);
  });

  const renewedEvents = async (renewedFrom: string) =>
    (
      await queryStore<{ data: string }>(
        issuer.ctx.store,
        "SELECT data FROM webhook_events WHERE type = 'credential.renewed'",
      )
    )
      .map((e) => JSON.parse(e.data) as { renewedFrom: string })
      .filter((e) => e.renewedFrom === renewedFrom);
  const renewing = (credentialId: string) =>
    queryStore(issuer.ctx.store, 'SELECT credential_id FROM issuances WHERE renewed_from = ?', [
      credentialId,
    ]);

  it.skipIf(!runs)(
    'is finished by the next sweep once; an expired credential with no renewal is not renewed',
    async () => {
      // Expired 38 days before the sweep: past the grace (30 days), left for `renew` by hand.
      const stale = await cutShort(issuer, 'stale-u', 2);
      // Expired 25 days before the sweep: finished.
      const expired = await cutShort(issuer, 'expired-u', 15);
      // Valid and inside the window today, expired by the sweep, never renewed: not started now.
      await setClaims(issuer, 'never-u', 'renewing-revoke-v1', { name: 'Nev' });
      const never = await issueDirect(issuer, {
        userId: nextEmail(),
        schemaId: 'renewing-revoke-v1',
        expiration: inDays(20),
        claimsUserId: 'never-u',
      });
      const nonce = (await issuer.ctx.store.issuances.get(expired.old))!.revocationNonce;
      ahead = 40 * DAY;

      expect(await issuer.ctx.renewal.sweep()).toMatchObject({
        ran: true,
        renewed: 1,
        skipped: 0,
        failed: 0,
      });
      expect(await historyRow(issuer, expired.old)).toMatchObject({
        status: 'revoked',
        renewedBy: expired.renewedBy,
      });
      expect(await issuer.ctx.store.renewals.get(expired.old)).toMatchObject({
        outcome: 'renewed',
        renewedBy: expired.renewedBy,
      });
      expect(await auditRows(issuer, 'renew', expired.old)).toEqual([
        { actor: 'renewal-sweep', reason: 'renewal sweep' },
      ]);
      expect(await auditRows(issuer, 'revoke', String(nonce))).toEqual([
        { actor: 'renewal-sweep', reason: 'renewal sweep' },
      ]);
      expect(await renewedEvents(expired.old)).toEqual([
        { credentialId: expired.renewedBy, renewedFrom: expired.old, schemaId: 'renewing-revoke-v1' },
      ]);
      expect(await renewing(expired.old)).toHaveLength(1);

      expect(await issuer.ctx.store.renewals.get(never)).toMatchObject({ outcome: null });
      expect(await renewing(never)).toEqual([]);
      expect(await historyRow(issuer, never)).toMatchObject({ renewedBy: null });
      expect(await issuer.ctx.store.renewals.get(stale.old)).toMatchObject({ outcome: null });
      expect(await historyRow(issuer, stale.old)).toMatchObject({ renewedBy: stale.renewedBy });
      expect(await auditRows(issuer, 'renew', stale.old)).toEqual([]);

      // Not again: one audit row, one event, one renewing credential.
      expect(await issuer.ctx.renewal.sweep()).toMatchObject({ renewed: 0, skipped: 0, failed: 0 });
      expect(await auditRows(issuer, 'renew', expired.old)).toHaveLength(1);
      expect(await renewedEvents(expired.old)).toHaveLength(1);

      // Past the grace, `POST /admin/renew` finishes it by hand, without signing again.
      const res = await issuer.admin('/admin/renew', { credentialId: stale.old, reason: 'finish by hand' });
      expect(res.status).toBe(201);
      expect(await res.json()).toMatchObject({ credentialId: stale.renewedBy, previousRevoked: true });
      expect(await renewedEvents(stale.old)).toHaveLength(1);
      expect(await renewing(stale.old)).toHaveLength(1);
    },
  );

  it.skipIf(!runs)(
    'signs nothing for an expired credential it takes without the renewal’s own credential',
    async () => {
      ahead = 0;
      await setClaims(issuer, 'odd-u', 'renewing-revoke-v1', { name: 'Odd' });
      const email = nextEmail();
      const odd = await issueDirect(issuer, {
        userId: email,
        schemaId: 'renewing-revoke-v1',
        expiration: inDays(5),
        claimsUserId: 'odd-u',
      });
      // A credential naming it as renewed, under an id of its own (not the renewal's).
      await issuer.ctx.direct.issue({
        claimsUserId: 'odd-u',
        email,
        schemaId: 'renewing-revoke-v1',
        vct: 'urn:vct:renewing-revoke-v1',
        expiresAt: new Date(Date.now() + 300 * DAY),
        onDuplicate: 'allow',
        renewedFrom: odd,
      });
      ahead = 10 * DAY;
      // (The credentials of the test before that are still valid then are renewed as usual.)
      expect(await issuer.ctx.renewal.sweep()).toMatchObject({ skipped: 0, failed: 1 });
      expect(await renewing(odd)).toHaveLength(1);
      expect(await issuer.ctx.store.issuances.get(credentialIdFor(renewalKey(odd)))).toBeUndefined();
      expect(await issuer.ctx.store.renewals.get(odd)).toMatchObject({ outcome: null });
      expect(await historyRow(issuer, odd)).toMatchObject({ status: 'valid' });
    },
  );
});

describe.skipIf(!available)('renewal sweep on two instances on one PostgreSQL database', () => {
  let db: TempDatabase;
  let a: TestIssuer;
  let b: TestIssuer;
  const dirs = [tempDir(), tempDir()];
  let work: string;

  beforeAll(async () => {
    work = tempDir();
    db = await createMigratedDatabase();
    const env = {
      DATABASE_URL: db.url,
      KEY_ENCRYPTION_KEY: 'b2'.repeat(32),
      SCHEMAS_DIR: renewalSchemas(work),
      RENEWAL_SWEEP_INTERVAL_MS: '100',
    };
    a = await startIssuer({ dir: dirs[0], env, exampleClaimsFile: '' });
    b = await startIssuer({
      dir: dirs[1],
      env: { ...env, SERVICE_V1_BASE_URL: a.ctx.config.serviceBaseUrl! },
      exampleClaimsFile: '',
    });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await db?.drop();
    for (const d of [...dirs, work]) removeDir(d);
  });

  it('a credential inside the window is renewed once, whichever instance sweeps', async () => {
    await setClaims(a, 'two-u', 'renewing-v1', { name: 'Two', tier: 'one' });
    const email = nextEmail();
    const due = await issueDirect(a, {
      userId: email,
      schemaId: 'renewing-v1',
      expiration: inDays(7),
      claimsUserId: 'two-u',
    });
    const renewedBy = await expect
      .poll(async () => (await historyRow(b, due))?.renewedBy ?? null, { interval: 100 })
      .not.toBeNull()
      .then(async () => (await historyRow(b, due))!.renewedBy!);
    // Both instances sweep several more times after it.
    for (let i = 0; i < 3; i++)
      await Promise.all([once(a.ctx.renewal, 'swept'), once(b.ctx.renewal, 'swept')]);
    const renewing = await queryStore<{ credential_id: string }>(
      a.ctx.store,
      'SELECT credential_id FROM issuances WHERE renewed_from = ?',
      [due],
    );
    expect(renewing.map((r) => r.credential_id)).toEqual([renewedBy]);
    expect(await auditRows(a, 'renew', due)).toHaveLength(1);
    expect(await historyRow(a, renewedBy)).toMatchObject({ renewedFrom: due, status: 'valid' });
    expect((await openedAndVerified(a, email, renewedBy)).claims).toMatchObject({ name: 'Two' });
  });
});
