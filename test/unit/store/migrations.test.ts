import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { previousChecksums } from '../../../src/store/migration-checksums.js';
import { MigrationError, runMigrations } from '../../../src/store/sqlite/database.js';
import { removeDir, tempDir } from '../../helpers/tmp.js';

const shipped = join(process.cwd(), 'src/store/sqlite/migrations');

// docs/operations.md "Backup, restore, upgrade": numbered without gaps, recorded with checksums, an edited applied file stops start-up.
describe('SQLite migrations', () => {
  let dir = '';
  afterEach(() => {
    if (dir) removeDir(dir);
    dir = '';
  });
  const copyShipped = () => {
    dir = tempDir();
    const migrations = join(dir, 'migrations');
    mkdirSync(migrations);
    for (const f of readdirSync(shipped)) copyFileSync(join(shipped, f), join(migrations, f));
    return migrations;
  };

  it('the shipped migrations run 001… without gaps and are recorded with their checksum', () => {
    const files = readdirSync(shipped)
      .filter((f) => f.endsWith('.sql'))
      .sort();
    expect(files.map((f) => Number(f.slice(0, 3)))).toEqual(files.map((_, i) => i + 1));
    const db = new Database(':memory:');
    runMigrations(db);
    const rows = db
      .prepare('SELECT version, checksum FROM schema_migrations ORDER BY version')
      .all() as Array<{
      checksum: string;
    }>;
    expect(rows).toHaveLength(files.length);
    expect(rows.every((r) => /^[0-9a-f]{64}$/.test(r.checksum))).toBe(true);
    db.close();
  });

  it('a migration changed after it was applied stops start-up naming the file', () => {
    const migrations = copyShipped();
    const db = new Database(join(dir, 'db.sqlite'));
    runMigrations(db, migrations);
    writeFileSync(join(migrations, '004-admin.sql'), '-- edited\nSELECT 1;\n');
    expect(() => runMigrations(db, migrations)).toThrow(MigrationError);
    expect(() => runMigrations(db, migrations)).toThrow(/004-admin\.sql: changed after it was applied/);
    db.close();
  });

  it('a gap in the numbers is refused, naming the file', () => {
    const migrations = copyShipped();
    writeFileSync(join(migrations, '099-later.sql'), 'SELECT 1;');
    const db = new Database(':memory:');
    expect(() => runMigrations(db, migrations)).toThrow(
      /099-later\.sql: migration numbers must run without gaps/,
    );
    db.close();
  });

  it('a database migrated before checksums existed gets them recorded, then checked', () => {
    const migrations = copyShipped();
    const db = new Database(join(dir, 'old.sqlite'));
    runMigrations(db, migrations);
    db.exec('UPDATE schema_migrations SET checksum = NULL');
    runMigrations(db, migrations);
    expect(db.prepare('SELECT COUNT(*) AS n FROM schema_migrations WHERE checksum IS NULL').get()).toEqual({
      n: 0,
    });
    db.close();
  });

  it('a database migrated before a comment-only edit (its checksum in previous-checksums.json) starts and is brought up to date', () => {
    const migrations = copyShipped();
    const previous = previousChecksums(migrations);
    expect(previous.size).toBeGreaterThan(0);
    const db = new Database(join(dir, 'earlier.sqlite'));
    runMigrations(db, migrations);
    const current = new Map(
      (
        db.prepare('SELECT name, checksum FROM schema_migrations').all() as Array<{
          name: string;
          checksum: string;
        }>
      ).map((r) => [r.name, r.checksum]),
    );
    const setSum = db.prepare('UPDATE schema_migrations SET checksum = ? WHERE name = ?');
    for (const [name, sums] of previous) setSum.run(sums[0], name);
    expect(runMigrations(db, migrations)).toEqual([]);
    for (const name of previous.keys())
      expect(db.prepare('SELECT checksum FROM schema_migrations WHERE name = ?').get(name)).toEqual({
        checksum: current.get(name),
      });
    // Any other recorded checksum is still a changed migration.
    setSum.run('0'.repeat(64), [...previous.keys()][0]);
    expect(() => runMigrations(db, migrations)).toThrow(/changed after it was applied/);
    db.close();
  });
});
