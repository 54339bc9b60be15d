import { parseKeyEncryptionKey } from '../config/key-encryption-key.js';
import { describeTarget, type OpenedStore, openStore, parseDatabaseUrl } from '../store/engines.js';
import type { RenewalStore, SealedRecipient } from '../store/renewal-store.js';
import type { KeyMaterialStore, SealedRow } from '../store/store.js';
import { KeyError } from './key-ring.js';
import { type RecipientSealing, recipientSealing } from './recipient-sealing.js';
import { openSealedKey, sealJson } from './sealed-key.js';

/** One row as `keys reseal` reports it (never its content). */
export interface ResealedRow {
  purpose: string;
  kid: string;
  /** `false`: already sealed under the new KEY_ENCRYPTION_KEY (a re-run, or a row written since). */
  resealed: boolean;
}

/**
 * Replaces a leaked KEY_ENCRYPTION_KEY (docs/security.md "Keys shared by several instances"): every sealed key row is
 * opened with `previous` and sealed again under `next`, in one transaction. A row that already
 * opens with `next` stays as it is, so the command can run again after instances still on the old
 * key wrote a row; a row that opens with neither stops it and no row changes. `checkOnly`: the
 * same walk, changing no row (the tenants of a TENANCY=multi deployment are checked first).
 */
export async function resealKeys(
  store: Pick<KeyMaterialStore, 'resealAll'>,
  previous: Buffer,
  next: Buffer,
  options: { checkOnly?: boolean } = {},
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
    // checkOnly: every row kept as it is, so a run over several stores stops before any changes.
    if (old) return options.checkOnly ? row.sealed : sealJson(next, row.kid, row.purpose, old.data);
    if (opens(next, row)) return row.sealed;
    throw new KeyError(
      `database:${row.kid} (${row.purpose}): opens with neither KEY_ENCRYPTION_KEY_PREVIOUS nor KEY_ENCRYPTION_KEY; nothing was resealed`,
    );
  });
  return rows.map((r) => ({ purpose: r.purpose, kid: r.kid, resealed: r.changed }));
}

/** What `keys reseal` did to the recipient emails renewal keeps (docs/security.md "What renewal keeps"). */
export interface ResealedRecipients {
  /** Opened with KEY_ENCRYPTION_KEY_PREVIOUS and sealed again under KEY_ENCRYPTION_KEY. */
  resealed: number;
  /** Already under KEY_ENCRYPTION_KEY (a re-run, or written since by an instance on the new key). */
  already: number;
  /** Opening with neither key (sealed under another one, or altered): left as they are. */
  unopenable: number;
  /**
   * Of the rows that open with KEY_ENCRYPTION_KEY now (resealed or already), those the sweep had
   * recorded `not_renewable` because they did not open: cleared, so the next sweep renews them.
   */
  reopened: number;
}

/** Pages of sealed recipient emails walked by `keys reseal` and `admin doctor`. */
export const RECIPIENT_BATCH = 500;

const opens = (sealing: RecipientSealing, row: SealedRecipient): string | undefined => {
  try {
    return sealing.open(row.credentialId, row.recipientSealed);
  } catch {
    return undefined;
  }
};

/**
 * Every sealed recipient email of the `renewals` table opened with `previous` and sealed again
 * under `next`, a batch (one transaction) at a time, so a reseal cut short is finished by running
 * it again: a row that already opens with `next` keeps its email. Every row that opens with
 * `next` afterwards loses a `not_renewable` outcome (recorded by a sweep it did not open for),
 * so the next sweep renews it. A row that opens with neither is counted and left (renewal records
 * its credential not renewable), never stopping the others.
 */
