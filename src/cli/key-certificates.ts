import type { KeyObject } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../config/config.js';
import { DEVELOPMENT_KEY_ENCRYPTION_KEY, parseKeyEncryptionKey } from '../config/key-encryption-key.js';
import { attachChain, chainProblems, originHost, pemToX5c } from '../keys/certificates.js';
import { certifyWithDevCa, DEV_CA_PEM } from '../keys/dev-ca.js';
import type { KeyBackend } from '../keys/key-backend.js';
import { keyOfRow, storedKey } from '../keys/key-holder.js';
import { generateKey, KeyError, loadKeyRing, newKeyData, readKeys } from '../keys/key-ring.js';
import { certificateRequest } from '../keys/x509.js';
import { redactDatabaseUrl } from '../store/database-url.js';
import { parseDatabaseUrl } from '../store/engines.js';
import type { KeyMaterialStore } from '../store/store.js';

/**
 * SD_JWT_ISSUER=x5c keys (docs/going-live.md): standby keys with a certificate request, chains attached to
 * keys, and development chains. The server is not involved: on SQLite these are KEYS_DIR's files;
 * with DATABASE_URL on PostgreSQL, the sealed rows every instance shares (docs/several-instances.md), whose
 * version bump makes every instance reload them within its poll.
 */

export interface PreparedKey {
  kid: string;
  file: string;
  csr: string | undefined;
}

/**
 * `npm run admin -- keys prepare [--csr <file>]`: a standby credential-signing key for
 * the next rotation, published at once but not signing. With `--csr`, a PKCS#10 request for the
 * origin's host, to be certified and attached with `keys certificate` before rotating in x5c mode.
 */
export async function prepareKey(
  keysDir: string,
  origin: string,
  csrFile?: string,
  backend?: KeyBackend,
): Promise<PreparedKey> {
  const key = await generateKey(keysDir, 'credential-signing', new Date(), { standby: true, backend });
  if (csrFile !== undefined) await writeCsr(key, origin, csrFile);
  return { kid: key.kid, file: key.file, csr: csrFile };
}

/** A PKCS#10 request signed by the key's backend (the token, with KEY_BACKEND=pkcs11). */
async function writeCsr(
  key: Parameters<typeof certificateRequest>[0],
  origin: string,
  csrFile: string,
): Promise<void> {
  const csr = await certificateRequest(key, origin);
  writeFileSync(csrFile, `${csr.toString('pem')}\n`);
}

export interface AttachedCertificate {
  kid: string;
  file: string;
  certificates: number;
}

/**
 * `npm run admin -- keys certificate <kid> <chain.pem>`: checks the PEM chain (leaf
 * first) against the credential-signing key `kid` and ISSUER_ORIGIN's host, then writes it into
 * the key file as its JWK `x5c`. A chain for another key, an expired one or one whose leaf does
 * not name the host is refused, with every reason.
 */
export async function attachCertificate(
  keysDir: string,
  kid: string,
  pemFile: string,
  origin: string,
  now = new Date(),
  backend?: KeyBackend,
): Promise<AttachedCertificate> {
  const key = (await readKeys(keysDir, backend)).find(
    (k) => k.kid === kid && k.purpose === 'credential-signing',
  );
  if (!key) throw new KeyError(`${keysDir}: no credential-signing key with kid ${kid}`);
  const x5c = readChain(pemFile);
  checkChain(x5c, key.publicKey, kid, pemFile, origin, now);
  attachChain(key.file, x5c);
  return { kid, file: key.file, certificates: x5c.length };
}

function readChain(pemFile: string): string[] {
  let x5c: string[];
  try {
    x5c = pemToX5c(readFileSync(pemFile, 'utf8'));
  } catch (err) {
    throw new KeyError(`${pemFile}: not a PEM certificate chain (${(err as Error).message})`);
  }
  if (x5c.length === 0) throw new KeyError(`${pemFile}: no -----BEGIN CERTIFICATE----- block`);
  return x5c;
}

function checkChain(x5c: string[], key: KeyObject, kid: string, pemFile: string, origin: string, now: Date) {
  const problems = chainProblems(x5c, key, origin, now);
  if (problems.length > 0) throw new KeyError(`${pemFile}: refused for ${kid}:\n  ${problems.join('\n  ')}`);
}

/** The shared key rows of a PostgreSQL DATABASE_URL, and the key that seals them. */
export interface DatabaseKeys {
  keys: KeyMaterialStore;
  kek: Buffer;
  /** DATABASE_URL without its password, for messages. */
  where: string;
  /** KEY_BACKEND: where a new key is made and an existing one signs. */
  backend?: KeyBackend | undefined;
}

