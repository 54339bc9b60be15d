import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateBjjKey } from '../../src/issuers/iden3/bjj-key.js';
import { databaseBjjKey } from '../../src/issuers/iden3/database-bjj-key.js';
import { silentLogger } from '../../src/observability/logger.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js';
import { removeDir, tempDir } from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

const available = await postgresAvailable('the PostgreSQL key tests');
const kek = Buffer.alloc(32, 0x3c);

const options = (keysDir: string, generateIfMissing = true) => ({
  keysDir,
  generateIfMissing,
  kek,
  log: silentLogger(),
});

// Issue 9 "Keys": the Iden3 BJJ key lives in the database on PostgreSQL, sealed like the signing
// keys, so instances without a shared disk serve one issuer DID.
describe.skipIf(!available)('the Iden3 BJJ key in PostgreSQL', () => {
  let db: TempDatabase;
  const stores: PostgresStore[] = [];
  const dir = tempDir();
  const open = async () => {
    const store = await openPostgresStore(db.url, { poolMax: 2 });
    stores.push(store);
    return store;
  };

  beforeAll(async () => {
    db = await createTempDatabase();
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await db?.drop();
    removeDir(dir);
  });

  it('first starts at the same moment with different empty KEYS_DIRs agree on one key, and write no file', async () => {
    const three = await Promise.all([open(), open(), open()]);
    const dirs = three.map((_, n) => join(dir, `empty-${n}`));
    const keys = await Promise.all(three.map((s, n) => databaseBjjKey(s.keys, s.iden3, options(dirs[n]!))));
    expect(new Set(keys.map((k) => k.publicKeyHex)).size).toBe(1);
    const stored = await three[0]!.keys.iden3Key();
    expect(stored?.publicKey).toBe(keys[0]!.publicKeyHex);
    const { rows } = await three[0]!.pool.query<{ n: string }>('SELECT count(*) AS n FROM iden3_key');
    expect(Number(rows[0]!.n)).toBe(1);
    for (const d of dirs) expect(existsSync(join(d, 'iden3-bjj.json'))).toBe(false);
    // Another KEY_ENCRYPTION_KEY does not open it, and says which variable.
    await expect(
      databaseBjjKey(three[1]!.keys, three[1]!.iden3, { ...options(dirs[1]!), kek: Buffer.alloc(32, 1) }),
    ).rejects.toThrow(/^database:[0-9a-f]{64}: sealed: does not open with this KEY_ENCRYPTION_KEY/);
  });

  it('production with neither a row nor KEYS_DIR/iden3-bjj.json refuses, naming the file', async () => {
    const fresh = await createTempDatabase();
    const store = await openPostgresStore(fresh.url, { poolMax: 1 });
    try {
      const keysDir = join(dir, 'prod-empty');
      await expect(databaseBjjKey(store.keys, store.iden3, options(keysDir, false))).rejects.toThrow(
        `${join(keysDir, 'iden3-bjj.json')}: Iden3 key file is missing and the database holds no Iden3 key`,
      );
      expect(await store.keys.iden3Key()).toBeUndefined();
      // The file `keys generate` writes is imported as it is.
      const generated = await generateBjjKey(keysDir);
      const key = await databaseBjjKey(store.keys, store.iden3, options(keysDir, false));
      expect(key.publicKeyHex).toBe(generated.publicKeyHex);
      expect((await store.keys.iden3Key())?.publicKey).toBe(generated.publicKeyHex);
    } finally {
      await store.close();
      await fresh.drop();
    }
  });

  it('a database holding an identity without its key (a db copy) takes only that identity key', async () => {
    const fresh = await createTempDatabase();
    const store = await openPostgresStore(fresh.url, { poolMax: 1 });
    try {
      const own = join(dir, 'copied-own');
      const other = join(dir, 'copied-other');
      const identityKey = await generateBjjKey(own);
      await generateBjjKey(other);
      await store.pool.query(
        "INSERT INTO iden3_identity (id, did, public_key, auth_claim, created_at) VALUES (1, 'did:iden3:copied', $1, 'x', 'now')",
        [identityKey.publicKeyHex],
      );
      const empty = join(dir, 'copied-empty');
      mkdirSync(empty);
      // Even in development, no key is generated next to an identity.
      await expect(databaseBjjKey(store.keys, store.iden3, options(empty))).rejects.toThrow(
        /holds the Iden3 identity did:iden3:copied but not its key/,
      );
      await expect(databaseBjjKey(store.keys, store.iden3, options(other))).rejects.toThrow(
        /this key is not the key of the Iden3 identity did:iden3:copied/,
      );
      expect(await store.keys.iden3Key()).toBeUndefined();
      const key = await databaseBjjKey(store.keys, store.iden3, options(own));
      expect(key.publicKeyHex).toBe(identityKey.publicKeyHex);
    } finally {
      await store.close();
      await fresh.drop();
    }
  });
});
