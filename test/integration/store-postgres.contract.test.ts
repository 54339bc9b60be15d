import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, readMigrations } from '../../src/store/postgres/database.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { describeStoreContract, issuance } from '../contract/store-contract.js';
import {
  createMigratedDatabase,
  createTempDatabase,
  postgresAvailable,
  type TempDatabase,
} from '../helpers/services.js';

const available = await postgresAvailable('the PostgreSQL store contract');

describe.skipIf(!available)('PostgreSQL store', () => {
  let db: TempDatabase;
  beforeAll(async () => {
    db = await createMigratedDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  // Every test of the contract starts from empty tables of this run's database. DELETE, not
  // TRUNCATE: on tables this small, TRUNCATE's new files (and their fsyncs) cost ten times more.
  let emptyAll: string | undefined;
  describeStoreContract('PostgreSQL', async () => {
    const store = await openPostgresStore(db.url, { poolMax: 10 });
    emptyAll ??= await emptyingStatements(store.pool);
    await store.pool.query(emptyAll);
    return store;
  });

  describe('PostgreSQL only', () => {
    it('keys: imported once, rotated in one transaction, every change bumps the version', async () => {
      const store = await openPostgresStore(db.url, { poolMax: 4 });
      try {
        const key = (kid: string, purpose: 'credential-signing' | 'partner-jwt') => ({
          kid,
          purpose,
          createdAt: new Date('2030-01-01T00:00:00Z'),
          retiredAt: null,
          sealed: `sealed-${kid}`,
          standby: false,
          x5c: null,
        });
        const v0 = await store.keys.version();
        const imports = await Promise.all([
          store.keys.importIfEmpty([key('s1', 'credential-signing'), key('p1', 'partner-jwt')]),
          store.keys.importIfEmpty([key('s9', 'credential-signing'), key('p9', 'partner-jwt')]),
        ]);
        expect(imports.filter(Boolean)).toHaveLength(1);
        expect(await store.keys.version()).toBe(v0 + 1);
        const at = new Date('2030-02-01T00:00:00Z');
        const s1 = imports[0] ? 's1' : 's9';
        expect(await store.keys.rotate(key('s2', 'credential-signing'), at)).toEqual({ retired: [s1] });
        expect(await store.keys.version()).toBe(v0 + 2);
        // Listed by creation time, then kid: with equal times the winner of the import race
        // (s1 or s9) sorts either side of s2.
        const listed = await store.keys.list();
        expect(listed.filter((k) => k.purpose === 'credential-signing')).toEqual(
          [
            { ...key(s1, 'credential-signing'), retiredAt: at },
            { ...key('s2', 'credential-signing'), createdAt: new Date('2030-01-01T00:00:00Z') },
          ].sort((a, b) => a.kid.localeCompare(b.kid)),
        );
      } finally {
        await store.close();
      }
    });

    it('keys: a standby key and a chain reach the rows; a refused promotion changes nothing', async () => {
      const store = await openPostgresStore(db.url, { poolMax: 2 });
      try {
        const key = (kid: string, standby: boolean) => ({
          kid,
          purpose: 'partner-jwt' as const,
          createdAt: new Date('2031-01-01T00:00:00Z'),
          retiredAt: null,
          sealed: `sealed-${kid}`,
          standby,
          x5c: null,
        });
        const at = new Date('2031-02-01T00:00:00Z');
        const partner = async () => (await store.keys.list()).filter((k) => k.purpose === 'partner-jwt');
        // No standby key: nothing to promote, nothing changes.
        expect(await store.keys.promoteStandby('partner-jwt', at, async () => 'x')).toBeUndefined();
        const active = (await partner()).find((k) => !k.retiredAt)!;
        const v0 = await store.keys.version();
        await store.keys.addStandby(key('w1', true));
        expect(await store.keys.version()).toBe(v0 + 1);
        await expect(
          store.keys.promoteStandby('partner-jwt', at, async () => {
            throw new Error('refused');
          }),
        ).rejects.toThrow('refused');
        expect(await partner()).toContainEqual({ ...active });
        expect(await store.keys.version()).toBe(v0 + 1);
        // attachChain is for credential-signing keys only, and a refused check leaves the row.
        expect(await store.keys.attachChain('w1', ['AA=='], async () => {})).toBe(false);
        const signing = (await store.keys.list()).find(
          (k) => k.purpose === 'credential-signing' && !k.retiredAt,
        )!;
        await expect(
          store.keys.attachChain(signing.kid, ['AA=='], async () => {
            throw new Error('bad chain');
          }),
        ).rejects.toThrow('bad chain');
        expect(await store.keys.attachChain(signing.kid, ['AA=='], async () => {})).toBe(true);
        expect((await store.keys.list()).find((k) => k.kid === signing.kid)?.x5c).toEqual(['AA==']);
        const promoted = await store.keys.promoteStandby('partner-jwt', at, async ([newest]) => newest!.kid);
        expect(promoted).toEqual({ promoted: 'w1', retired: [active.kid] });
        expect((await partner()).filter((k) => !k.retiredAt)).toEqual([key('w1', false)]);
      } finally {
        await store.close();
      }
    });

    it('a live lease survives another instance starting (makePendingDue); an expired one does not', async () => {
      const store = await openPostgresStore(db.url, { poolMax: 2 });
      try {
        const now = new Date();
        const live = issuance({ revocationNonce: 900_001 });
        const dead = issuance({ revocationNonce: 900_002 });
        for (const n of [live, dead]) await store.issuances.insertIssuance(n, { dedupe: false });
        await store.issuances.leaseUpload(live.credentialId, now, 60_000);
        await store.issuances.leaseUpload(dead.credentialId, new Date(now.getTime() - 120_000), 60_000);
        await store.issuances.makePendingDue(now);
        const taken = await store.issuances.leaseDueUploads(now, 60_000, 10);
        // Only these two: the contract's last test may have left uploads of its own pending.
        const mine = [live.credentialId, dead.credentialId];
        expect(taken.map((r) => r.credentialId).filter((id) => mine.includes(id))).toEqual([
          dead.credentialId,
        ]);
      } finally {
        await store.close();
      }
    });
  });

  describe('migrations', () => {
    it('N instances migrating a fresh database at the same moment apply each migration once', async () => {
      const fresh = await createTempDatabase();
      const pools = Array.from({ length: 6 }, () => new pg.Pool({ connectionString: fresh.url, max: 1 }));
      try {
        const applied = await Promise.all(pools.map((pool) => migrate(pool)));
        const names = readMigrations().map((m) => m.name);
        // Every migration applied by exactly one of them; the others found it done.
        expect(applied.flat().sort()).toEqual([...names].sort());
        const { rows } = await pools[0]!.query<{ name: string; checksum: string }>(
          'SELECT name, checksum FROM schema_migrations ORDER BY version',
        );
        expect(rows).toEqual(readMigrations().map((m) => ({ name: m.name, checksum: m.checksum })));
        expect(await migrate(pools[0]!)).toEqual([]);
      } finally {
        await Promise.all(pools.map((p) => p.end()));
        await fresh.drop();
      }
    });

    it('refuses to start on a database where an applied migration has changed since', async () => {
      const fresh = await createTempDatabase();
      const pool = new pg.Pool({ connectionString: fresh.url, max: 1 });
      try {
        const [first, ...rest] = readMigrations();
        await migrate(pool, [first!]);
        const edited = { ...first!, sql: `${first!.sql}\n-- edited`, checksum: 'f'.repeat(64) };
        await expect(migrate(pool, [edited, ...rest])).rejects.toThrow(/001-core\.sql/);
        // Nothing after the changed one was applied.
        const { rows } = await pool.query('SELECT version FROM schema_migrations');
        expect(rows).toHaveLength(1);
      } finally {
        await pool.end();
        await fresh.drop();
      }
    });
  });
});

/**
 * One multi-statement text that empties every table but schema_migrations (a referencing table
 * before the table it references) and restarts their identity columns.
 */
async function emptyingStatements(pool: pg.Pool): Promise<string> {
  const { rows: tables } = await pool.query<{ name: string }>(
    "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'",
  );
  const { rows: references } = await pool.query<{ child: string; parent: string }>(
    `SELECT c.conrelid::regclass::text AS child, c.confrelid::regclass::text AS parent
       FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
      WHERE c.contype = 'f' AND n.nspname = 'public'`,
  );
  const { rows: identities } = await pool.query<{ table: string; column: string }>(
    `SELECT table_name AS table, column_name AS column FROM information_schema.columns
      WHERE table_schema = 'public' AND is_identity = 'YES'`,
  );
  const order: string[] = [];
  const visit = (name: string) => {
    if (order.includes(name)) return;
    for (const r of references) if (r.parent === name && r.child !== name) visit(r.child);
    order.push(name);
  };
  for (const t of tables) visit(t.name);
  return [
    ...order.map((t) => `DELETE FROM ${t};`),
    ...identities.map((i) => `ALTER TABLE ${i.table} ALTER COLUMN ${i.column} RESTART;`),
  ].join('\n');
}
