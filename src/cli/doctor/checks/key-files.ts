import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DEV_EMULATOR_FILE, DEV_SECRETS_FILE } from '../../../development/development-files.js';
import { BJJ_KEY_FILE } from '../../../formats/iden3-bjj/bjj-key.js';
import { isKeyFileName } from '../../../keys/key-ring.js';
import type { DoctorCheck, DoctorContext } from '../doctor-context.js';
import { type DoctorLine, line } from '../line.js';

const imported = 'imported key files';

/**
 * Every key file owner-only (0600). A file a development start wrote (its emulator URL, its
 * secrets, a key marked `"environment": "development"`) has no place in production at all: the
 * advice for it is to move it aside, not to tighten its mode. Where the database holds the keys
 * (PostgreSQL), the private key files its first start imported are a WARN: the instances read the
 * sealed rows, and the plaintext copies belong in offline backup
 * (docs/security.md "Keys shared by several instances").
 */
export const keyFiles: DoctorCheck = {
  items: ['key files', imported],
  async run(ctx) {
    const dir = ctx.config.keysDir;
    if (!existsSync(dir)) return [];
    return [...modes(dir), ...(await importedCopies(ctx, dir))];
  },
};

function modes(dir: string): DoctorLine[] {
  const lines: DoctorLine[] = [];
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    const file = join(dir, name);
    const mode = statSync(file).mode & 0o777;
    if (!(mode & 0o077)) continue;
    const shown = `${file} is mode ${mode.toString(8).padStart(4, '0')}`;
    lines.push(
      line(
        'key files',
        'FAIL',
        isDevelopmentFile(file, name)
          ? `${shown}, a file a development start wrote; move it out of ${dir} (production does not use it)`
          : `${shown}; run chmod 600 on it`,
      ),
    );
  }
  return lines.length > 0 ? lines : [line('key files', 'PASS', `every file in ${dir} is owner-only (0600)`)];
}

/** The plaintext private keys left in `dir` that the database already holds sealed. */
async function importedCopies(ctx: DoctorContext, dir: string): Promise<DoctorLine[]> {
  const store = await ctx.store();
  if (!store?.keys) return [];
  // A database of an older version, or one not yet started on: nothing imported yet.
  const rows = await store.keys.list().catch(() => []);
  const iden3 = await store.keys.iden3Key().catch(() => undefined);
  if (rows.length === 0 && !iden3) return [];
  const left = readdirSync(dir)
    .sort()
    .filter(
      (name) =>
        (rows.length > 0 && isKeyFileName(name) && holdsPrivateKey(join(dir, name))) ||
        (iden3 !== undefined && name === BJJ_KEY_FILE),
    );
  if (left.length === 0) return [];
  return [
    line(
      imported,
      'WARN',
      `${left.join(', ')} in ${dir}: plaintext private keys the database already holds sealed under KEY_ENCRYPTION_KEY (the instances read those); move them to offline backup`,
    ),
  ];
}

function holdsPrivateKey(file: string): boolean {
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { privateJwk?: unknown }).privateJwk !== undefined;
  } catch {
    // Not JSON, or unreadable: not a key the import could have read.
    return false;
  }
}

function isDevelopmentFile(file: string, name: string): boolean {
  if (name === DEV_EMULATOR_FILE || name === DEV_SECRETS_FILE) return true;
  try {
    return (
      (JSON.parse(readFileSync(file, 'utf8')) as { environment?: unknown }).environment === 'development'
    );
  } catch {
    // Not JSON, or unreadable: the key loader reports it with its own message.
    return false;
  }
}