/**
 * Runs `fn` on the key rows of DATABASE_URL when it is PostgreSQL (KEY_ENCRYPTION_KEY as the
 * server reads it: required in production, the development key otherwise); undefined on SQLite.
 */
export async function withDatabaseKeys<T>(
  env: Record<string, string | undefined>,
  databaseUrl: string,
  cwd: string,
  fn: (db: DatabaseKeys) => Promise<T>,
): Promise<T | undefined> {
  const target = parseDatabaseUrl(databaseUrl, cwd);
  if (typeof target === 'string') throw new KeyError(`DATABASE_URL: ${target}`);
  if (target.kind !== 'postgres') return undefined;
  let kek: Buffer = DEVELOPMENT_KEY_ENCRYPTION_KEY;
  if (env.KEY_ENCRYPTION_KEY !== undefined) {
    const parsed = parseKeyEncryptionKey(env.KEY_ENCRYPTION_KEY);
    if (typeof parsed === 'string') throw new KeyError(`KEY_ENCRYPTION_KEY: ${parsed}`);
    kek = parsed;
  } else if (env.NODE_ENV === 'production') {
    throw new KeyError('KEY_ENCRYPTION_KEY: required in production with PostgreSQL (it seals the keys)');
  }
  // Loaded here: only a PostgreSQL deployment needs the driver.
  const { openPostgresStore } = await import('../store/postgres/index.js');
  const store = await openPostgresStore(target.url, { poolMax: 1 });
  try {
    return await fn({ keys: store.keys, kek, where: `database ${redactDatabaseUrl(target.url)}` });
  } finally {
    await store.close();
  }
}

/**
 * `keys prepare` on PostgreSQL: the standby key is a sealed row (published by every instance
 * within a poll, promoted by the next rotation through any of them).
 */
export async function prepareDatabaseKey(
  db: DatabaseKeys,
  origin: string,
  csrFile?: string,
  now = new Date(),
): Promise<PreparedKey> {
  const { kid, data } = await newKeyData('credential-signing', now, 'production', db.backend);
  const row = storedKey(db.kek, kid, data, { standby: true });
  if (csrFile !== undefined) await writeCsr(await keyOfRow(db.kek, row, db.backend), origin, csrFile);
  await db.keys.addStandby(row);
  return { kid, file: db.where, csr: csrFile };
}

/**
 * `keys certificate` on PostgreSQL: the chain is checked exactly as for a file, against the
 * row's key as it is under the key lock, then kept on the row.
 */
export async function attachDatabaseCertificate(
  db: DatabaseKeys,
  kid: string,
  pemFile: string,
  origin: string,
  now = new Date(),
): Promise<AttachedCertificate> {
  const x5c = readChain(pemFile);
  const found = await db.keys.attachChain(kid, x5c, async (row) => {
    checkChain(x5c, (await keyOfRow(db.kek, row, db.backend)).publicKey, kid, pemFile, origin, now);
  });
  if (!found) throw new KeyError(`${db.where}: no credential-signing key with kid ${kid}`);
  return { kid, file: db.where, certificates: x5c.length };
}

/**
 * `npm run keys:generate -- --x5c` (development only): the active credential-signing
 * key gets a leaf from KEYS_DIR's development CA naming ISSUER_ORIGIN's host, unless its chain
 * is already valid for that host.
 */
export async function generateDevChain(
  keysDir: string,
  env: NodeJS.ProcessEnv,
  now = new Date(),
  backend?: KeyBackend,
): Promise<{ kid: string; host: string; caPem: string; created: boolean }> {
  if (env.NODE_ENV === 'production') {
    throw new KeyError(
      '--x5c makes a development CA; in production attach a real chain with `npm run admin -- keys certificate`',
    );
  }
  // The same ISSUER_ORIGIN (and default) the server will use.
  const origin = loadConfig({ ...env, KEYS_DIR: keysDir }).config.publicOrigin;
  const ring = await loadKeyRing(keysDir, { generateIfMissing: false, backend });
  const key = ring.signing;
  const valid = key.x5c !== undefined && chainProblems(key.x5c, key.publicKey, origin, now).length === 0;
  if (!valid) await certifyWithDevCa(keysDir, key, origin, now);
  return { kid: key.kid, host: originHost(origin), caPem: join(keysDir, DEV_CA_PEM), created: !valid };
}
