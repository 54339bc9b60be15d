import { randomUUID } from 'node:crypto';
import { cpSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { recipientSealing } from '../../src/keys/recipient-sealing.js';
import { countSealedRecipients, resealRecipients } from '../../src/keys/reseal.js';
import { runCli } from '../helpers/cli.js';
import { queryStore, removeDir, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

// docs/security.md "What renewal keeps": `keys reseal` seals the recipient emails renewal keeps
// again under the new KEY_ENCRYPTION_KEY, so the credentials stay renewable after a key change.

const pgAvailable = await postgresAvailable('keys reseal of the recipient emails on PostgreSQL');
const A = 'a1'.repeat(32);
const B = Buffer.from(Array.from({ length: 32 }, (_, n) => n * 7 + 3)).toString('base64');
const C = 'c3'.repeat(32);
const kek = (value: string) =>
  /^[0-9a-f]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
const SCHEMA = 'reseal-renewing-v1';
const DAY = 86_400_000;

function schemasDir(work: string): string {
  const dir = join(work, 'schemas');
  cpSync(resolve('schemas'), dir, { recursive: true });
  writeFileSync(
    join(dir, 'reseal-renewing.json'),
    JSON.stringify({
      schemaId: SCHEMA,
      proofTypes: ['SD_JWT_VC'],
      expiresInSeconds: 31_536_000,
      credentialSubject: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      claims: { provider: 'sqlite' },
      sdJwt: { vct: `urn:vct:${SCHEMA}` },
      renewal: { beforeExpirySeconds: 30 * 86_400 },
    }),
  );
  return dir;
}

const sealedOf = async (issuer: TestIssuer, credentialId: string) =>
  (
    await queryStore<{ recipient_sealed: string }>(
      issuer.ctx.store,
      'SELECT recipient_sealed FROM renewals WHERE credential_id = ?',
      [credentialId],
    )
  )[0]!.recipient_sealed;

const engines: Array<{ engine: string; skip: boolean; url: (dir: string) => Promise<string> }> = [
  { engine: 'SQLite', skip: false, url: async (dir) => `sqlite:${join(dir, 'issuer.db')}` },
  {
    engine: 'PostgreSQL',
    skip: !pgAvailable,
    url: async () => {
      const db = await createMigratedDatabase();
      databases.push(db);
      return db.url;
    },
  },
];
const databases: TempDatabase[] = [];
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(databases.map((db) => db.drop()));
  for (const dir of dirs) removeDir(dir);
});

