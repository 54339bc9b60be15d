import { createPublicKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { exportJWK } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { parseKeyEncryptionKey } from '../../src/config/key-encryption-key.js';
import { recipientSealing } from '../../src/keys/recipient-sealing.js';
import { countSealedRecipients } from '../../src/keys/reseal.js';
import { sealJson } from '../../src/keys/sealed-key.js';
import { silentLogger } from '../../src/observability/logger.js';
import type { SealedRow } from '../../src/store/store.js';
import { openNamespaces } from '../../src/tenancy/namespaces.js';
import type { TenantRecord } from '../../src/tenancy/tenant.js';
import { tenantKeyEncryption } from '../../src/tenancy/tenant-config.js';
import { sealSecret } from '../../src/tenancy/tenant-secrets.js';
import { runCli } from '../helpers/cli.js';
import { removeDir, startIssuer, tempDir } from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';
import { startTenants, type TestTenants } from '../helpers/tenants.js';

// docs/several-issuers.md "Replacing KEY_ENCRYPTION_KEY": with TENANCY=multi, `keys reseal`
// reseals every tenant's key rows, recipient emails and registry secrets under the keys derived
// for it, so the tenants start on the new KEY_ENCRYPTION_KEY alone.

const pgAvailable = await postgresAvailable('keys reseal of the tenants on PostgreSQL');
const OLD = 'b7'.repeat(32);
const NEW = Buffer.from(Array.from({ length: 32 }, (_, n) => n * 11 + 5)).toString('base64');
const THIRD = 'd9'.repeat(32);
const kek = (value: string) => parseKeyEncryptionKey(value) as Buffer;
/** The tenant's sealing key under `base`, as its context derives it. */
const derived = (base: string, tenant: TenantRecord) =>
  tenantKeyEncryption({ current: kek(base), given: true, previous: undefined }, tenant).current;

const p256Pem = () =>
  generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({
    type: 'pkcs8',
    format: 'pem',
  }) as string;

const engines: Array<{ engine: string; skip: boolean; url: (dir: string) => Promise<string> }> = [
  { engine: 'SQLite', skip: false, url: async (dir) => `sqlite:${join(dir, 'issuer.db')}` },
  {
    engine: 'PostgreSQL',
    skip: !pgAvailable,
    url: async () => {
      const db = await createTempDatabase();
      databases.push(db);
      return db.url;
    },
  },
];
const databases: TempDatabase[] = [];
const dirs: string[] = [];
const running: TestTenants[] = [];
afterAll(async () => {
  await Promise.all(running.map((d) => d.close()));
  await Promise.all(databases.map((db) => db.drop()));
  for (const dir of dirs) removeDir(dir);
});

describe.each(engines)('keys reseal with TENANCY=multi ($engine)', ({ engine, skip, url }) => {
  it.skipIf(skip)(
    'every tenant, enabled or disabled, starts on the new KEY_ENCRYPTION_KEY alone after keys reseal; a re-run changes nothing; a secret or a key row under a third key stops it with nothing changed',
    async () => {
      const dir = tempDir();
      dirs.push(dir);
      const DATABASE_URL = await url(dir);
      const start = async (key: string, count: number) => {
        const d = await startTenants(count, { dir, env: { DATABASE_URL, KEY_ENCRYPTION_KEY: key } });
        running.push(d);
        return d;
      };
      const stop = async (d: TestTenants) => {
        running.splice(running.indexOf(d), 1);
        await d.close();
      };
      const fetchJson = async <T>(d: TestTenants, host: string, path: string) => {
        const res = await d.fetch(host, path);
        expect(res.status, `${host}${path}`).toBe(200);
        return (await res.json()) as T;
      };
      const requestKey = async (d: TestTenants, host: string) => {
        const meta = await fetchJson<{
          credential_request_encryption?: { jwks: { keys: Array<{ x: string; y: string }> } };
        }>(d, host, '/.well-known/openid-credential-issuer');
        const key = meta.credential_request_encryption?.jwks.keys[0];
        return key && { x: key.x, y: key.y };
      };

      // Under OLD: two tenants, t1 with its own request encryption key (a sealed secret), each
      // with a recipient email kept for renewal; t2 disabled.
      const first = await start(OLD, 2);
      const [t1, t2] = first.tenants as [(typeof first.tenants)[0], (typeof first.tenants)[0]];
      const pem = p256Pem();
      const { x, y } = await exportJWK(createPublicKey(pem));
      const patched = await first.operator('PATCH', `/operator/tenants/${t1.id}`, {
        secrets: { oid4vciRequestEncryptionKey: pem },
      });
      expect(patched.status, await patched.clone().text()).toBe(200);
      expect(await requestKey(first, t1.host)).toEqual({ x, y });
      const jwks = new Map<string, unknown>();
      const emails = new Map<string, { credentialId: string; email: string }>();
      for (const t of [t1, t2]) {
        jwks.set(t.id, await fetchJson(first, t.host, '/.well-known/jwks.json'));
        const served = first.running.deployment.byId(t.id)!;
        const credentialId = `urn:uuid:${randomUUID()}`;
        const email = `${t.id}.${randomUUID()}@example.org`;
        await served.ctx!.store.renewals.addSource({
          credentialId,
          schemaId: 'membership-v1',
          expiresAt: new Date(Date.now() + 200 * 86_400_000),
          recipientSealed: recipientSealing(derived(OLD, served.record)).seal(credentialId, email),
          claimsUserId: null,
        });
        emails.set(t.id, { credentialId, email });
      }
      expect((await first.operator('POST', `/operator/tenants/${t2.id}/disable`)).status).toBe(200);
      await stop(first);

      // The registry and the namespaces as the deployment opens them, read by the test.
      const { config, secrets } = loadConfig(
        { NODE_ENV: 'test', TENANCY: 'multi', DATABASE_URL, KEYS_DIR: join(dir, 'keys') },
        process.cwd(),
      );
      const namespaces = await openNamespaces(config, secrets, silentLogger());
      const records = async () => await namespaces.registry.list();
      const [r1, r2] = (await records()) as [TenantRecord, TenantRecord];
      /** Everything sealed: the registry's rows and audit, each namespace's key rows and emails. */
      const state = async () => {
        const out: unknown[] = [await records(), await namespaces.registry.audit(1000)];
        for (const r of [r1, r2]) {
          const store = await namespaces.open(r.namespace);
          try {
            out.push(store.keys ? await store.keys.resealAll((row) => row.sealed) : 'files');
            out.push(await store.renewals.sealedRecipients(null, 100));
          } finally {
            await store.close();
          }
        }
        return out;
      };
      const reseal = (previous: string, next: string, json = false) =>
        runCli(
          ['keys', 'reseal', ...(json ? ['--json'] : [])],
          { TENANCY: 'multi', DATABASE_URL, KEY_ENCRYPTION_KEY_PREVIOUS: previous, KEY_ENCRYPTION_KEY: next },
          dir,
        );
      try {
        // t2 given a secret sealed under a third key: the command stops naming it, nothing changed.
        const stray = sealSecret(derived(THIRD, r2), r2.id, 'oid4vciLoginClientSecret', 'stray');
        await namespaces.registry.change(
          r2.id,
          (before) => ({
            record: { ...before, sealedSecrets: { oid4vciLoginClientSecret: stray } },
            changed: ['secrets.oid4vciLoginClientSecret'],
          }),
          'test',
        );
        const before = await state();
        const refused = await reseal(OLD, NEW);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain(
          `tenant ${r2.id}: secrets.oid4vciLoginClientSecret: opens with neither KEY_ENCRYPTION_KEY_PREVIOUS nor KEY_ENCRYPTION_KEY; nothing was resealed`,
        );
        expect(await state()).toEqual(before);
        await namespaces.registry.change(
          r2.id,
          (b) => ({
            record: { ...b, sealedSecrets: undefined },
            changed: ['secrets.oid4vciLoginClientSecret'],
          }),
          'test',
        );

        if (engine === 'PostgreSQL') {
          // A key row of t2 under a third key: stopped, naming tenant and row, before t1's change.
          const rowsOf = async (f: (row: SealedRow) => string) => {
            const store = await namespaces.open(r2.namespace);
            try {
              return await store.keys!.resealAll(f);
            } finally {
              await store.close();
            }
          };
          const [target] = await rowsOf((row) => row.sealed);
          await rowsOf((row) =>
            row.kid === target!.kid
              ? sealJson(derived(THIRD, r2), row.kid, row.purpose, { stray: true })
              : row.sealed,
          );
          const mixed = await state();
          const stopped = await reseal(OLD, NEW);
          expect(stopped.code).toBe(1);
          expect(stopped.stderr).toContain(
            `tenant ${r2.id} (namespace ${r2.namespace}): database:${target!.kid} (${target!.purpose}): opens with neither KEY_ENCRYPTION_KEY_PREVIOUS nor KEY_ENCRYPTION_KEY; nothing was resealed`,
          );
          expect(await state()).toEqual(mixed);
          await rowsOf((row) => (row.kid === target!.kid ? target!.sealed : row.sealed));
        }

        // The reseal: every tenant's keys (PostgreSQL), emails and secrets, under its derived pair.
        const run = await reseal(OLD, NEW);
        expect(run.stderr).toBe('');
        expect(run.code).toBe(0);
        expect(run.stdout).toContain(`tenant ${r1.id} (enabled, namespace ${r1.namespace}):`);
        expect(run.stdout).toContain(`tenant ${r2.id} (disabled, namespace ${r2.namespace}):`);
        expect(run.stdout).toContain('  secrets.oid4vciRequestEncryptionKey: resealed in the registry');
        expect(run.stdout).toContain(
          '  1 recipient email(s) kept for renewal resealed, 0 already under KEY_ENCRYPTION_KEY.',
        );
        if (engine === 'PostgreSQL')
          expect(run.stdout).toMatch(
            new RegExp(`  (\\d+) of \\1 key\\(s\\) resealed in namespace ${r2.namespace}`),
          );
        else
          expect(run.stdout).toContain(
            `  namespace ${r1.namespace}: the keys are files in KEYS_DIR/tenants/${r1.id}, not sealed in the database.`,
          );
        for (const secret of [OLD, NEW, pem, ...[...emails.values()].map((e) => e.email)])
          expect(run.stdout).not.toContain(secret);
        const audit = await namespaces.registry.audit(1);
        expect(audit[0]).toMatchObject({
          actor: 'keys reseal',
          action: 'tenant.changed',
          tenantId: r1.id,
          detail: { changed: ['secrets.oid4vciRequestEncryptionKey'] },
        });

        // Again: harmless, everything already under the new key; --json adds `tenants`.
        const again = await reseal(OLD, NEW, true);
        expect(again.code).toBe(0);
        const out = JSON.parse(again.stdout) as {
          database: string;
          keysInDatabase: boolean;
          tenants: Array<{
            id: string;
            enabled: boolean;
            namespace: string;
            keysInDatabase: boolean;
            rows: Array<{ resealed: boolean }>;
            recipients: { resealed: number; already: number };
            secrets: Array<{ name: string; resealed: boolean }>;
          }>;
        };
        expect(Object.keys(out)).toEqual(['database', 'keysInDatabase', 'rows', 'recipients', 'tenants']);
        expect(out.tenants.map((t) => [t.id, t.enabled, t.namespace])).toEqual([
          [r1.id, true, r1.namespace],
          [r2.id, false, r2.namespace],
        ]);
        for (const t of out.tenants) {
          expect(t.keysInDatabase).toBe(engine === 'PostgreSQL');
          if (engine === 'PostgreSQL') expect(t.rows.length).toBeGreaterThan(0);
          expect(t.rows.every((r) => !r.resealed)).toBe(true);
          expect(t.recipients).toMatchObject({ resealed: 0, already: 1 });
        }
        expect(out.tenants[0]!.secrets).toEqual([{ name: 'oid4vciRequestEncryptionKey', resealed: false }]);
        expect(out.tenants[1]!.secrets).toEqual([]);
        expect((await namespaces.registry.audit(1))[0]).toEqual(audit[0]);
      } finally {
        await namespaces.close();
      }

      // On NEW alone: both tenants serve their keys, t1 its own request key; the emails open.
      const second = await start(NEW, 0);
      for (const t of [t1, t2]) {
        const served = second.running.deployment.byId(t.id)!;
        expect(served.problem).toBeUndefined();
        expect(await fetchJson(second, t.host, '/.well-known/jwks.json')).toEqual(jwks.get(t.id));
        const { credentialId, email } = emails.get(t.id)!;
        const store = served.ctx!.store.renewals;
        expect(
          await countSealedRecipients(store, derived(NEW, served.record), derived(OLD, served.record)),
        ).toEqual({
          current: 1,
          previous: 0,
          neither: 0,
        });
        const [row] = await store.sealedRecipients(null, 10);
        expect(recipientSealing(derived(NEW, served.record)).open(credentialId, row!.recipientSealed)).toBe(
          email,
        );
      }
      expect(await requestKey(second, t1.host)).toEqual({ x, y });
      await stop(second);
    },
  );

  it.skipIf(skip)(
    "an adopted single deployment's rows and secret, in the deployment's own namespace, are resealed under KEY_ENCRYPTION_KEY itself",
    async () => {
      const dir = tempDir();
      dirs.push(dir);
      const DATABASE_URL = await url(dir);
      const ORIGIN = 'https://first.issuers.test';
      const HOST = 'first.issuers.test';
      const single = await startIssuer({
        dir,
        env: { DATABASE_URL, KEY_ENCRYPTION_KEY: OLD, ISSUER_ORIGIN: ORIGIN },
      });
      const kid = single.ctx.keys.current().signing.kid;
      await single.close();

      const start = async (key: string) => {
        const d = await startTenants(0, { dir, env: { DATABASE_URL, KEY_ENCRYPTION_KEY: key } });
        running.push(d);
        return d;
      };
      const stop = async (d: TestTenants) => {
        running.splice(running.indexOf(d), 1);
        await d.close();
      };
      const served = async (d: TestTenants) => {
        const json = async <T>(path: string) => (await (await d.fetch(HOST, path)).json()) as T;
        const signing = await json<{ jwks: { keys: Array<{ kid: string }> } }>('/.well-known/jwt-vc-issuer');
        const meta = await json<{
          credential_request_encryption?: { jwks: { keys: Array<{ x: string; y: string }> } };
        }>('/.well-known/openid-credential-issuer');
        const key = meta.credential_request_encryption?.jwks.keys[0];
        return {
          kids: signing.jwks.keys.map((k) => k.kid),
          partner: await json('/.well-known/jwks.json'),
          requestKey: key && { x: key.x, y: key.y },
        };
      };
      const pem = p256Pem();
      const { x, y } = await exportJWK(createPublicKey(pem));
      const first = await start(OLD);
      const adopted = await first.operator('POST', '/operator/tenants/adopt', {
        id: 'first',
        origin: ORIGIN,
        // Never called here: nothing is issued.
        settings: { partnerId: randomUUID(), serviceBaseUrl: 'http://127.0.0.1:9' },
        apiKey: 'first-api-key',
        adminApiKeys: { admin: 'first-admin-key' },
        secrets: { oid4vciRequestEncryptionKey: pem },
      });
      expect(adopted.status, await adopted.clone().text()).toBe(201);
      expect(first.running.deployment.byId('first')?.problem).toBeUndefined();
      const before = await served(first);
      expect(before.kids).toContain(kid);
      expect(before.requestKey).toEqual({ x, y });
      await stop(first);

      const run = await runCli(
        ['keys', 'reseal'],
        { TENANCY: 'multi', DATABASE_URL, KEY_ENCRYPTION_KEY_PREVIOUS: OLD, KEY_ENCRYPTION_KEY: NEW },
        dir,
      );
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('tenant first (enabled, namespace main):');
      expect(run.stdout).toContain(
        "  its rows are the deployment's own namespace's, above (under KEY_ENCRYPTION_KEY itself)",
      );
      expect(run.stdout).toContain('  secrets.oid4vciRequestEncryptionKey: resealed in the registry');
      if (engine === 'PostgreSQL') {
        expect(run.stdout).toContain(`credential-signing ${kid}: resealed`);
        expect(run.stdout).toMatch(/(\d+) of \1 key\(s\) resealed in postgres:/);
      }

      const second = await start(NEW);
      expect(second.running.deployment.byId('first')?.problem).toBeUndefined();
      expect(await served(second)).toEqual(before);
      await stop(second);
    },
  );
});
