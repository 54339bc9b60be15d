import { spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDevChain } from '../../src/cli/key-certificates.js';
import { generateMissingKeys } from '../../src/cli/keys.js';
import { generateBjjKey } from '../../src/formats/iden3-bjj/bjj-key.js';
import { databaseBjjKey } from '../../src/formats/iden3-bjj/database-bjj-key.js';
import { Iden3Identity } from '../../src/formats/iden3-bjj/identity.js';
import { chainProblems } from '../../src/keys/certificates.js';
import { silentLogger } from '../../src/observability/logger.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js';
import { runCli } from '../helpers/cli.js';
import { entryArgs } from '../helpers/entry.js';
import {
  removeDir,
  startIssuer,
  TEST_ADMIN_API_KEY,
  TEST_API_KEY,
  TEST_PARTNER_ID,
  tempDir,
} from '../helpers/issuer.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

const available = await postgresAvailable('the PostgreSQL key tests');
const kek = Buffer.alloc(32, 0x3c);

const options = (keysDir: string, generateIfMissing = true) => ({
  keysDir,
  generateIfMissing,
  kek,
  log: silentLogger(),
});

// docs/security.md "Keys shared by several instances": the Iden3 BJJ key lives in the database on PostgreSQL, sealed like the signing
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
    db = await createMigratedDatabase();
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

  it('a start whose key read precedes another start storing the key and the identity takes that key', async () => {
    const fresh = await createMigratedDatabase();
    const [first, second] = await Promise.all([
      openPostgresStore(fresh.url, { poolMax: 2 }),
      openPostgresStore(fresh.url, { poolMax: 2 }),
    ]);
    try {
      const didOptions = { method: 'iden3', blockchain: 'privado', network: 'test' };
      // The first start runs whole (key row, then genesis) between the second start's read of the
      // empty key row and what that start does next: the order of two instances starting together
      // on a slow machine, forced here.
      let firstStart: Promise<Iden3Identity> | undefined;
      const runFirst = async () =>
        Iden3Identity.open(
          first.iden3,
          await databaseBjjKey(first.keys, first.iden3, options(join(dir, 'late-first'))),
          didOptions,
        );
      const secondKeys = new Proxy(second.keys, {
        get(target, prop) {
          if (prop === 'iden3Key' && !firstStart)
            return async () => {
              const seen = await target.iden3Key();
              firstStart = runFirst();
              await firstStart;
              return seen;
            };
          const value: unknown = Reflect.get(target, prop, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const secondKey = await databaseBjjKey(secondKeys, second.iden3, options(join(dir, 'late-second')));
      expect(firstStart).toBeDefined();
      const firstIdentity = await firstStart!;
      expect(secondKey.publicKeyHex).toBe((await first.keys.iden3Key())?.publicKey);
      const secondIdentity = await Iden3Identity.open(second.iden3, secondKey, didOptions);
      expect(secondIdentity.did.string()).toBe(firstIdentity.did.string());
    } finally {
      await Promise.all([first.close(), second.close()]);
      await fresh.drop();
    }
  });

  it('production with neither a row nor KEYS_DIR/iden3-bjj.json refuses, naming the file', async () => {
    const fresh = await createMigratedDatabase();
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
    const fresh = await createMigratedDatabase();
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

const cli = runCli;

/** `src/main.ts` as a process, until it exits (a refused start) or listens (killed then). */
async function startProcess(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, entryArgs('src/main.ts'), {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const seen = (chunk: Buffer) => {
    output += String(chunk);
    if (output.includes('listening on')) child.kill('SIGTERM');
  };
  child.stdout.on('data', seen);
  child.stderr.on('data', seen);
  const code = await new Promise<number | null>((ok) => child.once('exit', (c) => ok(c)));
  return { code, output };
}

// docs/security.md "Keys shared by several instances": a leaked KEY_ENCRYPTION_KEY is replaced by `npm run admin -- keys reseal`.
describe.skipIf(!available)('keys reseal: replacing KEY_ENCRYPTION_KEY', () => {
  const OLD = 'c4'.repeat(32);
  const NEW = Buffer.alloc(32, 0x5d).toString('base64');
  const OTHER = 'e6'.repeat(32);
  const dir = tempDir();
  let db: TempDatabase;
  let before: { signing: string; partner: string; did: string };
  let pool: PostgresStore;
  const sealed = async () =>
    // In the order `keys reseal` walks them.
    (
      await pool.pool.query<{ purpose: string; kid: string; sealed: string }>(
        `SELECT purpose, kid, sealed FROM issuer_keys
         UNION ALL SELECT 'iden3-bjj', public_key, sealed FROM iden3_key ORDER BY purpose, kid`,
      )
    ).rows;

  beforeAll(async () => {
    db = await createMigratedDatabase();
    const a = await startIssuer({ dir, env: { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY: OLD } });
    // A retired key too: every row is resealed, not only the active ones.
    expect((await a.admin('/admin/keys/rotate', { purpose: 'credential-signing' })).status).toBe(200);
    before = {
      signing: a.ctx.keys.current().signing.kid,
      partner: a.ctx.keys.current().partner.kid,
      did: a.ctx.iden3Did()!,
    };
    await a.close();
    pool = await openPostgresStore(db.url, { poolMax: 1 });
  });
  afterAll(async () => {
    await pool?.close();
    await db?.drop();
    removeDir(dir);
  });

  it('refuses a missing KEY_ENCRYPTION_KEY_PREVIOUS and the same key twice, naming the variable', async () => {
    const missing = await cli(['keys', 'reseal'], { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY: NEW }, dir);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/KEY_ENCRYPTION_KEY_PREVIOUS: required by keys reseal/);
    const short = await cli(
      ['keys', 'reseal'],
      { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY: 'abcd', KEY_ENCRYPTION_KEY_PREVIOUS: OLD },
      dir,
    );
    expect(short.stderr).toMatch(/KEY_ENCRYPTION_KEY: must be 32 bytes/);
    const same = await cli(
      ['keys', 'reseal'],
      { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY: OLD, KEY_ENCRYPTION_KEY_PREVIOUS: OLD },
      dir,
    );
    expect(same.stderr).toMatch(/KEY_ENCRYPTION_KEY: is the same key as KEY_ENCRYPTION_KEY_PREVIOUS/);
    for (const run of [missing, short, same]) expect(run.code).toBe(1);
  });

  it('a row that opens with neither key stops the run, and no row changes (one transaction)', async () => {
    const original = await sealed();
    expect(original).toHaveLength(4); // two signing keys, the partner key, the Iden3 key
    const reseal = (previous: string, next: string) =>
      cli(
        ['keys', 'reseal'],
        { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY_PREVIOUS: previous, KEY_ENCRYPTION_KEY: next },
        dir,
      );
    expect((await reseal(OLD, OTHER)).code).toBe(0);
    // The first row in reseal order back under OLD, the other three under OTHER.
    const first = original[0]!;
    await pool.pool.query('UPDATE issuer_keys SET sealed = $1 WHERE kid = $2', [first.sealed, first.kid]);
    const mixed = await sealed();
    const failed = await reseal(OLD, NEW);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain(
      `database:${original[1]!.kid} (${original[1]!.purpose}): opens with neither KEY_ENCRYPTION_KEY_PREVIOUS nor KEY_ENCRYPTION_KEY; nothing was resealed`,
    );
    // The first row was resealed in the transaction before the failure: rolled back with it.
    expect(await sealed()).toEqual(mixed);
    // A re-run takes rows already under the new key as they are: back to OLD everywhere.
    const back = await reseal(OTHER, OLD);
    expect(back.code).toBe(0);
    expect(back.stdout).toContain(`${first.purpose} ${first.kid}: already sealed under KEY_ENCRYPTION_KEY`);
    expect(back.stdout).toContain('3 of 4 key(s) resealed');
  });

  it('after a reseal, the old key refuses to start naming the variable and the new one serves the same keys and DID', async () => {
    const original = await sealed();
    const run = await cli(
      ['keys', 'reseal'],
      { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY_PREVIOUS: OLD, KEY_ENCRYPTION_KEY: NEW },
      dir,
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    for (const row of original) expect(run.stdout).toContain(`${row.purpose} ${row.kid}: resealed`);
    expect(run.stdout).toContain('4 of 4 key(s) resealed');
    for (const secret of [OLD, NEW, OTHER]) expect(run.stdout).not.toContain(secret);
    const after = await sealed();
    for (const [n, row] of after.entries()) expect(row.sealed).not.toBe(original[n]!.sealed);
    const again = await cli(
      ['keys', 'reseal'],
      { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY_PREVIOUS: OLD, KEY_ENCRYPTION_KEY: NEW },
      dir,
    );
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('0 of 4 key(s) resealed');

    // The real server process, still on the old key, with an empty KEYS_DIR: refused.
    const emptyKeys = join(dir, 'empty-keys');
    mkdirSync(emptyKeys);
    const refused = await startProcess({
      NODE_ENV: 'test',
      PORT: '0',
      HOST: '127.0.0.1',
      ISSUER_ORIGIN: 'http://issuer.test',
      DATABASE_URL: db.url,
      KEY_ENCRYPTION_KEY: OLD,
      API_KEY: TEST_API_KEY,
      ADMIN_API_KEY: TEST_ADMIN_API_KEY,
      PARTNER_ID: TEST_PARTNER_ID,
      SERVICE_V1_BASE_URL: 'http://127.0.0.1:9',
      KEYS_DIR: emptyKeys,
      IDEN3_MERKLIZE_WORKERS: '0',
    });
    expect(refused.code).toBe(1);
    expect(refused.output).toMatch(
      /start-up: database:\S+: sealed: does not open with this KEY_ENCRYPTION_KEY/,
    );
    for (const secret of [OLD, NEW]) expect(refused.output).not.toContain(secret);
    expect(await sealed()).toEqual(after);

    const b = await startIssuer({
      dir: tempDir(),
      env: { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY: NEW },
      exampleClaimsFile: '',
    });
    try {
      expect(b.ctx.keys.current().signing.kid).toBe(before.signing);
      expect(b.ctx.keys.current().partner.kid).toBe(before.partner);
      expect(b.ctx.iden3Did()).toBe(before.did);
    } finally {
      await b.close();
      removeDir(b.dir);
    }
  });
});

// On PostgreSQL, development: with KEYS_DIR's development CA, an x5c rotation without a
// standby key certifies the new key as the file path does, and keeps the chain on its row.
describe.skipIf(!available)('x5c rotation with keys in PostgreSQL, development CA', () => {
  let db: TempDatabase;
  const dir = tempDir();

  beforeAll(async () => {
    db = await createMigratedDatabase();
  });
  afterAll(async () => {
    await db?.drop();
    removeDir(dir);
  });

  it('certifies the new key with the development CA and keeps its chain on its row', async () => {
    const env = { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY: kek.toString('hex'), SD_JWT_ISSUER: 'x5c' };
    const issuer = await startIssuer({
      dir,
      env,
      prepare: async (d, origin) => {
        await generateMissingKeys(join(d, 'keys'));
        await generateDevChain(join(d, 'keys'), { ISSUER_ORIGIN: origin, NODE_ENV: 'test' });
      },
    });
    try {
      const key1 = issuer.ctx.keys.current().signing;
      const res = await issuer.admin('/admin/keys/rotate', { purpose: 'credential-signing' });
      expect(res.status).toBe(200);
      const key2 = issuer.ctx.keys.current().signing;
      expect(key2.kid).not.toBe(key1.kid);
      expect(key2.x5c).toHaveLength(2);
      expect(key2.x5c?.[1]).toBe(key1.x5c?.[1]);
      expect(chainProblems(key2.x5c!, key2.publicKey, issuer.url, new Date())).toEqual([]);
      const store = await openPostgresStore(db.url, { poolMax: 1 });
      try {
        const row = (await store.keys.list()).find((k) => k.kid === key2.kid);
        expect(row).toMatchObject({ standby: false, retiredAt: null, x5c: key2.x5c });
      } finally {
        await store.close();
      }
    } finally {
      await issuer.close();
    }
  });
});
