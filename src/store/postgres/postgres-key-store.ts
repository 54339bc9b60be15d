import type { KeyMaterialStore, StoredKey } from '../store.js';
import { LOCK_KEYS, LOCK_NAMESPACE, type PgClient, type PgPool, withTransaction } from './database.js';

interface KeyRow {
  kid: string;
  purpose: StoredKey['purpose'];
  created_at: Date;
  retired_at: Date | null;
  sealed: string;
}

/** Keys of migration 003; writes take one advisory lock so two rotations never interleave. */
export class PostgresKeyStore implements KeyMaterialStore {
  constructor(private readonly pool: PgPool) {}

  async version(): Promise<number> {
    const { rows } = await this.pool.query<{ version: string }>({
      name: 'pg-key-ring-version',
      text: 'SELECT version FROM key_ring_version WHERE id = 1',
    });
    return Number(rows[0]?.version ?? 0);
  }

  async list(): Promise<StoredKey[]> {
    const { rows } = await this.pool.query<KeyRow>(
      'SELECT kid, purpose, created_at, retired_at, sealed FROM issuer_keys ORDER BY created_at, kid',
    );
    return rows.map((r) => ({
      kid: r.kid,
      purpose: r.purpose,
      createdAt: r.created_at,
      retiredAt: r.retired_at,
      sealed: r.sealed,
    }));
  }

  async importIfEmpty(keys: StoredKey[]): Promise<boolean> {
    return this.#locked(async (client) => {
      const { rowCount } = await client.query('SELECT 1 FROM issuer_keys LIMIT 1');
      if (rowCount) return false;
      for (const k of keys) await insertKey(client, k);
      await bump(client);
      return true;
    });
  }

  async rotate(created: StoredKey, at: Date): Promise<{ retired: string[] }> {
    return this.#locked(async (client) => {
      const { rows } = await client.query<{ kid: string }>(
        'UPDATE issuer_keys SET retired_at = $1 WHERE purpose = $2 AND retired_at IS NULL RETURNING kid',
        [at, created.purpose],
      );
      await insertKey(client, created);
      await bump(client);
      return { retired: rows.map((r) => r.kid) };
    });
  }

  #locked<T>(fn: (client: PgClient) => Promise<T>): Promise<T> {
    return withTransaction(this.pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_NAMESPACE, LOCK_KEYS]);
      return fn(client);
    });
  }
}

async function insertKey(client: PgClient, k: StoredKey): Promise<void> {
  await client.query(
    'INSERT INTO issuer_keys (kid, purpose, created_at, retired_at, sealed) VALUES ($1, $2, $3, $4, $5)',
    [k.kid, k.purpose, k.createdAt, k.retiredAt, k.sealed],
  );
}

// An upsert, so a database whose tables were emptied (tests, a restore) still counts changes.
const bump = (client: PgClient) =>
  client.query(
    'INSERT INTO key_ring_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = key_ring_version.version + 1',
  );
