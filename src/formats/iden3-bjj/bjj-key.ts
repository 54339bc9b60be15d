import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { z } from 'zod';
import { DEVELOPMENT_KEYS_SUBDIR } from '../../keys/key-ring.js';
import { BjjSigner } from './bjj-signer.js';

/** The Iden3 issuer key file in KEYS_DIR (docs/going-live.md). Its loss changes the issuer DID. */
export const BJJ_KEY_FILE = 'iden3-bjj.json';

const HEX32 = /^[0-9a-f]{64}$/;

// The file holds the 32 raw private-key bytes js-crypto `PrivateKey` takes, and the compressed public
// key as a consistency check (a truncated or hand-edited file fails loudly instead of changing the DID).
export const BjjKeyFileSchema = z.object({
  kty: z.literal('BabyJubJub'),
  privateKey: z.string().regex(HEX32, 'expected 64 lowercase hex characters'),
  publicKey: z.string().regex(HEX32, 'expected 64 lowercase hex characters'),
  createdAt: z.string(),
  /** As for the JWK key files (src/keys/key-ring.ts `KeyEnvironment`). */
  environment: z.enum(['development', 'production']).optional(),
});
export type BjjKeyFile = z.infer<typeof BjjKeyFileSchema>;

export interface BjjKey {
  /** Absolute or KEYS_DIR-relative path of the key file (for messages; never the key). */
  readonly file: string;
  readonly signer: BjjSigner;
  /** Compressed public key, hex (js-crypto `PublicKey.hex()`). */
  readonly publicKeyHex: string;
  readonly environment: 'development' | 'production' | undefined;
}

export interface LoadBjjKeyOptions {
  /** Dev only: create the file when it is missing. Production runs `keys generate` once instead. */
  generateIfMissing: boolean;
}

function toKey(file: string, privateKey: Uint8Array, environment: BjjKey['environment']): BjjKey {
  const signer = new BjjSigner(privateKey);
  return {
    file,
    signer,
    publicKeyHex: Buffer.from(signer.publicKeyCompressed()).toString('hex'),
    environment,
  };
}

function isErrno(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as NodeJS.ErrnoException).code === code;
}

/** A fresh key's content (not written anywhere). */
export function newBjjKeyContent(environment: 'development' | 'production'): BjjKeyFile {
  const privateKey = randomBytes(32);
  return {
    kty: 'BabyJubJub',
    privateKey: privateKey.toString('hex'),
    publicKey: toKey('', privateKey, environment).publicKeyHex,
    createdAt: new Date().toISOString(),
    environment,
  };
}

/**
 * Checks a key's content wherever it came from (`where`: the file, or `database:iden3-bjj`);
 * messages name `where` and the field, never key material.
 */
export function bjjKeyFromContent(json: unknown, where: string): BjjKey {
  const parsed = BjjKeyFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') || '(root)';
    throw new Error(`${where}: ${field}: ${issue?.message ?? 'invalid'}`);
  }
  const key = toKey(where, Buffer.from(parsed.data.privateKey, 'hex'), parsed.data.environment);
  if (key.publicKeyHex !== parsed.data.publicKey) {
    throw new Error(`${where}: publicKey does not match privateKey`);
  }
  return key;
}

/** Writes a fresh key file; `undefined` when one already exists. */
async function writeNewKeyFile(
  keysDir: string,
  environment: 'development' | 'production',
): Promise<BjjKey | undefined> {
  const file = join(keysDir, BJJ_KEY_FILE);
  await mkdir(keysDir, { recursive: true, mode: 0o700 });
  const content = newBjjKeyContent(environment);
  const key = bjjKeyFromContent(content, file);
  // Written to a private temporary name, then hard-linked into place: link() fails if the file exists
  // (never replace a key: that would silently change the issuer DID) and a concurrent reader never
  // sees a half-written file.
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(tmp, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    await link(tmp, file);
  } catch (err) {
    if (isErrno(err, 'EEXIST')) return undefined;
    throw new Error(`${file}: cannot write the Iden3 key file (${(err as Error).message})`);
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
  return key;
}

/** `keys generate` (production): writes a fresh key file, mode 0600; fails if one exists. */
export async function generateBjjKey(keysDir: string): Promise<BjjKey> {
  const key = await writeNewKeyFile(keysDir, 'production');
  if (!key)
    throw new Error(`${join(keysDir, BJJ_KEY_FILE)}: already exists; refusing to overwrite an Iden3 key`);
  return key;
}

/**
 * The content of `KEYS_DIR/iden3-bjj.json`, checked; `undefined` when there is no such file.
 * Problems are errors naming the file and the field, never showing key material.
 */
export async function readBjjKeyFile(
  keysDir: string,
): Promise<{ key: BjjKey; content: BjjKeyFile } | undefined> {
  const file = join(keysDir, BJJ_KEY_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return undefined;
    throw new Error(`${file}: cannot read the Iden3 key file (${(err as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`${file}: not valid JSON`);
  }
  const key = bjjKeyFromContent(json, file);
  return { key, content: json as BjjKeyFile };
}

/**
 * Reads `KEYS_DIR/iden3-bjj.json`. A missing file is created only with `generateIfMissing` (dev);
 * every other problem is an error naming the file and the field, never showing key material.
 */
export async function loadOrCreateBjjKey(keysDir: string, options: LoadBjjKeyOptions): Promise<BjjKey> {
  const read = await readBjjKeyFile(keysDir);
  if (read) return read.key;
  const file = join(keysDir, BJJ_KEY_FILE);
  if (!options.generateIfMissing) {
    throw new Error(`${file}: Iden3 key file is missing (run the keys generate command)`);
  }
  // undefined: another process starting at the same moment created it first; use theirs.
  return (
    (await writeNewKeyFile(keysDir, 'development')) ??
    loadOrCreateBjjKey(keysDir, { generateIfMissing: false })
  );
}

/**
 * The refusal of a key file that is not the key of the database's Iden3 identity, saying how to
 * recover. The usual cause: production `keys:generate` ran in a development checkout, moving the
 * development key that made the development database to KEYS_DIR/development/.
 */
export function keyMismatchMessage(file: string, did: string, recordedPublicKey: string): string {
  const shown = (path: string) => {
    const inside = relative('.', path);
    return inside && !inside.startsWith('..') ? inside : path;
  };
  const head = `${shown(file)}: this key is not the key of the Iden3 identity ${did} recorded in the database`;
  const asideDir = join(dirname(file), DEVELOPMENT_KEYS_SUBDIR);
  if (publicKeyOf(join(asideDir, BJJ_KEY_FILE)) === recordedPublicKey)
    return (
      `${head}. That database was made with the development key production \`keys:generate\` moved to ${shown(asideDir)}/. ` +
      `To go on developing on it, start with KEYS_DIR=${shown(asideDir)} (set it in .env; the development secrets are there too), ` +
      `or move the production keys out of ${shown(dirname(file))} and the files of ${shown(asideDir)}/ back. ` +
      'Production needs a database of its own (DATABASE_URL)'
    );
  return `${head}: start with the KEYS_DIR whose ${BJJ_KEY_FILE} made this database, or point DATABASE_URL at a new database`;
}

/** The `publicKey` a key file names, if it is there and readable (only compared, never trusted). */
function publicKeyOf(file: string): string | undefined {
  try {
    const parsed = BjjKeyFileSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data.publicKey : undefined;
  } catch {
    return undefined;
  }
}
