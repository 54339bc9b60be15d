import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBjjKeyFile } from '../../src/formats/iden3-bjj/bjj-key.js';
import { COPIED_TABLES, POSTGRES_ONLY_TABLES } from '../../src/store/copy-database-tables.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openSqlite, runMigrations } from '../../src/store/sqlite/database.js';
import { fetchList, holder, type IssuedSdJwt, issueOverHttp } from '../fixtures/status.js';
import { runCli } from '../helpers/cli.js';
import { queryStore, removeDir, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';
import { holderIden3Did } from '../unit/formats/iden3-bjj/fixtures.js';

const available = await postgresAvailable('the db copy tests');
const KEK = 'b2'.repeat(32);
const CLAIMS = { givenName: 'Co', familyName: 'Py', memberSince: '2021-03-04', tier: 'gold' };

const cli = (args: string[], cwd: string) => runCli(args, {}, cwd);

const json = async (url: string) => {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return res.json();
};

// docs/several-instances.md "Copying a SQLite deployment": a SQLite deployment copied into PostgreSQL by
// `npm run admin -- db copy`, then served by an issuer on the copy.
describe.skipIf(!available)('db copy: SQLite deployment into PostgreSQL', () => {
  const dir = tempDir();
  const sqliteUrl = `sqlite:${join(dir, 'issuer.db')}`;
  let pg: TempDatabase;
  let onSqlite: TestIssuer;
  let onPostgres: TestIssuer | undefined;
  const sdJwt: IssuedSdJwt[] = [];
  const bjjNonces: number[] = [];
  const before: Record<string, unknown> = {};
  let directId = '';
  /** Delivered, then queued again by hand: pending on SQLite without an envelope. */
  let requeuedId = '';

  const issueBjj = async (issuer: TestIssuer, n: bigint) => {
    const res = await issuer.post('/issue-vc', {
      holderDID: holderIden3Did(n),
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
      proofType: 'BJJ_SIG_2021',
    });
    expect(res.status).toBe(201);
    const rows = await queryStore<{ revocation_nonce: number | string }>(
      issuer.ctx.store,
      'SELECT revocation_nonce FROM issuances WHERE holder_did = ?',
      [holderIden3Did(n)],
    );
    expect(rows).toHaveLength(1);
    return Number(rows[0]!.revocation_nonce);
  };

  beforeAll(async () => {
    pg = await createTempDatabase();
    // The same KEY_ENCRYPTION_KEY as the copy's server: the recipient sealed for renewal opens there.
    onSqlite = await startIssuer({ dir, env: { DATABASE_URL: sqliteUrl, KEY_ENCRYPTION_KEY: KEK } });
    const imported = await onSqlite.admin('/admin/claims', {
      records: [0, 1, 2].map((n) => ({
        userId: `copy-${n}`,
        schemaId: 'membership-v1',
        claims: { ...CLAIMS, memberNumber: n + 1 },
      })),
    });
    expect(imported.status).toBe(200);
    // An endpoint (nothing listens there): the changes below write webhook events, and SQLite's
    // key of a credential's events (its issuance's created_at) is checked against PostgreSQL's.
    const hook = await onSqlite.admin('/admin/webhooks', { url: 'http://127.0.0.1:9/hooks', events: ['*'] });
    expect(hook.status).toBe(201);
    for (const n of [0, 1, 2]) sdJwt.push(await issueOverHttp(onSqlite, `copy-${n}`));
    bjjNonces.push(await issueBjj(onSqlite, 901n), await issueBjj(onSqlite, 902n));
    // A direct issuance: its email hash and meta's HMAC key travel, so `history --email` still finds it.
    const direct = await onSqlite.admin('/admin/issue-vc', {
      userId: 'copy.direct@example.org',
      schemaId: 'membership-v1',
      vct: 'urn:vct:membership-v1',
      expiration: new Date(Date.now() + 86400_000).toISOString(),
      credentialSubject: { ...CLAIMS, memberNumber: 9 },
    });
    expect(direct.status).toBe(201);
    directId = ((await direct.json()) as { credentialId: string }).credentialId;
    for (const nonce of [sdJwt[1]!.nonce, String(bjjNonces[0])])
      expect((await onSqlite.admin('/admin/revoke', { revocationNonce: nonce })).status).toBe(200);
    for (const nonce of [sdJwt[1]!.nonce, sdJwt[0]!.nonce])
      before[`rev-${nonce}`] = await json(`${onSqlite.url}/revocation-status/${nonce}`);
    for (const nonce of bjjNonces)
      before[`cs-${nonce}`] = await json(`${onSqlite.url}/credential-status/${nonce}`);
    before.did = onSqlite.ctx.iden3Did();
    before.signingKid = onSqlite.ctx.keys.current().signing.kid;
    const [requeued] = await queryStore<{ credential_id: string }>(
      onSqlite.ctx.store,
      'SELECT credential_id FROM issuances WHERE revocation_nonce = ?',
      [sdJwt[2]!.nonce],
    );
    requeuedId = requeued!.credential_id;
    await onSqlite.close();
    // Queued again by hand once the server has stopped; its mark deleted its envelope.
    const sqlite = openSqlite(join(dir, 'issuer.db'));
    sqlite
      .prepare("UPDATE issuances SET upload_state = 'pending', next_attempt_at = ? WHERE credential_id = ?")
      .run(Date.now(), requeuedId);
    sqlite.close();
  });
  afterAll(async () => {
    await onPostgres?.close();
    await pg?.drop();
    removeDir(dir);
  });

  it('copies every table, printing a verified line per table, and refuses a second copy', async () => {
    const run = await cli(['db', 'copy', '--from', sqliteUrl, '--to', pg.url], dir);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    for (const { table } of COPIED_TABLES)
      expect(lines).toContainEqual(
        expect.stringMatching(new RegExp(`^${table}: \\d+ rows, sha256 [0-9a-f]{64}, ok(; .+)?$`)),
      );
    // The requeued upload has no envelope on SQLite: PostgreSQL's outbox gets a row for it.
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^issuance_envelopes: 0 rows, sha256 [0-9a-f]{64}, ok; 1 added \(uploads without an envelope, for the outbox\)$/,
      ),
    );
    const count = (table: string) => Number(lines.find((l) => l.startsWith(`${table}:`))!.split(' ')[1]);
    expect(count('issuances')).toBe(6);
    expect(count('webhook_events')).toBeGreaterThanOrEqual(8); // six issued, two revoked
    expect(count('renewals')).toBe(1); // the direct issuance's sealed recipient
    expect(count('claims')).toBeGreaterThanOrEqual(3);
    expect(count('iden3_tree_nodes')).toBeGreaterThan(0);
    expect(count('iden3_states')).toBe(2); // genesis and the one revocation
    expect(count('audit_log')).toBeGreaterThanOrEqual(3); // claims.import and two revocations
    expect(run.stdout).toContain('KEY_ENCRYPTION_KEY');

    const again = await cli(['db', 'copy', '--from', sqliteUrl, '--to', pg.url], dir);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/target database is not empty \(rows in meta, issuances/);
  });

  it('an issuer on the copy serves the same statuses and proofs, and issues without collisions', async () => {
    let requeuedDone: Promise<unknown> | undefined;
    onPostgres = await startIssuer({
      dir,
      port: Number(new URL(onSqlite.url).port),
      env: { DATABASE_URL: pg.url, KEY_ENCRYPTION_KEY: KEK },
      exampleClaimsFile: '',
      beforeServe: (ctx) => {
        requeuedDone = new Promise((resolve) =>
          ctx.outbox.on('uploaded', (record) => record.credentialId === requeuedId && resolve(record)),
        );
      },
    });
    // The outbox of the copy finishes the requeued upload: delivered once, so marked uploaded again.
    await requeuedDone;
    expect(await onPostgres.ctx.store.issuances.get(requeuedId)).toMatchObject({ uploadState: 'uploaded' });
    expect(await onPostgres.ctx.store.issuances.countPendingUploads()).toBe(0);
    const url = onPostgres.url;
    expect(url).toBe(onSqlite.url);
    // The keys SQLite kept as files are in the target now, sealed: the Iden3 key under the copied
    // identity (same DID), the signing key with its kid.
    const bjjFile = await readBjjKeyFile(join(dir, 'keys'));
    expect(
      await queryStore<{ public_key: string }>(onPostgres.ctx.store, 'SELECT public_key FROM iden3_key'),
    ).toEqual([{ public_key: bjjFile!.key.publicKeyHex }]);
    expect(onPostgres.ctx.iden3Did()).toBe(before.did);
    const kids = await queryStore<{ kid: string }>(
      onPostgres.ctx.store,
      "SELECT kid FROM issuer_keys WHERE purpose = 'credential-signing' AND retired_at IS NULL",
    );
    expect(kids).toEqual([{ kid: before.signingKid }]);
    for (const nonce of [sdJwt[1]!.nonce, sdJwt[0]!.nonce])
      expect(await json(`${url}/revocation-status/${nonce}`)).toEqual(before[`rev-${nonce}`]);
    for (const nonce of bjjNonces)
      expect(await json(`${url}/credential-status/${nonce}`)).toEqual(before[`cs-${nonce}`]);
    const byEmail = await onPostgres.admin('/admin/issuance-history?email=Copy.Direct%40example.org');
    expect(((await byEmail.json()) as { data: Array<{ credentialId: string }> }).data).toEqual([
      expect.objectContaining({ credentialId: directId }),
    ]);
    // docs/operations.md "Renewal": the sealed recipient travelled, and opens under the same key.
    const { userId } = (await onPostgres.ctx.store.issuances.get(directId))!;
    await onPostgres.ctx.store.claims.upsertClaims([
      { userId, schemaId: 'membership-v1', claims: { ...CLAIMS, memberNumber: 10 }, expiresAt: null },
    ]);
    const renewed = await onPostgres.admin('/admin/renew', { credentialId: directId, reason: 'copied' });
    expect(renewed.status).toBe(201);
    expect(((await renewed.json()) as { renewedFrom: string }).renewedFrom).toBe(directId);
    const list = await fetchList(sdJwt[1]!.uri);
    expect(list.list.getStatus(sdJwt[1]!.idx)).toBe(1);
    expect(list.list.getStatus(sdJwt[0]!.idx)).toBe(0);

    // New issuances on the copy: fresh nonces and status slots, and the Iden3 tree continues.
    const imported = await onPostgres.admin('/admin/claims', {
      records: [3, 4].map((n) => ({
        userId: `copy-${n}`,
        schemaId: 'membership-v1',
        claims: { ...CLAIMS, memberNumber: n + 1 },
      })),
    });
    expect(imported.status).toBe(200);
    const fresh = [await issueOverHttp(onPostgres, 'copy-3'), await issueOverHttp(onPostgres, 'copy-4')];
    const freshBjj = await issueBjj(onPostgres, 903n);
    const nonces = [...sdJwt, ...fresh].map((i) => i.nonce).concat([...bjjNonces, freshBjj].map(String));
    expect(new Set(nonces).size).toBe(nonces.length);
    const slots = [...sdJwt, ...fresh].map((i) => `${i.partition}/${i.idx}`);
    expect(new Set(slots).size).toBe(slots.length);
    expect((await onPostgres.admin('/admin/revoke', { revocationNonce: String(freshBjj) })).status).toBe(200);
    const proof = (await json(`${url}/credential-status/${freshBjj}`)) as { mtp: { existence: boolean } };
    expect(proof.mtp.existence).toBe(true);
    const states = await queryStore<{ id: string }>(
      onPostgres.ctx.store,
      'SELECT id FROM iden3_states ORDER BY id',
    );
    expect(states.map((s) => Number(s.id))).toEqual([1, 2, 3]);
  });
});

