import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { ClaimsRecord } from '../store/store.js';

/**
 * The files a development start writes and reads, described here (not in src/dev) because
 * production reads them too, to refuse what they hold (development-state.ts).
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

export const DEV_SECRETS_FILE = 'dev-secrets.json';

/** The values of KEYS_DIR/dev-secrets.json, if the file is there and readable (for refusing them). */
export function readDevSecrets(keysDir: string): DevSecrets | undefined {
  const file = join(keysDir, DEV_SECRETS_FILE);
  if (!existsSync(file)) return undefined;
  try {
    const parsed = DevSecretsSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
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
