import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenedStore } from '../../src/store/engines.js';
import type { NewIssuance } from '../../src/store/store.js';
import { type Namespaces, openNamespaces } from '../../src/tenancy/namespaces.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

const available = await postgresAvailable('the tenants schema pool tests');

let nonce = 1;
function hosted(id: string, holderDid: string): NewIssuance {
  const createdAt = new Date();
  const expiresAt = new Date(createdAt.getTime() + 86_400_000);
  return {
    credentialId: id,
    channel: 'hosted',
    userId: 'u',
    holderDid,
    schemaId: 'membership-v1',
    proofType: 'SD_JWT_VC',
    revocationNonce: nonce++,
    statusSlot: null,
    subjectHash: 'subject',
    kid: 'k',
    createdAt,
    expiresAt,
    envelope: {
      holderDid,
      schemaId: 'membership-v1',
      expiresAt: expiresAt.toISOString(),
      data: 'ZGF0YQ==',
      iv: 'aXY=',
      authTag: 'dGFn',
      encryptedKey: 'a2V5',
      externalId: id,
    },
  };
}

// docs/several-issuers.md "Where the data lives": the hot statements of a tenant's issuance (the
// live-duplicate lookup and record_issuances) name the tenant's schema and run on whichever
// connection of the shared pool is free, whatever search_path another tenant left on it. With one
// connection, tenant B's read leaves B's path on it before each of A's writes and lookups.
describe.skipIf(!available)('tenants on one shared pool: statements that name their schema', () => {
  let db: TempDatabase;
  let namespaces: Namespaces;
  let a: OpenedStore;
  let b: OpenedStore;
  let look: pg.Client;

  beforeAll(async () => {
    db = await createTempDatabase();
    namespaces = await openNamespaces(
      { database: { poolMax: 1 } } as never,
      { database: { kind: 'postgres', url: db.url } } as never,
      { info() {}, warn() {}, error() {}, debug() {} } as never,
    );
    a = await namespaces.open(namespaces.nameFor('a'));
    b = await namespaces.open(namespaces.nameFor('b'));
    look = new pg.Client({ connectionString: db.url });
    await look.connect();
  }, 120_000);

  afterAll(async () => {
    await look?.end();
    await a?.close();
    await b?.close();
    await namespaces?.close();
    await db?.drop();
  });

  const idsIn = async (schema: string) =>
    (
      await look.query<{ id: string }>(`SELECT credential_id AS id FROM ${schema}.issuances ORDER BY 1`)
    ).rows.map((r) => r.id);

  it("writes and finds A's issuances in A's schema after B's statements set B's path", async () => {
    const holder = `did:example:${randomUUID()}`;
    const first = `a-${randomUUID()}`;
    await b.issuances.get('none');
    expect((await a.issuances.insertIssuance(hosted(first, holder), { dedupe: true })).kind).toBe('inserted');
    await b.issuances.get('none');
    const duplicate = await a.issuances.findLiveDuplicate({
      holderDid: holder,
      schemaId: 'membership-v1',
      proofType: 'SD_JWT_VC',
      subjectHash: 'subject',
      now: new Date(),
    });
    expect(duplicate?.credentialId).toBe(first);
    await b.issuances.get('none');
    // A second hosted issuance of the same holder, schema and claims is A's duplicate, not a new row.
    const again = await a.issuances.insertIssuance(hosted(`a-${randomUUID()}`, holder), { dedupe: true });
    expect(again.kind).toBe('duplicate');
    await b.issuances.get('none');
    await a.issuances.markUploaded(first, '/vcs/first', new Date());

    expect(await idsIn('tenant_a')).toEqual([first]);
    expect(await idsIn('tenant_b')).toEqual([]);
    expect((await a.issuances.get(first))?.uploadState).toBe('uploaded');
    // B sees none of it through its own store either.
    expect(await b.issuances.get(first)).toBeUndefined();
    const b1 = await b.issuances.findLiveDuplicate({
      holderDid: holder,
      schemaId: 'membership-v1',
      proofType: 'SD_JWT_VC',
      subjectHash: 'subject',
      now: new Date(),
    });
    expect(b1).toBeUndefined();
  });

  it("commits two tenants' writes of one turn in one transaction, each in its own schema", async () => {
    await look.query(`
      CREATE TABLE IF NOT EXISTS public.tx_seen (schema TEXT, credential_id TEXT, txid BIGINT);
      CREATE OR REPLACE FUNCTION public.note_tx() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO public.tx_seen VALUES (TG_TABLE_SCHEMA, NEW.credential_id, txid_current()); RETURN NEW; END $$;
      CREATE OR REPLACE TRIGGER note_tx AFTER INSERT ON tenant_a.issuances FOR EACH ROW EXECUTE FUNCTION public.note_tx();
      CREATE OR REPLACE TRIGGER note_tx AFTER INSERT ON tenant_b.issuances FOR EACH ROW EXECUTE FUNCTION public.note_tx();`);
    const ids = { a: `a-${randomUUID()}`, b: `b-${randomUUID()}` };
    const [fromA, fromB] = await Promise.all([
      a.issuances.insertIssuance(hosted(ids.a, `did:example:${randomUUID()}`), { dedupe: true }),
      b.issuances.insertIssuance(hosted(ids.b, `did:example:${randomUUID()}`), { dedupe: true }),
    ]);
    expect([fromA.kind, fromB.kind]).toEqual(['inserted', 'inserted']);
    const { rows } = await look.query<{ schema: string; txid: string }>(
      'SELECT schema, txid FROM public.tx_seen WHERE credential_id = ANY($1) ORDER BY schema',
      [[ids.a, ids.b]],
    );
    expect(rows.map((r) => r.schema)).toEqual(['tenant_a', 'tenant_b']);
    expect(rows[0]!.txid).toBe(rows[1]!.txid);
    expect(await idsIn('tenant_a')).toContain(ids.a);
    expect(await idsIn('tenant_a')).not.toContain(ids.b);
    expect(await idsIn('tenant_b')).toEqual([ids.b]);
  });

  it("keeps a statement error of one tenant's write from the other tenant's of the same turn", async () => {
    const signature = 'jsonb, text[], text[], timestamptz[], text[], text[], text[]';
    await look.query(
      `ALTER FUNCTION tenant_b.record_issuances(${signature}) RENAME TO record_issuances_away`,
    );
    try {
      const id = `a-${randomUUID()}`;
      const [fromA, fromB] = await Promise.allSettled([
        a.issuances.insertIssuance(hosted(id, `did:example:${randomUUID()}`), { dedupe: true }),
        b.issuances.insertIssuance(hosted(`b-${randomUUID()}`, `did:example:${randomUUID()}`), {
          dedupe: true,
        }),
      ]);
      expect(fromA).toMatchObject({ status: 'fulfilled', value: { kind: 'inserted' } });
      // B's own error, as PostgreSQL gave it: the function is not there.
      expect(fromB).toMatchObject({ status: 'rejected', reason: { code: '42883' } });
      expect(await idsIn('tenant_a')).toContain(id);
    } finally {
      await look.query(
        `ALTER FUNCTION tenant_b.record_issuances_away(${signature}) RENAME TO record_issuances`,
      );
    }
  });

  it('keeps each schema’s record functions on that schema’s path, on generic plans', async () => {
    // The live definitions (functions/*.sql); migration 023's older record_issuances stays beside them.
    const { rows } = await look.query<{ schema: string; name: string; config: string[] | null }>(
      `SELECT n.nspname AS schema, p.proname AS name, p.proconfig AS config FROM pg_proc p
         JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname IN ('tenant_a', 'tenant_b')
          AND ((p.proname = 'record_issuances' AND pg_get_function_identity_arguments(p.oid) LIKE '%p_mark_event_ids%')
            OR (p.proname = 'record_issuance' AND pg_get_function_identity_arguments(p.oid) LIKE '%p_renewed_from%'))
        ORDER BY 1, 2`,
    );
    expect(rows).toEqual(
      ['tenant_a', 'tenant_b'].flatMap((schema) =>
        ['record_issuance', 'record_issuances'].map((name) => ({
          schema,
          name,
          config: [`search_path=${schema}`, 'plan_cache_mode=force_generic_plan'],
        })),
      ),
    );
  });
});
