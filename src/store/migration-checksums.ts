import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * An applied migration must not change: its sha256 is recorded, and a file that no longer matches
 * stops the start. The one edit allowed is to its comments (a citation reworded), and then the
 * file's earlier checksums are listed in `previous-checksums.json` beside it, by file name. A
 * database recorded with one of them starts, and its record is brought to the current checksum;
 * any other difference is still a changed migration.
 */
export function previousChecksums(dir: string): ReadonlyMap<string, readonly string[]> {
  const file = join(dir, 'previous-checksums.json');
  if (!existsSync(file)) return new Map();
  return new Map(Object.entries(JSON.parse(readFileSync(file, 'utf8')) as Record<string, string[]>));
}

/** What a recorded checksum says of the file now: the same, an earlier comment-only version, or changed. */
export function compareChecksum(
  recorded: string,
  current: string,
  previous: readonly string[] | undefined,
): 'same' | 'previous' | 'changed' {
  if (recorded === current) return 'same';
  return previous?.includes(recorded) ? 'previous' : 'changed';
}
