import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchList, holder, issueInProcess, seedMembers } from '../fixtures/status.js';
import { removeDir, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';
import { holderIden3Did } from '../unit/iden3/fixtures.js';

const available = await postgresAvailable('the two-instance tests');
const KEK = 'a1'.repeat(32);
const POLL_MS = 100;

/** Polls `read` until `done` holds or `ms` pass; answers the last value and how long it took. */
async function within<T>(ms: number, read: () => Promise<T>, done: (v: T) => boolean) {
  const start = Date.now();
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() - start > ms) return { value, elapsed: Date.now() - start };
    await new Promise((r) => setTimeout(r, 20));
  }
}

// Issue 9: two instances (real servers in this process) on one PostgreSQL database behave as one
// issuer: keys from the database, status lists and Idempotency-Keys through the database.
describe.skipIf(!available)('two instances on one PostgreSQL database', () => {
  let db: TempDatabase;
  let a: TestIssuer;
  let b: TestIssuer;
  const dirs = [tempDir(), tempDir()];

  beforeAll(async () => {
    db = await createTempDatabase();
    const env = { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY: KEK, STATUS_LIST_BITS: '2' };
    a = await startIssuer({ dir: dirs[0], env, context: { keysPollMs: POLL_MS } });
    // B shares no disk with A: its signing keys come from the database. Only the Iden3 BJJ key is
    // a file every instance needs (README: Running several instances).
    mkdirSync(join(dirs[1]!, 'keys'), { recursive: true });
    copyFileSync(join(dirs[0]!, 'keys', 'iden3-bjj.json'), join(dirs[1]!, 'keys', 'iden3-bjj.json'));
    b = await startIssuer({
      dir: dirs[1],
      env: { ...env, SERVICE_V1_BASE_URL: a.ctx.config.serviceBaseUrl! },
      context: { keysPollMs: POLL_MS },
      exampleClaimsFile: '',
    });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await db?.drop();
    for (const d of dirs) removeDir(d);
  });

  it('both sign with the key imported from the first start, and publish the same keys', async () => {
    expect(b.ctx.keys.current().signing.kid).toBe(a.ctx.keys.current().signing.kid);
    const kids = async (i: TestIssuer) =>
      (
        (await (await fetch(`${i.url}/.well-known/jwt-vc-issuer`)).json()) as {
          jwks: { keys: Array<{ kid: string }> };
        }
      ).jwks.keys
        .map((k) => k.kid)
        .sort();
    expect(await kids(b)).toEqual(await kids(a));
  });

  it('a revocation and a suspension through A show in the list B serves at once', async () => {
    const [user] = await seedMembers(a, 'two-instances', 1);
    const issued = await issueInProcess(a, user!);
    const onB = issued.uri.replace(a.url, b.url);
    const before = await fetchList(onB);
    expect(before.list.getStatus(issued.idx)).toBe(0);
    expect((await a.admin('/admin/suspend', { revocationNonce: issued.nonce })).status).toBe(200);
    const suspended = await fetchList(onB);
    expect(suspended.list.getStatus(issued.idx)).toBe(2);
    expect(suspended.etag).not.toBe(before.etag);
    expect((await a.admin('/admin/revoke', { revocationNonce: issued.nonce })).status).toBe(200);
    expect((await fetchList(onB)).list.getStatus(issued.idx)).toBe(1);
    const status = await fetch(`${b.url}/revocation-status/${issued.nonce}`);
    expect(status.status).toBe(200);
  });

  it('a rotation through B is used and published by A within 5 s, without a restart', async () => {
    const old = a.ctx.keys.current().signing.kid;
    const res = await b.admin('/admin/keys/rotate', { purpose: 'credential-signing' });
    expect(res.status).toBe(200);
    const { created } = (await res.json()) as { created: { kid: string } };
    const seen = await within(
      5000,
      async () => a.ctx.keys.current().signing.kid,
      (kid) => kid === created.kid,
    );
    expect(seen.value).toBe(created.kid);
    expect(seen.elapsed).toBeLessThan(5000);
    const [user] = await seedMembers(a, 'after-rotation', 1);
    const issued = await issueInProcess(a, user!);
    expect(decodeProtectedHeader(issued.compact.split('~')[0]!).kid).toBe(created.kid);
    const meta = (await (await fetch(`${a.url}/.well-known/jwt-vc-issuer`)).json()) as {
      jwks: { keys: Array<{ kid: string }> };
    };
    // The retired key stays published: credentials it signed have not expired.
    expect(meta.jwks.keys.map((k) => k.kid)).toEqual(expect.arrayContaining([created.kid, old]));
  });

  it('an Idempotency-Key replayed on the other instance answers the first answer', async () => {
    const body = {
      userId: 'idem.multi@example.org',
      schemaId: 'membership-v1',
      vct: 'urn:vct:membership',
      expiration: new Date(Date.now() + 30 * 86400_000).toISOString(),
      credentialSubject: {
        givenName: 'Ida',
        familyName: 'M',
        memberSince: '2022-01-01',
        tier: 'basic',
        memberNumber: 4,
      },
    };
    const headers = { 'idempotency-key': 'multi-instance-1' };
    const first = await a.admin('/admin/issue-vc', body, headers);
    expect(first.status).toBe(201);
    const again = await b.admin('/admin/issue-vc', body, headers);
    expect(again.status).toBe(201);
    expect(await again.json()).toEqual(await first.json());
  });

  it('onDuplicate=revoke sent to both instances at once leaves the holder one valid credential', async () => {
    const email = 'dup.multi@example.org';
    const body = (n: number) => ({
      userId: email,
      schemaId: 'membership-v1',
      vct: 'urn:vct:membership',
      expiration: new Date(Date.now() + 30 * 86400_000).toISOString(),
      onDuplicate: 'revoke',
      credentialSubject: {
        givenName: 'Dee',
        familyName: 'M',
        memberSince: '2022-01-01',
        tier: 'basic',
        memberNumber: n + 1,
      },
    });
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, n) => (n % 2 === 0 ? a : b).admin('/admin/issue-vc', body(n))),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(6).fill(201));
    const holderDid = a.emulator!.state.holderByEmail(email)!.did;
    const active = await a.ctx.store.history.activeFor(holderDid, 'membership-v1', new Date());
    expect(active.filter((r) => r.status === 0)).toHaveLength(1);
  });

  it('a BJJ revocation through A shows in /credential-status on B', async () => {
    const res = await a.post('/issue-vc', {
      holderDID: holderIden3Did(77n),
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
      proofType: 'BJJ_SIG_2021',
    });
    expect(res.status).toBe(201);
    const records = await a.ctx.store.history.list({
      page: 1,
      limit: 50,
      order: 'createdAt_desc',
      proofType: 'BJJ_SIG_2021',
      now: new Date(),
    });
    const nonce = records.records[0]!.revocationNonce;
    const read = async () =>
      ((await (await fetch(`${b.url}/credential-status/${nonce}`)).json()) as { mtp: { existence: boolean } })
        .mtp.existence;
    expect(await read()).toBe(false);
    expect((await a.admin('/admin/revoke', { revocationNonce: String(nonce) })).status).toBe(200);
    expect(await read()).toBe(true);
    expect((await b.ctx.iden3!.latestState()).state).toBe((await a.ctx.iden3!.latestState()).state);
  });
});