describe.skipIf(!available)('db copy refusals', () => {
  it('refuses a missing or non-SQLite source, pending migrations and an unmapped table', async () => {
    const dir = tempDir();
    try {
      const pg = await createTempDatabase();
      try {
        const run = await cli(
          ['db', 'copy', '--from', `sqlite:${join(dir, 'none.db')}`, '--to', pg.url],
          dir,
        );
        expect(run.code).toBe(1);
        expect(run.stderr).toMatch(/--from: no database at/);
        const wrong = await cli(['db', 'copy', '--from', pg.url, '--to', pg.url], dir);
        expect(wrong.stderr).toMatch(/--from must be a sqlite:<path> database/);

        // A source one migration behind this version: refused, naming the pending migration.
        const migrations = join(process.cwd(), 'src/store/sqlite/migrations');
        const older = join(dir, 'older-migrations');
        mkdirSync(older);
        const files = readdirSync(migrations)
          .filter((f) => f.endsWith('.sql'))
          .sort();
        for (const f of files.slice(0, -1)) copyFileSync(join(migrations, f), join(older, f));
        const behind = openSqlite(join(dir, 'behind.db'), { migrate: false });
        runMigrations(behind, older);
        behind.close();
        const pending = await cli(
          ['db', 'copy', '--from', `sqlite:${join(dir, 'behind.db')}`, '--to', pg.url],
          dir,
        );
        expect(pending.code).toBe(1);
        expect(pending.stderr).toContain(`pending migrations (${files.at(-1)})`);

        // A table neither engine's map names: refused, naming it; the target stays empty.
        const extra = openSqlite(join(dir, 'extra.db'));
        extra.exec('CREATE TABLE local_notes (id INTEGER PRIMARY KEY)');
        extra.close();
        const unmapped = await cli(
          ['db', 'copy', '--from', `sqlite:${join(dir, 'extra.db')}`, '--to', pg.url],
          dir,
        );
        expect(unmapped.code).toBe(1);
        expect(unmapped.stderr).toMatch(/table local_notes of the SQLite database has no PostgreSQL mapping/);
      } finally {
        await pg.drop();
      }
    } finally {
      removeDir(dir);
    }
  });
});

