import { createHash } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { compareChecksum, previousChecksums } from '../migration-checksums.js';

export type SqliteDatabase = Database.Database;

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

/**
 * Opens (creating if needed) the SQLite file in WAL mode and applies pending numbered
 * migrations (`migrations/NNN-name.sql`, in order, each in its own transaction).
 */
export function openSqlite(path: string, options: { migrate?: boolean } = {}): SqliteDatabase {
  prepareDatabaseFile(path);
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  // Two processes may share the file: wait for the writer rather than fail.
  db.pragma('busy_timeout = 5000');
  if (options.migrate !== false) runMigrations(db);
  return db;
}

/** The database file and its WAL companions: what holds the claims and the issuance records. */
export const databaseFiles = (path: string): string[] => [path, `${path}-wal`, `${path}-shm`];

/**
 * Makes the file's folder and the file if missing, owner-only: the folder 0700, the file 0600
 * (SQLite gives its -wal and -shm the file's mode); an existing one is tightened.
 */
export function prepareDatabaseFile(path: string): void {
  if (path === ':memory:') return;
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  if (!existsSync(path)) closeSync(openSync(path, 'a', 0o600));
  else tightenDatabaseFiles(path);
}

/**
 * The files of an existing database (made by an older version, or copied in) that group or others
 * may read or write are made owner-only before SQLite opens them, since new `-wal`/`-shm` files
 * take the database file's mode, and so is its folder, as a new one is made (docs/security.md
 * "Files on disk"): 0600 and 0700. Answers what changed. A file or folder this process may not
 * chmod (another owner, such as a shared `/tmp`) is left as it is: the server still starts, and
 * `admin doctor` fails the database item naming it.
 */
export function tightenDatabaseFiles(path: string): string[] {
  const changed: string[] = [];
  for (const file of [dirname(path), ...databaseFiles(path)]) {
    if (!existsSync(file)) continue;
    if ((statSync(file).mode & 0o077) === 0) continue;
    try {
      chmodSync(file, file === dirname(path) ? 0o700 : 0o600);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EPERM' || code === 'EACCES') continue;
      throw err;
    }
    changed.push(file);
  }
  return changed;
}

/** The database's folder and files whose mode lets group or others in (read-only: for doctor). */
export function looseDatabaseFiles(path: string): { file: string; mode: string }[] {
  return [dirname(path), ...databaseFiles(path)]
    .filter((file) => existsSync(file))
    .map((file) => ({ file, mode: (statSync(file).mode & 0o777).toString(8).padStart(4, '0') }))
    .filter(({ mode }) => (Number.parseInt(mode, 8) & 0o077) !== 0);
}

export class MigrationError extends Error {
  override name = 'MigrationError';
}

const checksum = (sql: string) => createHash('sha256').update(sql, 'utf8').digest('hex');

/**
 * Applies pending migrations in order. Numbers run 001, 002, … without gaps; each applied one is
 * recorded with the sha256 of its file, and a file changed after it was applied (or a database
 * migrated by a newer version) stops start-up naming the file: an applied migration is never
 * edited, a new numbered one is added instead. Returns the names applied.
 */
export function runMigrations(db: SqliteDatabase, dir = MIGRATIONS_DIR): string[] {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
  );
  const columns = db.prepare('PRAGMA table_info(schema_migrations)').all() as Array<{ name: string }>;
  if (!columns.some((c) => c.name === 'checksum'))
    db.exec('ALTER TABLE schema_migrations ADD COLUMN checksum TEXT');
  const { problems, files } = planMigrations(db, dir);
  if (problems.length > 0) throw new MigrationError(problems[0]!);
  const appliedNow: string[] = [];
  for (const file of files) {
    // Databases migrated before checksums were recorded get the file's checksum on first sight.
    if (file.state === 'unrecorded-checksum')
      db.prepare('UPDATE schema_migrations SET checksum = ? WHERE version = ?').run(file.sum, file.version);
    if (file.state !== 'pending') continue;
    // IMMEDIATE: a second process starting at the same time waits instead of applying twice.
    db.transaction(() => {
      const again = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(file.version);
      if (again) return;
      db.exec(file.sql);
      db.prepare(
        'INSERT INTO schema_migrations (version, name, applied_at, checksum) VALUES (?, ?, ?, ?)',
      ).run(file.version, file.name, new Date().toISOString(), file.sum);
      appliedNow.push(file.name);
    }).immediate();
  }
  return appliedNow;
}

export interface PlannedMigration {
  version: number;
  name: string;
  sql: string;
  sum: string;
  /** `changed`: applied, but the file differs from the checksum recorded then (a problem too). */
  state: 'applied' | 'unrecorded-checksum' | 'pending' | 'changed';
}

/**
 * What `runMigrations` would do, without writing (also `doctor`): each file's state, and the
 * problems that stop start-up (a gap, a changed applied file, a database newer than this version).
 */
export function planMigrations(
  db: SqliteDatabase,
  dir = MIGRATIONS_DIR,
): { problems: string[]; files: PlannedMigration[] } {
  const problems: string[] = [];
  const names = readdirSync(dir)
    .filter((f) => /^\d{3}-[\w-]+\.sql$/.test(f))
    .sort();
  names.forEach((file, i) => {
    if (Number(file.slice(0, 3)) !== i + 1)
      problems.push(
        `${join(dir, file)}: migration numbers must run without gaps (expected ${String(i + 1).padStart(3, '0')})`,
      );
  });
  if (problems.length > 0) return { problems: problems.slice(0, 1), files: [] };
  const hasTable = db
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
    .get();
  const hasChecksum =
    hasTable &&
    (db.prepare('PRAGMA table_info(schema_migrations)').all() as Array<{ name: string }>).some(
      (c) => c.name === 'checksum',
    );
  const applied = new Map(
    (hasTable
      ? (db
          .prepare(
            `SELECT version, name, ${hasChecksum ? 'checksum' : 'NULL AS checksum'} FROM schema_migrations`,
          )
          .all() as MigrationRow[])
      : []
    ).map((r) => [r.version, r]),
  );
  const newest = Math.max(0, ...applied.keys());
  if (newest > names.length)
    problems.push(
      `DATABASE_URL: the database has migration ${applied.get(newest)?.name}, newer than this version knows (${names.at(-1)}); run the version that migrated it`,
    );
  const previous = previousChecksums(dir);
  const files = names.map((name): PlannedMigration => {
    const version = Number(name.slice(0, 3));
    const sql = readFileSync(join(dir, name), 'utf8');
    const sum = checksum(sql);
    const done = applied.get(version);
    const seen = done?.checksum == null ? undefined : compareChecksum(done.checksum, sum, previous.get(name));
    if (done && seen === 'changed')
      problems.push(
        `${join(dir, name)}: changed after it was applied to this database (recorded sha256 ${done.checksum?.slice(0, 12)}…, file ${sum.slice(0, 12)}…); restore the released file and put the change in a new migration`,
      );
    const state = !done
      ? 'pending'
      : // An earlier comment-only version's checksum is recorded again as the file's, like a missing one.
        done.checksum === null || seen === 'previous'
        ? 'unrecorded-checksum'
        : seen === 'same'
          ? 'applied'
          : 'changed';
    return { version, name, sql, sum, state };
  });
  return { problems, files };
}

interface MigrationRow {
  version: number;
  name: string;
  checksum: string | null;
}