export async function resealRecipients(
  store: Pick<RenewalStore, 'sealedRecipients' | 'replaceSealedRecipients'>,
  previous: Buffer,
  next: Buffer,
  batchSize = RECIPIENT_BATCH,
): Promise<ResealedRecipients> {
  const [from, to] = [recipientSealing(previous), recipientSealing(next)];
  const out: ResealedRecipients = { resealed: 0, already: 0, unopenable: 0, reopened: 0 };
  let after: string | null = null;
  for (;;) {
    const page = await store.sealedRecipients(after, batchSize);
    if (page.length === 0) return out;
    const replace: Array<SealedRecipient & { to: string }> = [];
    for (const row of page) {
      if (opens(to, row) !== undefined) {
        out.already++;
        replace.push({ ...row, to: row.recipientSealed });
        continue;
      }
      const email = opens(from, row);
      if (email === undefined) out.unopenable++;
      else replace.push({ ...row, to: to.seal(row.credentialId, email) });
    }
    const replaced = await store.replaceSealedRecipients(replace);
    out.resealed += replaced.resealed;
    out.reopened += replaced.reopened;
    after = page[page.length - 1]!.credentialId;
  }
}

/**
 * How many kept recipient emails open with `current`, with `previous` (a reseal still to run), or
 * with neither; read-only (`admin doctor`).
 */
export async function countSealedRecipients(
  store: Pick<RenewalStore, 'sealedRecipients'>,
  current: Buffer,
  previous: Buffer,
  batchSize = RECIPIENT_BATCH,
): Promise<{ current: number; previous: number; neither: number }> {
  const [now, before] = [recipientSealing(current), recipientSealing(previous)];
  const out = { current: 0, previous: 0, neither: 0 };
  let after: string | null = null;
  for (;;) {
    const page = await store.sealedRecipients(after, batchSize);
    if (page.length === 0) return out;
    for (const row of page) {
      if (opens(now, row) !== undefined) out.current++;
      else if (opens(before, row) !== undefined) out.previous++;
      else out.neither++;
    }
    after = page[page.length - 1]!.credentialId;
  }
}

/**
 * KEY_ENCRYPTION_KEY_PREVIOUS (the leaked key) and KEY_ENCRYPTION_KEY (its replacement) from the
 * environment, for `keys reseal`. Problems name the variable, never its value.
 */
export function resealKeyPair(env: Record<string, string | undefined>): { previous: Buffer; next: Buffer } {
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
  return { previous, next };
}

/** What `keys reseal` did in one store (one namespace of a TENANCY=multi deployment). */
export interface ResealedStore {
  keysInDatabase: boolean;
  rows: ResealedRow[];
  recipients: ResealedRecipients;
}

/**
 * One store: on PostgreSQL the sealed keys first (one transaction; a row that opens with neither
 * key stops it before any email changes), then the recipient emails renewal keeps (in batches).
 */
export async function resealStore(
  store: Pick<OpenedStore, 'keys' | 'renewals'>,
  previous: Buffer,
  next: Buffer,
): Promise<ResealedStore> {
  const rows = store.keys ? await resealKeys(store.keys, previous, next) : [];
  return {
    keysInDatabase: store.keys !== undefined,
    rows,
    recipients: await resealRecipients(store.renewals, previous, next),
  };
}

/**
 * `npm run admin -- keys reseal`: the two keys from the environment (KEY_ENCRYPTION_KEY_PREVIOUS,
 * the leaked one, and KEY_ENCRYPTION_KEY, its replacement), the database from DATABASE_URL. On
 * PostgreSQL the sealed keys first (one transaction), then the recipient emails renewal keeps (in
 * batches); on SQLite, whose keys are files, the recipient emails only. Problems name the
 * variable, never its value.
 */
export async function resealDatabaseKeys(
  env: Record<string, string | undefined>,
  databaseUrl: string,
  cwd: string,
): Promise<{ database: string } & ResealedStore> {
  const target = parseDatabaseUrl(databaseUrl, cwd);
  if (typeof target === 'string') throw new KeyError(`DATABASE_URL: ${target}`);
  const { previous, next } = resealKeyPair(env);
  const store = await openStore(target, { poolMax: 1 });
  try {
    return { database: describeTarget(target), ...(await resealStore(store, previous, next)) };
  } finally {
    await store.close();
  }
}