// A copy that fails halfway or does not verify leaves the target as it found it (one transaction).
describe.skipIf(!available)('db copy failures roll back', () => {
  const dir = tempDir();
  const sqliteUrl = `sqlite:${join(dir, 'issuer.db')}`;
  let pg: TempDatabase;
  let target: Awaited<ReturnType<typeof openPostgresStore>>;

  beforeAll(async () => {
    const source = await startIssuer({ dir, env: { DATABASE_URL: sqliteUrl } });
    const issued = await issueOverHttp(source, 'demo-user-1');
    const bjj = await source.post('/issue-vc', {
      holderDID: holderIden3Did(911n),
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
      proofType: 'BJJ_SIG_2021',
    });
    expect(bjj.status).toBe(201);
    expect((await source.admin('/admin/revoke', { revocationNonce: issued.nonce })).status).toBe(200);
    await source.close();
    pg = await createTempDatabase();
    // Migrated ahead (as `db:migrate` does), so the tests can put a trigger on a table.
    target = await openPostgresStore(pg.url, { poolMax: 1 });
  });
  afterAll(async () => {
    await target?.close();
    await pg?.drop();
    removeDir(dir);
  });

  const rowsLeft = async () => {
    const tables = [...COPIED_TABLES.map((t) => t.table), ...Object.keys(POSTGRES_ONLY_TABLES)].filter(
      (t) => t !== 'key_ring_version',
    );
    const counts: Record<string, number> = {};
    for (const table of tables) {
      const { rows } = await target.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
      if (Number(rows[0]!.n) > 0) counts[table] = Number(rows[0]!.n);
    }
    return counts;
  };

  it('a table that does not verify: exit 1 naming it, and the tables copied before it are gone too', async () => {
    // Something on the target changes what is written (here a trigger): the checksum catches it.
    await target.pool.query(`
      CREATE FUNCTION alter_reason() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN NEW.reason := coalesce(NEW.reason, '') || ' (altered)'; RETURN NEW; END $$;
      CREATE TRIGGER alter_reason BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION alter_reason();`);
    const run = await cli(['db', 'copy', '--from', sqliteUrl, '--to', pg.url], dir);
    await target.pool.query('DROP TRIGGER alter_reason ON audit_log; DROP FUNCTION alter_reason()');
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      /^audit_log: \d+ rows, sha256 [0-9a-f]{64}, MISMATCH: sha256 SQLite [0-9a-f]{64}, PostgreSQL [0-9a-f]{64}$/m,
    );
    expect(run.stdout).toMatch(/^issuances: \d+ rows, sha256 [0-9a-f]{64}, ok$/m);
    expect(run.stderr).toContain(
      'db copy: verification failed (audit_log); rolled back, the target database is unchanged',
    );
    expect(run.stdout).not.toContain('committed');
    expect(await rowsLeft()).toEqual({});
  });

  it('rows without a body the copy did not add: exit 1 naming issuance_envelopes', async () => {
    // Verification leaves the envelopes' rows with a NULL body out of the checksum, as the copy's
    // own: a row of that kind it did not add (here a trigger's, for a delivered upload) is caught.
    await target.pool.query(`
      CREATE FUNCTION add_bare_envelope() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO issuance_envelopes (credential_id, body) VALUES (NEW.credential_id, NULL); RETURN NEW; END $$;
      CREATE TRIGGER add_bare_envelope AFTER INSERT ON issuances FOR EACH ROW
        WHEN (NEW.upload_state = 'uploaded') EXECUTE FUNCTION add_bare_envelope();`);
    const run = await cli(['db', 'copy', '--from', sqliteUrl, '--to', pg.url], dir);
    await target.pool.query('DROP TRIGGER add_bare_envelope ON issuances; DROP FUNCTION add_bare_envelope()');
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      /^issuance_envelopes: \d+ rows, sha256 [0-9a-f]{64}, MISMATCH: PostgreSQL [1-9]\d* rows where t\.body IS NULL, the copy added 0$/m,
    );
    expect(run.stderr).toContain(
      'db copy: verification failed (issuance_envelopes); rolled back, the target database is unchanged',
    );
    expect(await rowsLeft()).toEqual({});
  });

  it('a write that fails midway: exit 1 naming the table, and the target stays empty', async () => {
    await target.pool.query(`
      CREATE FUNCTION refuse_node() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'no space left (simulated)'; END $$;
      CREATE TRIGGER refuse_node BEFORE INSERT ON iden3_tree_nodes FOR EACH ROW EXECUTE FUNCTION refuse_node();`);
    const run = await cli(['db', 'copy', '--from', sqliteUrl, '--to', pg.url], dir);
    await target.pool.query('DROP TRIGGER refuse_node ON iden3_tree_nodes; DROP FUNCTION refuse_node()');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'db copy: copying iden3_tree_nodes failed (no space left (simulated)); rolled back, the target database is unchanged',
    );
    expect(await rowsLeft()).toEqual({});

    // Nothing to clean up before the next attempt: it copies and verifies every table.
    const again = await cli(['db', 'copy', '--from', sqliteUrl, '--to', pg.url], dir);
    expect(again.code).toBe(0);
    expect(Object.keys(await rowsLeft())).toEqual(
      expect.arrayContaining(['issuances', 'iden3_tree_nodes', 'audit_log']),
    );
  });
});
