import { keyRotatedEvent } from '../../events/builders.js';
import type { KeyMaterialStore, SealedRow, StoredIden3Key, StoredKey } from '../store.js';
import { WEBHOOK_SECRET_PURPOSE } from '../webhook-store.js';
import { LOCK_KEYS, type PgClient, type PgPool, withLockedTransaction } from './database.js';
import { insertEvent } from './postgres-webhook-store.js';

interface KeyRow {
  kid: string;
  purpose: StoredKey['purpose'];
  created_at: Date;
  retired_at: Date | null;
  sealed: string;
  standby: boolean;
  x5c: string[] | null;
}

const KEY_COLUMNS = 'kid, purpose, created_at, retired_at, sealed, standby, x5c';

const keyOfRow = (r: KeyRow): StoredKey => ({
  kid: r.kid,
  purpose: r.purpose,
  createdAt: r.created_at,
  retiredAt: r.retired_at,
  sealed: r.sealed,
  standby: r.standby,
  x5c: r.x5c,
});

/**
 * Keys of migrations 003 and 010 (signing and partner keys, standby keys, chains) and 009 (the
 * Iden3 key); writes take one
 * advisory lock so two rotations (or a rotation and a reseal) never interleave.
 */
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
      `SELECT ${KEY_COLUMNS} FROM issuer_keys ORDER BY created_at, kid`,
    );
    return rows.map(keyOfRow);
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
        'UPDATE issuer_keys SET retired_at = $1 WHERE purpose = $2 AND retired_at IS NULL AND NOT standby RETURNING kid',
        [at, created.purpose],
      );
      await insertKey(client, created);
      await bump(client);
      const retired = rows.map((r) => r.kid);
      await recordKeyRotated(client, created.purpose, created.kid, retired, at);
      return { retired };
    });
  }

  async promoteStandby(
    purpose: StoredKey['purpose'],
    at: Date,
    choose: (standby: StoredKey[]) => Promise<string>,
  ): Promise<{ promoted: string; retired: string[] } | undefined> {
    return this.#locked(async (client) => {
      const { rows: standby } = await client.query<KeyRow>(
        `SELECT ${KEY_COLUMNS} FROM issuer_keys WHERE purpose = $1 AND retired_at IS NULL AND standby
         ORDER BY created_at DESC, kid`,
        [purpose],
      );
      if (standby.length === 0) return undefined;
      const promoted = await choose(standby.map(keyOfRow));
      if (!standby.some((r) => r.kid === promoted))
        throw new Error(`${promoted} is not a standby ${purpose} key`);
      const { rows } = await client.query<{ kid: string }>(
        'UPDATE issuer_keys SET retired_at = $1 WHERE purpose = $2 AND retired_at IS NULL AND NOT standby RETURNING kid',
        [at, purpose],
      );
      await client.query('UPDATE issuer_keys SET standby = false WHERE kid = $1', [promoted]);
      await bump(client);
      const retired = rows.map((r) => r.kid);
      await recordKeyRotated(client, purpose, promoted, retired, at);
      return { promoted, retired };
    });
  }

  async addStandby(key: StoredKey): Promise<void> {
    await this.#locked(async (client) => {
      await insertKey(client, { ...key, standby: true, retiredAt: null });
      await bump(client);
    });
  }

  async attachChain(kid: string, x5c: string[], check: (key: StoredKey) => Promise<void>): Promise<boolean> {
    return this.#locked(async (client) => {
      const { rows } = await client.query<KeyRow>(
        `SELECT ${KEY_COLUMNS} FROM issuer_keys WHERE kid = $1 AND purpose = 'credential-signing'`,
        [kid],
      );
      const row = rows[0];
      if (!row) return false;
      await check(keyOfRow(row));
      await client.query('UPDATE issuer_keys SET x5c = $1 WHERE kid = $2', [x5c, kid]);
      await bump(client);
      return true;
    });
  }

  async iden3Key(): Promise<StoredIden3Key | undefined> {
    const { rows } = await this.pool.query<{ public_key: string; created_at: Date; sealed: string }>(
      'SELECT public_key, created_at, sealed FROM iden3_key WHERE id = 1',
    );
    const row = rows[0];
    return row ? { publicKey: row.public_key, createdAt: row.created_at, sealed: row.sealed } : undefined;
  }

  async putIden3KeyIfAbsent(key: StoredIden3Key): Promise<StoredIden3Key> {
    // The primary key (id = 1) decides between instances starting together; the loser reads the winner's.
    await this.pool.query(
      'INSERT INTO iden3_key (id, public_key, created_at, sealed) VALUES (1, $1, $2, $3) ON CONFLICT (id) DO NOTHING',
      [key.publicKey, key.createdAt, key.sealed],
    );
    const stored = await this.iden3Key();
    if (!stored) throw new Error('iden3_key: the key was not recorded');
    return stored;
  }

  async resealAll(reseal: (row: SealedRow) => string): Promise<Array<SealedRow & { changed: boolean }>> {
    return this.#locked(async (client) => {
      const { rows } = await client.query<SealedRow>(
        `SELECT kid, purpose, sealed FROM issuer_keys
         UNION ALL SELECT public_key, 'iden3-bjj', sealed FROM iden3_key
         ORDER BY purpose, kid`,
      );
      const out: Array<SealedRow & { changed: boolean }> = [];
      for (const row of rows) {
        const sealed = reseal(row);
        const changed = sealed !== row.sealed;
        if (changed) {
          if (row.purpose === 'iden3-bjj')
            await client.query('UPDATE iden3_key SET sealed = $1 WHERE public_key = $2', [sealed, row.kid]);
          else await client.query('UPDATE issuer_keys SET sealed = $1 WHERE kid = $2', [sealed, row.kid]);
        }
        out.push({ ...row, sealed, changed });
      }
      // Webhook secrets are sealed the same way (one copied from SQLite in clear stays so).
      const { rows: hooks } = await client.query<{
        id: string;
        secret: string;
        previous_secret: string | null;
      }>('SELECT id, secret, previous_secret FROM webhook_endpoints ORDER BY id');
      for (const hook of hooks)
        for (const column of ['secret', 'previous_secret'] as const) {
          const value = hook[column];
          if (value === null || value.startsWith('whsec_')) continue;
          const row = { kid: hook.id, purpose: WEBHOOK_SECRET_PURPOSE, sealed: value };
          const sealed = reseal(row);
          const changed = sealed !== value;
          if (changed)
            await client.query(`UPDATE webhook_endpoints SET ${column} = $1 WHERE id = $2`, [
              sealed,
              hook.id,
            ]);
          out.push({ ...row, sealed, changed });
        }
      return out;
    });
  }

  #locked<T>(fn: (client: PgClient) => Promise<T>): Promise<T> {
    return withLockedTransaction(this.pool, LOCK_KEYS, fn);
  }
}

/** The rotation's event, in its transaction (docs/operations.md "Webhooks"). */
async function recordKeyRotated(
  client: PgClient,
  purpose: string,
  kid: string,
  retired: string[],
  at: Date,
): Promise<void> {
  const event = keyRotatedEvent(purpose, kid, retired);
  await insertEvent(client, event, at);
}

async function insertKey(client: PgClient, k: StoredKey): Promise<void> {
  await client.query(`INSERT INTO issuer_keys (${KEY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
    k.kid,
    k.purpose,
    k.createdAt,
    k.retiredAt,
    k.sealed,
    k.standby,
    k.x5c,
  ]);
}

// An upsert, so a database whose tables were emptied (tests, a restore) still counts changes.
const bump = (client: PgClient) =>
  client.query(
    'INSERT INTO key_ring_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = key_ring_version.version + 1',
  );
