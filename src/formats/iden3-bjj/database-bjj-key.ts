import { join } from 'node:path';
import { openSealedKey, sealJson } from '../../keys/sealed-key.js';
import type { Logger } from '../../model.js';
import type { Iden3Store, KeyMaterialStore, StoredIden3Key } from '../../store/store.js';
import {
  BJJ_KEY_FILE,
  type BjjKey,
  type BjjKeyFile,
  bjjKeyFromContent,
  keyMismatchMessage,
  newBjjKeyContent,
  readBjjKeyFile,
} from './bjj-key.js';

/** The purpose in the sealing's additional data (`iden3-bjj:<public key>`) and in `keys reseal`. */
export const BJJ_SEAL_PURPOSE = 'iden3-bjj';
const WHERE = `database:${BJJ_SEAL_PURPOSE}`;

export interface DatabaseBjjKeyOptions {
  /** Imported from on the first start, when the database holds no Iden3 key yet. */
  keysDir: string;
  /** Development: with neither a row nor a file, a new key goes straight into the database. */
  generateIfMissing: boolean;
  /** KEY_ENCRYPTION_KEY. */
  kek: Buffer;
  log: Logger;
}

/**
 * The Iden3 issuer key on PostgreSQL (docs/security.md "Keys shared by several instances"): read from the database,
 * sealed under KEY_ENCRYPTION_KEY, so every instance serves one DID without a shared disk. The
 * first start stores `KEYS_DIR/iden3-bjj.json` (or, in development, a new key); instances starting
 * together agree on whichever row was written first.
 */
export async function databaseBjjKey(
  keys: KeyMaterialStore,
  iden3: Pick<Iden3Store, 'getIdentity'>,
  options: DatabaseBjjKeyOptions,
): Promise<BjjKey> {
  const stored = (await keys.iden3Key()) ?? (await importBjjKey(keys, iden3, options));
  const key = openStoredBjjKey(stored, options.kek);
  const file = await readBjjKeyFile(options.keysDir).catch(() => undefined);
  if (file && file.key.publicKeyHex !== key.publicKeyHex)
    options.log.warn(
      { event: 'iden3_key_file_ignored', file: file.key.file },
      `keys: ${file.key.file} is not the Iden3 key kept in the database; the database's key is used`,
    );
  return key;
}

/**
 * The stored row opened with `kek` (KEY_ENCRYPTION_KEY): throws a `KeyError` when it does not open
 * under that key, an `Error` when its content is not the key its row names. `admin doctor` opens
 * it the same way, read-only.
 */
export function openStoredBjjKey(stored: StoredIden3Key, kek: Buffer): BjjKey {
  const key = bjjKeyFromContent(openSealedKey(kek, stored.publicKey, BJJ_SEAL_PURPOSE, stored.sealed), WHERE);
  if (key.publicKeyHex !== stored.publicKey)
    throw new Error(`${WHERE}: public_key does not match the sealed key`);
  return key;
}

/**
 * What the first start would put in a database that holds no Iden3 key yet: the content of
 * KEYS_DIR/iden3-bjj.json, or `undefined` for a new development key. Throws (naming the file)
 * where that start would refuse. Reads only; `admin doctor` asks it too.
 */
export async function bjjKeyToImport(
  iden3: Pick<Iden3Store, 'getIdentity'>,
  options: Pick<DatabaseBjjKeyOptions, 'keysDir' | 'generateIfMissing'>,
  /** The identity as the caller read it before it read the key row (else it is read here). */
  seen?: { identity: Awaited<ReturnType<Iden3Store['getIdentity']>> },
): Promise<{ file: string; content: BjjKeyFile | undefined }> {
  const file = join(options.keysDir, BJJ_KEY_FILE);
  const fromFile = await readBjjKeyFile(options.keysDir);
  // A database copied from SQLite (`db copy`) holds the identity but not its key, which is a file
  // there: never put another key next to it (the identity would then refuse every start).
  const identity = seen ? seen.identity : await iden3.getIdentity();
  if (identity && !fromFile)
    throw new Error(
      `${file}: missing, and the database holds the Iden3 identity ${identity.did} but not its key: start once with the deployment's KEYS_DIR/${BJJ_KEY_FILE} to import it`,
    );
  if (identity && fromFile && fromFile.key.publicKeyHex !== identity.publicKey)
    throw new Error(keyMismatchMessage(file, identity.did, identity.publicKey));
  if (!fromFile && !options.generateIfMissing)
    throw new Error(
      `${file}: Iden3 key file is missing and the database holds no Iden3 key (run the keys generate command before the first start, which imports it)`,
    );
  return { file, content: fromFile?.content };
}

async function importBjjKey(
  keys: KeyMaterialStore,
  iden3: Pick<Iden3Store, 'getIdentity'>,
  options: DatabaseBjjKeyOptions,
): Promise<StoredIden3Key> {
  // An instance starting at the same moment may have stored its key and then the identity since
  // our read found no key. Its key row commits before its genesis, so once an identity is seen the
  // key row read after it is there, unless the identity came without its key (a `db copy`).
  // The identity is read once, before the key row: one read after it could see an identity that
  // another instance stored (with its key) since, and refuse as if the key were missing.
  const identity = await iden3.getIdentity();
  if (identity) {
    const stored = await keys.iden3Key();
    if (stored) return stored;
  }
  const { file, content: fromFile } = await bjjKeyToImport(iden3, options, { identity });
  const content = fromFile ?? newBjjKeyContent('development');
  const created = new Date(content.createdAt);
  const stored = await keys.putIden3KeyIfAbsent({
    publicKey: content.publicKey,
    createdAt: Number.isNaN(created.getTime()) ? new Date() : created,
    sealed: sealJson(options.kek, content.publicKey, BJJ_SEAL_PURPOSE, content),
  });
  if (stored.publicKey === content.publicKey)
    options.log.info(
      { event: 'iden3_key_imported', from: fromFile ? file : 'generated' },
      fromFile
        ? `keys: imported ${file} into the database (sealed)`
        : 'keys: generated a development Iden3 key in the database (sealed)',
    );
  return stored;
}
