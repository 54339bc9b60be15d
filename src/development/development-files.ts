import { generateKeyPairSync } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { DEV_CA_FILE, DEV_CA_PEM, DEV_SECRETS_FILE, DEVELOPMENT_KEYS_SUBDIR } from '../keys/key-files.js';
import type { Logger } from '../model.js';
import type { ClaimsRecord } from '../store/store.js';

/**
 * The files a development start writes and reads, described apart from the start itself
 * (start.ts) because production reads them too, to refuse what they hold (production-guard.ts).
 */

/**
 * KEYS_DIR/dev-secrets.json (docs/configuration.md): API keys and partner id a development start generates and
 * keeps (git-ignored, 0600). The file says it is development's (`environment`).
 */
export const DevSecretsSchema = z.object({
  environment: z.literal('development').optional(),
  apiKey: z.string().min(32),
  adminApiKey: z.string().min(32),
  partnerId: z.uuid(),
});
export type DevSecrets = z.infer<typeof DevSecretsSchema>;

export { DEV_SECRETS_FILE };

/** KEYS_DIR/dev-emulator.json: the URL of the emulator a development start runs, for `npm run demo`. */
export const DEV_EMULATOR_FILE = 'dev-emulator.json';

/**
 * KEYS_DIR/dev-request-encryption.pem: the OpenID4VCI credential request encryption key (P-256,
 * PKCS#8, 0600) a development start generates when OID4VCI_REQUEST_ENCRYPTION_KEY_FILE is unset.
 */
export const DEV_REQUEST_ENCRYPTION_KEY_FILE = 'dev-request-encryption.pem';

/**
 * `keysDir`/dev-request-encryption.pem, created on first use: the P-256 key a development issuer
 * publishes as `credential_request_encryption`, so that its metadata, which offers
 * `credential_response_encryption`, carries both as OpenID4VCI 1.0 (§12.2.4) asks. A development
 * tenant of a `TENANCY=multi` deployment gets its own, in its keys folder.
 */
export function developmentRequestKey(keysDir: string, log?: Logger): string {
  const file = join(keysDir, DEV_REQUEST_ENCRYPTION_KEY_FILE);
  if (!existsSync(file)) {
    mkdirSync(keysDir, { recursive: true, mode: 0o700 });
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    // Written whole, then linked into place: processes starting at once (WORKERS=N) never read a
    // part of it, and the first one's file is the key.
    const written = `${file}.${process.pid}.tmp`;
    writeFileSync(written, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    try {
      linkSync(written, file);
      log?.info({ file }, 'generated the development credential request encryption key');
    } catch (err) {
      if ((err as { code?: string }).code !== 'EEXIST') throw err;
    } finally {
      rmSync(written, { force: true });
    }
  }
  return file;
}

/** KEYS_DIR/dev-ca.json and dev-ca.pem: the development CA of `keys:generate -- --x5c` (src/keys/dev-ca.ts). */
/** Where production `keys:generate` moves what development wrote in KEYS_DIR (inside KEYS_DIR). */
export { DEV_CA_FILE, DEV_CA_PEM, DEVELOPMENT_KEYS_SUBDIR };

/**
 * The files of KEYS_DIR only development writes, besides the key files it marks
 * `environment: development`: production `keys:generate` moves them all to KEYS_DIR/development/.
 */
export const DEVELOPMENT_ONLY_FILES: readonly string[] = [
  DEV_SECRETS_FILE,
  DEV_EMULATOR_FILE,
  DEV_CA_FILE,
  DEV_CA_PEM,
  DEV_REQUEST_ENCRYPTION_KEY_FILE,
];

/**
 * The development secrets of KEYS_DIR, for refusing them: KEYS_DIR/dev-secrets.json and the one
 * production `keys:generate` moved to KEYS_DIR/development/, each if there and readable.
 */
export function readDevSecrets(keysDir: string): { file: string; secrets: DevSecrets }[] {
  const found: { file: string; secrets: DevSecrets }[] = [];
  for (const file of [
    join(keysDir, DEV_SECRETS_FILE),
    join(keysDir, DEVELOPMENT_KEYS_SUBDIR, DEV_SECRETS_FILE),
  ]) {
    if (!existsSync(file)) continue;
    try {
      const parsed = DevSecretsSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
      if (parsed.success) found.push({ file, secrets: parsed.data });
    } catch {
      // Unreadable: nothing to compare with.
    }
  }
  return found;
}

/** `examples/claims.json`: the claims a development start seeds into an empty claims table. */
export const ClaimsFileSchema = z.array(
  z.object({
    userId: z.string().min(1),
    schemaId: z.string().min(1),
    claims: z.record(z.string(), z.unknown()),
    expiresAt: z.iso.datetime({ offset: true }).optional(),
  }),
);

export function readClaimsFile(file: string): ClaimsRecord[] {
  const parsed = ClaimsFileSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`${file}: ${issue.path.join('.')}: ${issue.message}`);
  }
  return parsed.data.map((r) => ({ ...r, expiresAt: r.expiresAt ? new Date(r.expiresAt) : null }));
}
