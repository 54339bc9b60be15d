import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DEV_EMULATOR_FILE, DEV_SECRETS_FILE } from '../../../development/development-files.js';
import type { DoctorCheck } from '../doctor-context.js';
import { type DoctorLine, line } from '../line.js';

/**
 * Every key file owner-only (0600). A file a development start wrote (its emulator URL, its
 * secrets, a key marked `"environment": "development"`) has no place in production at all: the
 * advice for it is to move it aside, not to tighten its mode.
 */
export const keyFiles: DoctorCheck = {
  items: ['key files'],
  run({ config }) {
    const dir = config.keysDir;
    if (!existsSync(dir)) return [];
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
    return lines.length > 0
      ? lines
      : [line('key files', 'PASS', `every file in ${dir} is owner-only (0600)`)];
  },
};

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
