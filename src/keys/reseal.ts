import { parseKeyEncryptionKey } from '../config/key-encryption-key.js';
import { redactDatabaseUrl } from '../store/database-url.js';
import { parseDatabaseUrl } from '../store/engines.js';
import { openPostgresStore } from '../store/postgres/index.js';
import type { KeyMaterialStore, SealedRow } from '../store/store.js';
import { KeyError } from './key-ring.js';
import { openSealedKey, sealJson } from './sealed-key.js';

/** One row as `keys reseal` reports it (never its content). */
export interface ResealedRow {
  purpose: string;
  kid: string;
  /** `false`: already sealed under the new KEY_ENCRYPTION_KEY (a re-run, or a row written since). */
  resealed: boolean;
}

/**
 * Replaces a leaked KEY_ENCRYPTION_KEY (docs/security.md "Keys shared by several instances"): every sealed row is
 * opened with `previous` and sealed again under `next`, in one transaction. A row that already
 * opens with `next` stays as it is, so the command can run again after instances still on the old
 * key wrote a row; a row that opens with neither stops it and no row changes.
 */
export async function resealKeys(
  store: Pick<KeyMaterialStore, 'resealAll'>,
  previous: Buffer,
  next: Buffer,
): Promise<ResealedRow[]> {
  const opens = (kek: Buffer, row: SealedRow) => {
    try {
      return { data: openSealedKey(kek, row.kid, row.purpose, row.sealed) };
    } catch {
      return undefined;
    }
  };
  const rows = await store.resealAll((row) => {
    const old = opens(previous, row);
    if (old) return sealJson(next, row.kid, row.purpose, old.data);
    if (opens(next, row)) return row.sealed;
    throw new KeyError(
      `database:${row.kid} (${row.purpose}): opens with neither KEY_ENCRYPTION_KEY_PREVIOUS nor KEY_ENCRYPTION_KEY; nothing was resealed`,
    );
  });
  return rows.map((r) => ({ purpose: r.purpose, kid: r.kid, resealed: r.changed }));
}

/**
 * `npm run admin -- keys reseal`: the two keys from the environment (KEY_ENCRYPTION_KEY_PREVIOUS,
 * the leaked one, and KEY_ENCRYPTION_KEY, its replacement), the database from DATABASE_URL.
 * Problems name the variable, never its value.
 */
export async function resealDatabaseKeys(
  env: Record<string, string | undefined>,
  databaseUrl: string,
  cwd: string,
): Promise<{ database: string; rows: ResealedRow[] }> {
  const target = parseDatabaseUrl(databaseUrl, cwd);
  if (typeof target === 'string') throw new KeyError(`DATABASE_URL: ${target}`);
  if (target.kind !== 'postgres')
    throw new KeyError(
      'DATABASE_URL: keys reseal works on a PostgreSQL database (on SQLite the keys are files in KEYS_DIR, not sealed)',
    );
  const kek = (name: 'KEY_ENCRYPTION_KEY' | 'KEY_ENCRYPTION_KEY_PREVIOUS') => {
    const value = env[name];
    if (value === undefined) throw new KeyError(`${name}: required by keys reseal`);
    const parsed = parseKeyEncryptionKey(value);
    if (typeof parsed === 'string') throw new KeyError(`${name}: ${parsed}`);
    return parsed;
  };
  const previous = kek('KEY_ENCRYPTION_KEY_PREVIOUS');
  const next = kek('KEY_ENCRYPTION_KEY');
  if (previous.equals(next))
    throw new KeyError('KEY_ENCRYPTION_KEY: is the same key as KEY_ENCRYPTION_KEY_PREVIOUS');
  const store = await openPostgresStore(target.url, { poolMax: 1 });
  try {
    return { database: redactDatabaseUrl(target.url), rows: await resealKeys(store.keys, previous, next) };
  } finally {
    await store.close();
  }
}
