import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { z } from 'zod';

/**
 * Credential-signing and partner-JWT keys (issue: Keys). One JSON file per key in KEYS_DIR,
 * `<purpose>-<kid>.json`, mode 0600. Exactly one key per purpose is active (no `retiredAt`);
 * retired signing keys stay published until the credentials they signed expire.
 */
export type KeyPurpose = 'credential-signing' | 'partner-jwt';
const PURPOSES: readonly KeyPurpose[] = ['credential-signing', 'partner-jwt'];

export interface ManagedKey {
  purpose: KeyPurpose;
  kid: string;
  alg: 'ES256' | 'RS256';
  privateKey: KeyObject;
  /** Public JWK with `kid`, `alg`, `use`. */
  publicJwk: JWK;
  createdAt: Date;
  retiredAt: Date | undefined;
  file: string;
}

export interface KeyRing {
  /** The key that signs new credentials. */
  signing: ManagedKey;
  /** Every credential-signing key on disk, active first. */
  signingKeys: ManagedKey[];
  /** The key that signs partner JWTs. */
  partner: ManagedKey;
  partnerKeys: ManagedKey[];
}

export class KeyError extends Error {
  override name = 'KeyError';
}

const KeyFileSchema = z.object({
  purpose: z.enum(['credential-signing', 'partner-jwt']),
  createdAt: z.iso.datetime(),
  retiredAt: z.iso.datetime().optional(),
  privateJwk: z.looseObject({ kty: z.string(), kid: z.string().min(1).optional() }),
});
type KeyFile = z.infer<typeof KeyFileSchema>;

const KEY_FILE = /^(credential-signing|partner-jwt)-[A-Za-z0-9_-]+\.json$/;

/** Loads and validates every key file; in dev, generates the missing ones. */
export async function loadKeyRing(dir: string, options: { generateIfMissing: boolean }): Promise<KeyRing> {
  let keys = await readKeys(dir);
  for (const purpose of PURPOSES) {
    if (!keys.some((k) => k.purpose === purpose && !k.retiredAt)) {
      if (!options.generateIfMissing) {
        throw new KeyError(`${dir}: no active ${purpose} key; create one with \`npm run keys:generate\``);
      }
      await generateKey(dir, purpose);
    }
  }
  keys = await readKeys(dir);
  const pick = (purpose: KeyPurpose) => {
    const all = keys.filter((k) => k.purpose === purpose);
    const active = all.filter((k) => !k.retiredAt);
    if (active.length !== 1) {
      throw new KeyError(
        `${dir}: ${active.length} active ${purpose} keys (${active.map((k) => k.file).join(', ')}); exactly one may lack retiredAt`,
      );
    }
    const current = active[0]!;
    return { current, all: [current, ...all.filter((k) => k !== current).sort(byNewest)] };
  };
  const signing = pick('credential-signing');
  const partner = pick('partner-jwt');
  if (signing.current.alg !== 'ES256') {
    throw new KeyError(`${signing.current.file}: credential-signing keys must be EC P-256 (ES256)`);
  }
  return {
    signing: signing.current,
    signingKeys: signing.all,
    partner: partner.current,
    partnerKeys: partner.all,
  };
}

const byNewest = (a: ManagedKey, b: ManagedKey) => b.createdAt.getTime() - a.createdAt.getTime();

export async function readKeys(dir: string): Promise<ManagedKey[]> {
  if (!existsSync(dir)) return [];
  const keys: ManagedKey[] = [];
  const seen = new Map<string, string>();
  for (const name of readdirSync(dir).sort()) {
    if (!KEY_FILE.test(name)) continue;
    const file = join(dir, name);
    const key = await parseKeyFile(file);
    const other = seen.get(key.kid);
    if (other) throw new KeyError(`${file}: duplicate kid ${key.kid} (also in ${other})`);
    seen.set(key.kid, file);
    keys.push(key);
  }
  return keys;
}

/** Validates one key file: JSON shape, curve, private part, kid; messages name the file and field. */
export async function parseKeyFile(file: string): Promise<ManagedKey> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new KeyError(`${file}: not readable JSON (${(err as Error).message})`);
  }
  const parsed = KeyFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new KeyError(`${file}: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  const data: KeyFile = parsed.data;
  const jwk = data.privateJwk as JWK;
  let alg: 'ES256' | 'RS256';
  if (jwk.kty === 'EC') {
    if (jwk.crv !== 'P-256')
      throw new KeyError(`${file}: privateJwk.crv: must be P-256, found ${String(jwk.crv)}`);
    alg = 'ES256';
  } else if (jwk.kty === 'RSA' && data.purpose === 'partner-jwt') {
    alg = 'RS256';
  } else {
    throw new KeyError(
      `${file}: privateJwk.kty: ${data.purpose} keys must be EC P-256${data.purpose === 'partner-jwt' ? ' or RSA' : ''}`,
    );
  }
  if (typeof jwk.d !== 'string') throw new KeyError(`${file}: privateJwk.d: the private part is missing`);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' });
  } catch (err) {
    throw new KeyError(`${file}: privateJwk: not a valid key (${(err as Error).message})`);
  }
  if (alg === 'RS256' && (privateKey.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) {
    throw new KeyError(`${file}: privateJwk.n: RSA keys must be at least 2048 bits`);
  }
  const exported = createPublicKey(privateKey).export({ format: 'jwk' }) as JWK;
  const thumbprint = await calculateJwkThumbprint(exported, 'sha256');
  const kid = jwk.kid ?? thumbprint;
  return {
    purpose: data.purpose,
    kid,
    alg,
    privateKey,
    publicJwk: { ...exported, kid, alg, use: 'sig' },
    createdAt: new Date(data.createdAt),
    retiredAt: data.retiredAt ? new Date(data.retiredAt) : undefined,
    file,
  };
}

/** Generates an ES256 key whose kid is its RFC 7638 thumbprint, written with mode 0600. */
export async function generateKey(dir: string, purpose: KeyPurpose, now = new Date()): Promise<ManagedKey> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = privateKey.export({ format: 'jwk' }) as JWK;
  const kid = await calculateJwkThumbprint(jwk, 'sha256');
  const file = join(dir, `${purpose}-${kid}.json`);
  const body: KeyFile = {
    purpose,
    createdAt: now.toISOString(),
    privateJwk: { ...jwk, kid, alg: 'ES256' } as KeyFile['privateJwk'],
  };
  writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return parseKeyFile(file);
}

/** Marks the active key of a purpose retired (it stays on disk and published) and adds a new one. */
export async function rotateKey(
  dir: string,
  purpose: KeyPurpose,
  now = new Date(),
): Promise<{ retired: ManagedKey[]; created: ManagedKey }> {
  const keys = (await readKeys(dir)).filter((k) => k.purpose === purpose && !k.retiredAt);
  for (const key of keys) {
    const data = JSON.parse(readFileSync(key.file, 'utf8')) as KeyFile;
    data.retiredAt = now.toISOString();
    writeFileSync(key.file, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
  }
  const created = await generateKey(dir, purpose, now);
  return { retired: keys, created };
}
