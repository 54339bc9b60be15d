import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import type { JWK } from 'jose';
import type { KeyMaterialStore } from '../store/store.js';
import type { KeyBackend, KeyCustody } from './key-backend.js';
import type { KeyData, KeyPurpose } from './key-data.js';
import { KeyError } from './key-error.js';
import type { KeyHolder } from './key-holder.js';
import { isActive, type KeyRing, type ManagedKey, readKeys, writeKeyFile } from './key-ring.js';
import { openSealedKey, sealKey } from './sealed-key.js';

/**
 * Moving an issuer's ES256 keys into a PKCS#11 token, run with the instances stopped
 * (docs/security.md "Moving keys into the token"):
 * - `import`: each software key is put into the token as a sensitive, non-extractable object with
 *   the same public key, so the same kid (credentials already issued keep verifying, nothing
 *   changes for verifiers); its file or row then holds only the public key and the token
 *   reference, and the software copy is moved aside to `KEYS_DIR/software-keys-aside/` (a file
 *   as it was; a row as its sealed text), from where the operator destroys it once satisfied.
 * - `rotate`: each purpose whose active key is software gets a new key made in the token; the
 *   old key is retired, still published until its last credential expires.
 */
export const SOFTWARE_KEYS_ASIDE = 'software-keys-aside';

/** A backend that can take an existing private key into its custody (PKCS#11's C_CreateObject). */
export interface ImportingBackend extends KeyBackend {
  importKey(purpose: KeyPurpose, privateJwk: JWK): Promise<{ kid: string; custody: KeyCustody }>;
}

export interface ImportedKey {
  purpose: KeyPurpose;
  kid: string;
  /** `imported`, `already in the token`, or why it stays in software. */
  outcome: string;
  /** Where the software copy went. */
  movedTo: string | undefined;
}

