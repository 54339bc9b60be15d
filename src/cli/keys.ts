import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { basename, join } from 'node:path';
import { DEVELOPMENT_KEYS_SUBDIR, DEVELOPMENT_ONLY_FILES } from '../development/development-files.js';
import { BJJ_KEY_FILE, generateBjjKey, loadOrCreateBjjKey } from '../formats/iden3-bjj/bjj-key.js';
import type { KeyBackend } from '../keys/key-backend.js';
import { generateKey, isActive, type KeyPurpose, readKeys } from '../keys/key-ring.js';

const PURPOSES: readonly KeyPurpose[] = ['credential-signing', 'partner-jwt'];

export { DEVELOPMENT_KEYS_SUBDIR };

export interface GeneratedKey {
  purpose: KeyPurpose | 'iden3-bjj';
  /** The JWK thumbprint, or the compressed BabyJubJub public key for the Iden3 identity. */
  kid: string;
  file: string;
  created: boolean;
  /** Development key files moved aside (production only): their new paths. */
  movedAside: string[];
}

export interface GeneratedKeys {
  keys: GeneratedKey[];
  /** The other development files moved aside (production only): dev-secrets.json and the like, their new paths. */
  movedAside: string[];
}

/**
 * `npm run keys:generate` and `admin keys generate`: on files, before the first production start.
 * Creates the missing active key of each purpose in KEYS_DIR, and the Iden3 BabyJubJub key, and
 * keeps existing ones (rotation goes through the running server). With `production`, nothing a
 * development start wrote stays: its key files and its other files (DEVELOPMENT_ONLY_FILES) move
 * to KEYS_DIR/development/, where nothing reads them and from where a development start can use
 * them again (KEYS_DIR=<KEYS_DIR>/development), and production keys take the keys' place.
 */
export async function generateMissingKeys(
  dir: string,
  options: { production: boolean; backend?: KeyBackend } = { production: false },
): Promise<GeneratedKeys> {
  const backend = options.backend;
  const moved = new Map<string, string[]>();
  const moveAside = (purpose: string, file: string) => {
    const aside = join(dir, DEVELOPMENT_KEYS_SUBDIR);
    mkdirSync(aside, { recursive: true, mode: 0o700 });
    const to = freeName(join(aside, basename(file)));
    renameSync(file, to);
    moved.set(purpose, [...(moved.get(purpose) ?? []), to]);
  };
  if (options.production) {
    for (const key of await readKeys(dir, backend))
      if (key.environment === 'development') moveAside(key.purpose, key.file);
    if (existsSync(join(dir, BJJ_KEY_FILE))) {
      const bjj = await loadOrCreateBjjKey(dir, { generateIfMissing: false });
      if (bjj.environment === 'development') moveAside('iden3-bjj', bjj.file);
    }
    for (const name of DEVELOPMENT_ONLY_FILES)
      if (existsSync(join(dir, name))) moveAside('other', join(dir, name));
  }
  const keys = await readKeys(dir, backend);
  const out: GeneratedKey[] = [];
  for (const purpose of PURPOSES) {
    const active = keys.find((k) => k.purpose === purpose && isActive(k));
    const key = active ?? (await generateKey(dir, purpose, new Date(), { backend }));
    out.push({
      purpose,
      kid: key.kid,
      file: key.file,
      created: !active,
      movedAside: moved.get(purpose) ?? [],
    });
  }
  const bjjExists = existsSync(join(dir, BJJ_KEY_FILE));
  const bjj = bjjExists
    ? await loadOrCreateBjjKey(dir, { generateIfMissing: false })
    : await generateBjjKey(dir);
  out.push({
    purpose: 'iden3-bjj',
    kid: bjj.publicKeyHex,
    file: bjj.file,
    created: !bjjExists,
    movedAside: moved.get('iden3-bjj') ?? [],
  });
  return { keys: out, movedAside: moved.get('other') ?? [] };
}

/**
 * `file`, or `file.1`, `file.2`… if taken: a second production run after another development start
 * keeps the files the first one moved aside.
 */
function freeName(file: string): string {
  let candidate = file;
  for (let n = 1; existsSync(candidate); n++) candidate = `${file}.${n}`;
  return candidate;
}

/** One line per key, then one per other development file moved aside, for `keys:generate` and `admin keys generate`. */
export function describeGenerated(generated: GeneratedKeys): string[] {
  return [
    ...generated.keys.map((key) => {
      const moved = key.movedAside.map((f) => `moved development key ${f} aside; `).join('');
      return `${key.purpose}: ${moved}${key.created ? 'created' : 'keeping'} ${key.kid} (${key.file}${key.created ? ', mode 0600' : ''})`;
    }),
    ...generated.movedAside.map((f) => `development: moved ${f} aside`),
  ];
}
