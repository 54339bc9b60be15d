import { join } from 'node:path';
import type { Secrets } from '../../../config/config.js';
import { BJJ_KEY_FILE, readBjjKeyFile } from '../../../formats/iden3-bjj/bjj-key.js';
import { bjjKeyToImport, openStoredBjjKey } from '../../../formats/iden3-bjj/database-bjj-key.js';
import { BJJ_SIG_2021 } from '../../../formats/iden3-bjj/names.js';
import { loadSchemas } from '../../../formats/schema-file.js';
import { KeyError } from '../../../keys/key-ring.js';
import { SealedKeyFormatError } from '../../../keys/sealed-key.js';
import type { StoredIden3Key } from '../../../store/store.js';
import type { DoctorCheck } from '../doctor-context.js';
import { type DoctorLine, line } from '../line.js';

const item = 'iden3 key';

/**
 * The Iden3 issuer key as the server would open it, read-only. Where the engine keeps keys in the
 * database: the sealed row, opened with KEY_ENCRYPTION_KEY by the issuer's own code
 * (src/formats/iden3-bjj/database-bjj-key.ts), or, with no row yet, what the first start would import.
 * Otherwise: the KEYS_DIR file. Only reported when the database can be read.
 */
export const iden3Key: DoctorCheck = {
  items: [item],
  async run(ctx) {
    const store = await ctx.store();
    if (!store) return [];
    const { config } = ctx;
    const file = join(config.keysDir, BJJ_KEY_FILE);
    let needed = true;
    try {
      needed = loadSchemas(config.schemasDir, ctx.identity.urls)
        .all()
        .some((s) => s.proofTypes.includes(BJJ_SIG_2021));
    } catch {
      // The schemas line reports it; the key is checked as if a schema needed it.
    }
    const unneeded = `no schema lists ${BJJ_SIG_2021}, so the issuer needs none`;
    try {
      if (!store.keys) {
        const local = await readBjjKeyFile(config.keysDir);
        if (local)
          return [
            line(
              item,
              'PASS',
              `${local.key.file} loads (public key ${local.key.publicKeyHex}; a file on SQLite, not sealed)`,
            ),
          ];
        if (!needed) return [line(item, 'PASS', `absent: no ${file}; ${unneeded}`)];
        if (config.production)
          return [
            line(item, 'FAIL', `${file}: missing; run npm run admin -- keys generate before the first start`),
          ];
        return [line(item, 'PASS', `absent: no ${file}; a development start generates one`)];
      }
      const stored = await store.keys.iden3Key();
      if (!stored) {
        if (!needed) return [line(item, 'PASS', `absent: the database holds no Iden3 key; ${unneeded}`)];
        const planned = await bjjKeyToImport(store.iden3, {
          keysDir: config.keysDir,
          generateIfMissing: !config.production,
        });
        return [
          line(
            item,
            'PASS',
            planned.content
              ? `absent: the database holds no Iden3 key yet; the first start imports ${planned.file} (sealed under KEY_ENCRYPTION_KEY)`
              : 'absent: the database holds no Iden3 key yet; a development start generates one',
          ),
        ];
      }
      const did = (await store.iden3.getIdentity())?.did;
      return [sealedKeyLine(stored, `${did ? `${did}, ` : ''}public key ${stored.publicKey}`, ctx.secrets)];
    } catch (err) {
      return [line(item, 'FAIL', (err as Error).message)];
    }
  },
};

/** The row opens with KEY_ENCRYPTION_KEY; else whether KEY_ENCRYPTION_KEY_PREVIOUS opens it (a reseal to run). */
function sealedKeyLine(stored: StoredIden3Key, which: string, secrets: Secrets): DoctorLine {
  const { current, given, previous } = secrets.keyEncryption;
  const currentName = given
    ? 'KEY_ENCRYPTION_KEY'
    : 'the development KEY_ENCRYPTION_KEY (KEY_ENCRYPTION_KEY is unset)';
  if (opensWith(stored, current))
    return line(item, 'PASS', `${which}: sealed in the database under ${currentName}; it opens`);
  if (previous instanceof Buffer && opensWith(stored, previous))
    return line(
      item,
      'FAIL',
      `${which}: sealed under KEY_ENCRYPTION_KEY_PREVIOUS, not ${currentName} (the only key the server opens it with): run npm run admin -- keys reseal`,
    );
  const tried =
    previous === undefined
      ? ''
      : typeof previous === 'string'
        ? ` (KEY_ENCRYPTION_KEY_PREVIOUS not tried: ${previous})`
        : ' nor with KEY_ENCRYPTION_KEY_PREVIOUS';
  return line(
    item,
    'FAIL',
    `${which}: sealed in the database, but does not open with ${currentName}${tried}: set KEY_ENCRYPTION_KEY to the key that sealed it`,
  );
}

/**
 * Whether the row opens under `kek`. A row no key could open (not a sealed key) or that opens but
 * holds a bad key throws, and is a FAIL as it is.
 */
function opensWith(stored: StoredIden3Key, kek: Buffer): boolean {
  try {
    openStoredBjjKey(stored, kek);
    return true;
  } catch (err) {
    if (err instanceof KeyError && !(err instanceof SealedKeyFormatError)) return false;
    throw err;
  }
}