function asideDir(keysDir: string): string {
  const dir = join(keysDir, SOFTWARE_KEYS_ASIDE);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** `file`, or `file.1`, `file.2`… if taken. */
function freeName(file: string): string {
  let candidate = file;
  for (let n = 1; existsSync(candidate); n++) candidate = `${file}.${n}`;
  return candidate;
}

/** What remains of a software key once its private part is in the token. */
function heldForm(data: KeyData, custody: KeyCustody): KeyData {
  const { privateJwk, ...rest } = data;
  const x5c = privateJwk?.x5c;
  if (!('token' in custody)) throw new KeyError('the backend kept the key in software');
  return { ...rest, publicJwk: { ...custody.publicJwk, ...(x5c ? { x5c } : {}) }, token: custody.token };
}

async function importData(
  backend: ImportingBackend,
  data: KeyData,
): Promise<{ kid: string; held: KeyData } | { refused: string }> {
  const jwk = data.privateJwk as JWK;
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256')
    return {
      refused: `stays in software: a token takes EC P-256 keys only (this one is ${jwk.kty}); retire it with \`keys migrate-to-token rotate\``,
    };
  const { kid, custody } = await backend.importKey(data.purpose, jwk);
  if (jwk.kid !== undefined && jwk.kid !== kid)
    throw new KeyError(`${data.purpose} key ${jwk.kid}: its kid is not its RFC 7638 thumbprint (${kid})`);
  return { kid, held: heldForm(data, custody) };
}

/** `import` on KEYS_DIR's files (SQLite). */
export async function importFileKeys(keysDir: string, backend: ImportingBackend): Promise<ImportedKey[]> {
  const out: ImportedKey[] = [];
  for (const key of await readKeys(keysDir, backend)) {
    if (key.custody !== 'software') {
      out.push({ purpose: key.purpose, kid: key.kid, outcome: 'already in the token', movedTo: undefined });
      continue;
    }
    const data = JSON.parse(readFileSync(key.file, 'utf8')) as KeyData;
    const result = await importData(backend, data);
    if ('refused' in result) {
      out.push({ purpose: key.purpose, kid: key.kid, outcome: result.refused, movedTo: undefined });
      continue;
    }
    const movedTo = freeName(join(asideDir(keysDir), basename(key.file)));
    renameSync(key.file, movedTo);
    writeKeyFile(key.file, result.held, 'wx');
    out.push({ purpose: key.purpose, kid: result.kid, outcome: 'imported', movedTo });
  }
  return out;
}

/**
 * `import` on the rows of PostgreSQL: every software key is imported first (idempotent), then
 * the rows are rewritten in one transaction; their former sealed text is written beside KEYS_DIR
 * first, so a failure between the two loses nothing.
 */
export async function importDatabaseKeys(
  store: Pick<KeyMaterialStore, 'list' | 'resealAll'>,
  kek: Buffer,
  keysDir: string,
  backend: ImportingBackend,
): Promise<ImportedKey[]> {
  const out: ImportedKey[] = [];
  const replace = new Map<string, string>();
  for (const row of await store.list()) {
    const data = openSealedKey(kek, row.kid, row.purpose, row.sealed) as KeyData;
    if (!data.privateJwk) {
      out.push({ purpose: row.purpose, kid: row.kid, outcome: 'already in the token', movedTo: undefined });
      continue;
    }
    const result = await importData(backend, data);
    if ('refused' in result) {
      out.push({ purpose: row.purpose, kid: row.kid, outcome: result.refused, movedTo: undefined });
      continue;
    }
    const movedTo = freeName(join(asideDir(keysDir), `database-${row.purpose}-${row.kid}.sealed.json`));
    writeFileSync(
      movedTo,
      `${JSON.stringify({ kid: row.kid, purpose: row.purpose, sealed: row.sealed })}\n`,
      {
        mode: 0o600,
        flag: 'wx',
      },
    );
    chmodSync(movedTo, 0o600);
    replace.set(row.kid, sealKey(kek, row.kid, result.held));
    out.push({ purpose: row.purpose, kid: row.kid, outcome: 'imported', movedTo });
  }
  if (replace.size > 0)
    await store.resealAll((row) =>
      row.purpose !== 'iden3-bjj' ? (replace.get(row.kid) ?? row.sealed) : row.sealed,
    );
  return out;
}

/** `rotate`: a new token key for each purpose whose active key is software (the old one retired). */
export async function rotateIntoToken(
  holder: KeyHolder,
  now = new Date(),
): Promise<{ purpose: KeyPurpose; retired: string[]; created: string }[]> {
  const out: { purpose: KeyPurpose; retired: string[]; created: string }[] = [];
  const ring = holder.current();
  for (const [purpose, keys] of [
    ['credential-signing', ring.signingKeys],
    ['partner-jwt', ring.partnerKeys],
  ] as const) {
    const active = keys.find(isActive)!;
    if (active.custody !== 'software') continue;
    if (keys.some((k) => k.standby && !k.retiredAt))
      throw new KeyError(
        `${purpose}: a standby key is prepared; rotate through the server once it signs in the token, or import it (\`keys migrate-to-token import\`)`,
      );
    const { retired, created } = await holder.rotate(purpose, now);
    out.push({ purpose, retired: retired.map((k) => k.kid), created: created.kid });
  }
  return out;
}

/**
 * KEY_BACKEND other than software signs only in its backend: an active or standby software key
 * is refused at start, naming it and the two ways to move it (retired ones stay published and
 * never sign).
 */
export function assertSignsInBackend(ring: KeyRing, backend: KeyBackend): void {
  if (backend.name === 'software') return;
  const inSoftware = [...ring.signingKeys, ...ring.partnerKeys].filter(
    (k: ManagedKey) => k.custody === 'software' && !k.retiredAt,
  );
  if (inSoftware.length > 0)
    throw new KeyError(
      `${inSoftware[0]!.file}: a ${inSoftware[0]!.purpose} key in software with KEY_BACKEND=${backend.name}; move it with \`npm run admin -- keys migrate-to-token import\` (same kid) or \`keys migrate-to-token rotate\` (docs/security.md "Moving keys into the token")`,
    );
}

/** What doctor warns about: software copies set aside by an import, and retired software keys kept. */
export function softwareCopies(keysDir: string, ring: KeyRing | undefined): string[] {
  const found: string[] = [];
  const aside = join(keysDir, SOFTWARE_KEYS_ASIDE);
  if (existsSync(aside)) for (const f of readdirSync(aside)) found.push(join(aside, f));
  for (const k of ring ? [...ring.signingKeys, ...ring.partnerKeys] : [])
    if (k.custody === 'software') found.push(k.file);
  return found;
}
