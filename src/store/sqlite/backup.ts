import { chmodSync, closeSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';

/**
 * A consistent copy of a live SQLite database (better-sqlite3's `backup`, SQLite's online backup
 * API): safe while another process writes, since a write during the copy restarts it. The copy
 * is created owner-only, like the database.
 */
export async function backupSqlite(source: string, target: string): Promise<number> {
  closeSync(openSync(target, 'wx', 0o600));
  const db = new Database(source, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    const { totalPages } = await db.backup(target);
    chmodSync(target, 0o600);
    return totalPages;
  } finally {
    db.close();
  }
}
