import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateBjjKey } from '../../../../src/formats/iden3-bjj/bjj-key.js';
import {
  Iden3BjjIssuer,
  type Iden3BjjIssuerOptions,
} from '../../../../src/formats/iden3-bjj/iden3-bjj-issuer.js';
import { IssuerUrls } from '../../../../src/identity/issuer-identity.js';
import { openSqlite, type SqliteDatabase } from '../../../../src/store/sqlite/database.js';
import { sqliteIden3Store } from '../../../../src/store/sqlite/index.js';
import { SCHEMAS_DIR } from './fixtures.js';

// docs/several-instances.md "Storage engines": the trees and states live in SQLite; reopening the same database with the same key
// gives the same identity.

describe('Iden3 identity persistence', () => {
  let dir: string;
  let dbFile: string;
  let keysDir: string;
  const open: SqliteDatabase[] = [];

  function openDb(): SqliteDatabase {
    const db = openSqlite(dbFile);
    open.push(db);
    return db;
  }

  function options(db: SqliteDatabase, extra: Partial<Iden3BjjIssuerOptions> = {}): Iden3BjjIssuerOptions {
    return {
      store: sqliteIden3Store(db),
      keysDir,
      generateKeyIfMissing: false,
      urls: new IssuerUrls('https://issuer.example'),
      schemasDir: SCHEMAS_DIR,
      ...extra,
    };
  }

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'iden3-persist-'));
    dbFile = join(dir, 'issuer.db');
    keysDir = join(dir, 'keys');
    await generateBjjKey(keysDir);
  });

  afterEach(() => {
    for (const db of open.splice(0)) if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reopens with the same DID, roots and revocations', async () => {
    const db1 = openDb();
    const first = await Iden3BjjIssuer.open(options(db1));
    const genesis = first.genesisState();
    expect(await first.latestState()).toEqual(genesis);
    const { state } = await first.revoke(4242);
    const revokedStatus = await first.credentialStatus(4242);
    db1.close();

    const db2 = openDb();
    const second = await Iden3BjjIssuer.open(options(db2));
    expect(second.did).toBe(first.did);
    expect(second.genesisState()).toEqual(genesis);
    expect((await second.latestState()).state).toBe(state);
    expect(await second.credentialStatus(4242)).toEqual(revokedStatus);
    expect((await second.credentialStatus(4242)).mtp.existence).toBe(true);
    expect((await second.revoke(4242)).alreadyRevoked).toBe(true);

    // Later revocations extend the persisted tree.
    await second.revoke(4343);
    db2.close();
    const third = await Iden3BjjIssuer.open(options(openDb()));
    expect((await third.credentialStatus(4242)).mtp.existence).toBe(true);
    expect((await third.credentialStatus(4343)).mtp.existence).toBe(true);
    expect((await third.credentialStatus(4444)).mtp.existence).toBe(false);
  });

  it('records genesis and every later state with its roots', async () => {
    const db = openDb();
    const issuer = await Iden3BjjIssuer.open(options(db));
    await issuer.revoke(1);
    await issuer.revoke(2);
    const rows = db
      .prepare('SELECT state, change, revocation_nonce, revocation_tree_root FROM iden3_states ORDER BY id')
      .all() as Array<{
      state: string;
      change: string;
      revocation_nonce: number | null;
      revocation_tree_root: string;
    }>;
    expect(rows.map((r) => [r.change, r.revocation_nonce])).toEqual([
      ['genesis', null],
      ['revocation', 1],
      ['revocation', 2],
    ]);
    expect(rows[0]!.revocation_tree_root).toBe('0'.repeat(64));
    expect(rows[2]!.state).toBe((await issuer.latestState()).state);
  });

  it('keeps every revocation when two connections (as two processes would) revoke at once', async () => {
    const a = await Iden3BjjIssuer.open(options(openDb()));
    const b = await Iden3BjjIssuer.open(options(openDb()));
    expect(b.did).toBe(a.did);
    // No shared in-process queue between connections: the second writer finds a newer state in
    // its IMMEDIATE transaction and recomputes from it.
    const nonces = [11, 12, 13, 14, 15, 16];
    await Promise.all(nonces.map((n, i) => (i % 2 === 0 ? a : b).revoke(n)));
    for (const n of nonces) {
      expect((await a.credentialStatus(n)).mtp.existence).toBe(true);
      expect((await b.credentialStatus(n)).mtp.existence).toBe(true);
    }
    expect(await a.latestState()).toEqual(await b.latestState());
  });

  it('refuses another key for the same database', async () => {
    const db = openDb();
    const issuer = await Iden3BjjIssuer.open(options(db));
    const otherKeys = join(dir, 'other-keys');
    await generateBjjKey(otherKeys);
    await expect(Iden3BjjIssuer.open(options(db, { keysDir: otherKeys }))).rejects.toThrow(
      `this key is not the key of the Iden3 identity ${issuer.did}`,
    );
  });

  it('refuses DID options that would rename the recorded identity', async () => {
    const db = openDb();
    await Iden3BjjIssuer.open(options(db));
    await expect(
      Iden3BjjIssuer.open(options(db, { didMethod: 'polygonid', blockchain: 'polygon', network: 'amoy' })),
    ).rejects.toThrow('but the database holds');
  });

  it('builds DIDs for other known networks, and custom ones only with explicit bytes', async () => {
    const amoy = await Iden3BjjIssuer.open(
      options(openDb(), { didMethod: 'polygonid', blockchain: 'polygon', network: 'amoy' }),
    );
    expect(amoy.did).toMatch(/^did:polygonid:polygon:amoy:/);

    const fresh = () => {
      const db = openSqlite(':memory:');
      open.push(db);
      return db;
    };
    const custom = { didMethod: 'iden3', blockchain: 'kitchain', network: 'devnet' };
    await expect(Iden3BjjIssuer.open(options(fresh(), custom))).rejects.toThrow(
      'Iden3 DID iden3:kitchain:devnet (IDEN3_METHOD, IDEN3_BLOCKCHAIN, IDEN3_NETWORK) is not known',
    );
    const registered = await Iden3BjjIssuer.open(options(fresh(), { ...custom, networkFlag: 0b0111_0111 }));
    expect(registered.did).toMatch(/^did:iden3:kitchain:devnet:/);
  });
});