describe.each(engines)('keys reseal and the recipient emails renewal keeps ($engine)', ({ skip, url }) => {
  it.skipIf(skip)(
    'a credential issued under one KEY_ENCRYPTION_KEY renews after keys reseal under the next',
    async () => {
      const dir = tempDir();
      dirs.push(dir);
      const env = { DATABASE_URL: await url(dir), SCHEMAS_DIR: schemasDir(dir) };
      const start = (extra: Record<string, string>, port?: number) =>
        startIssuer({
          dir,
          ...(port ? { port } : {}),
          env: { ...env, ...extra },
          exampleClaimsFile: '',
          context: { renewal: { sweepMs: 3_600_000 } },
        });

      // Under key A: three direct credentials of a schema that declares renewal; the last one
      // expires inside the renewal window.
      const a = await start({ KEY_ENCRYPTION_KEY: A });
      const port = Number(new URL(a.url).port);
      await a.ctx.store.claims.upsertClaims([
        { userId: 'reseal-u', schemaId: SCHEMA, claims: { name: 'Ada' }, expiresAt: null },
      ]);
      const emails = [0, 1, 2].map((n) => `reseal.${n}.${randomUUID()}@example.org`);
      const ids: string[] = [];
      for (const [n, email] of emails.entries()) {
        const res = await a.admin('/admin/issue-vc', {
          userId: email,
          schemaId: SCHEMA,
          vct: `urn:vct:${SCHEMA}`,
          expiration: new Date(Date.now() + (n === 2 ? 20 : 200) * DAY)
            .toISOString()
            .replace(/\.\d{3}Z$/, 'Z'),
          claimsUserId: 'reseal-u',
        });
        expect(res.status).toBe(201);
        ids.push(((await res.json()) as { credentialId: string }).credentialId);
      }
      const underA = await Promise.all(ids.map((id) => sealedOf(a, id)));
      for (const [n, sealed] of underA.entries()) {
        expect(sealed).not.toContain(emails[n]);
        expect(recipientSealing(kek(A)).open(ids[n]!, sealed)).toBe(emails[n]);
      }
      // The last one already under B (a reseal cut short, or written by an instance on the new
      // key), and a row sealed under a third key, which opens with neither.
      await a.ctx.store.renewals.replaceSealedRecipients([
        {
          credentialId: ids[2]!,
          recipientSealed: underA[2]!,
          to: recipientSealing(kek(B)).seal(ids[2]!, emails[2]!),
        },
      ]);
      const stray = `urn:uuid:${randomUUID()}`;
      await a.ctx.store.renewals.addSource({
        credentialId: stray,
        schemaId: SCHEMA,
        expiresAt: new Date(Date.now() + 200 * DAY),
        recipientSealed: recipientSealing(kek(C)).seal(stray, 'stray@example.org'),
        claimsUserId: null,
      });
      // A sweep by an instance still on A cannot open the last one's email: not_renewable.
      expect(await a.ctx.renewal.sweep()).toMatchObject({ ran: true, renewed: 0, skipped: 1, failed: 0 });
      expect(await a.ctx.store.renewals.get(ids[2]!)).toMatchObject({
        outcome: 'not_renewable',
        detail: 'its sealed recipient email does not open with this KEY_ENCRYPTION_KEY',
      });
      expect(await a.ctx.renewal.sweep()).toMatchObject({ renewed: 0, skipped: 0 });
      await a.close();

      // doctor, on the new key with the previous one given: the emails still to reseal.
      const doctorRenewal = async () => {
        const run = await runCli(
          ['doctor', '--json', '--allow-http'],
          {
            ...env,
            ISSUER_ORIGIN: a.url,
            KEYS_DIR: join(dir, 'keys'),
            KEY_ENCRYPTION_KEY_PREVIOUS: A,
            KEY_ENCRYPTION_KEY: B,
          },
          dir,
        );
        const { items } = JSON.parse(run.stdout) as {
          items: Array<{ item: string; verdict: string; detail: string }>;
        };
        return items.filter((l) => l.item === 'renewal');
      };
      expect(await doctorRenewal()).toEqual([
        {
          item: 'renewal',
          verdict: 'PASS',
          detail: `${SCHEMA} renew(s) direct credentials; recipient emails are sealed under KEY_ENCRYPTION_KEY`,
        },
        {
          item: 'renewal',
          verdict: 'FAIL',
          detail:
            '2 of the 4 recipient email(s) kept for renewal are still sealed under KEY_ENCRYPTION_KEY_PREVIOUS, not KEY_ENCRYPTION_KEY: their credentials cannot be renewed until npm run admin -- keys reseal; 1 open(s) with neither key (not renewable)',
        },
      ]);

      // The admin CLI, as an operator runs it: the emails resealed, the re-run changes nothing.
      const reseal = () =>
        runCli(
          ['keys', 'reseal'],
          { DATABASE_URL: env.DATABASE_URL, KEY_ENCRYPTION_KEY_PREVIOUS: A, KEY_ENCRYPTION_KEY: B },
          dir,
        );
      const first = await reseal();
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      expect(first.stdout).toContain(
        '2 recipient email(s) kept for renewal resealed, 1 already under KEY_ENCRYPTION_KEY, 1 opening with neither key',
      );
      // It opens under the key in use now: no longer recorded not renewable.
      expect(first.stdout).toContain(
        '1 credential(s) recorded not_renewable because their email did not open',
      );
      for (const secret of [A, B, ...emails]) expect(first.stdout).not.toContain(secret);
      const again = await reseal();
      expect(again.code).toBe(0);
      expect(again.stdout).toContain(
        '0 recipient email(s) kept for renewal resealed, 3 already under KEY_ENCRYPTION_KEY',
      );
      expect(again.stdout).not.toContain('not_renewable');

      expect((await doctorRenewal())[1]).toEqual({
        item: 'renewal',
        verdict: 'PASS',
        detail:
          'none of the 4 recipient email(s) kept for renewal is left under KEY_ENCRYPTION_KEY_PREVIOUS; 1 open(s) with neither key (not renewable)',
      });

      // Restarted on B: renewed on demand, the holder found again by the email that was resealed.
      const b = await start({ KEY_ENCRYPTION_KEY: B, KEY_ENCRYPTION_KEY_PREVIOUS: A }, port);
      try {
        for (const [n, id] of ids.entries())
          expect(recipientSealing(kek(B)).open(id, await sealedOf(b, id))).toBe(emails[n]);
        // The sweep renews the one it had given up on, once.
        expect(await b.ctx.renewal.sweep()).toMatchObject({ ran: true, renewed: 1, skipped: 0, failed: 0 });
        expect(await b.ctx.store.renewals.get(ids[2]!)).toMatchObject({ outcome: 'renewed' });
        expect(b.emulator!.state.holderByEmail(emails[2]!)).toBeDefined();
        expect(await b.ctx.renewal.sweep()).toMatchObject({ renewed: 0, skipped: 0 });
        const res = await b.admin('/admin/renew', { credentialId: ids[0], reason: 'after the key change' });
        expect([201, 202]).toContain(res.status);
        const renewed = (await res.json()) as { credentialId: string; renewedFrom: string };
        expect(renewed.renewedFrom).toBe(ids[0]);
        expect(b.emulator!.state.holderByEmail(emails[0]!)).toBeDefined();
        expect(await b.ctx.store.renewals.get(ids[0]!)).toMatchObject({
          outcome: 'renewed',
          renewedBy: renewed.credentialId,
        });

        // In pages of one: every email (the renewing credentials' too) back under A, the stray left.
        expect(await resealRecipients(b.ctx.store.renewals, kek(B), kek(A), 1)).toEqual({
          resealed: 5,
          already: 0,
          unopenable: 1,
          reopened: 0,
        });
        expect(await countSealedRecipients(b.ctx.store.renewals, kek(B), kek(A), 2)).toEqual({
          current: 0,
          previous: 5,
          neither: 1,
        });
      } finally {
        await b.close();
      }
    },
  );
});
