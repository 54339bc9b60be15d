import { chmodSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { looseDatabaseFiles, openSqlite } from '../../../src/store/sqlite/database.js';
import { removeDir, tempDir } from '../../helpers/tmp.js';

const mode = (file: string) => statSync(file).mode & 0o777;

// docs/security.md "Files on disk": the SQLite file holds claims (personal data) and issuance
// records; a database left group- or world-readable by an older version or a copy is tightened
// when it is opened, and its new -wal/-shm files follow.
describe('SQLite file modes', () => {
  const dir = tempDir();
  afterAll(() => removeDir(dir));

  it('a new database is 0600, with its -wal and -shm', () => {
    const path = join(dir, 'new.db');
    const db = openSqlite(path);
    db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)');
    for (const file of [path, `${path}-wal`, `${path}-shm`]) expect(mode(file)).toBe(0o600);
    db.close();
  });

  it('an existing 0644 database (and a 0666 -wal) are made 0600 when opened; new companions follow', () => {
    const path = join(dir, 'old.db');
    const first = openSqlite(path);
    first.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)');
    first.close(); // a clean close removes -wal and -shm
    chmodSync(path, 0o644);
    expect(looseDatabaseFiles(path)).toEqual([{ file: path, mode: '0644' }]);
    const db = openSqlite(path);
    db.exec('INSERT INTO t VALUES (2)');
    for (const file of [path, `${path}-wal`, `${path}-shm`]) expect(mode(file)).toBe(0o600);
    chmodSync(`${path}-wal`, 0o666);
    expect(looseDatabaseFiles(path)).toEqual([{ file: `${path}-wal`, mode: '0666' }]);
    const again = openSqlite(path);
    expect(mode(`${path}-wal`)).toBe(0o600);
    expect(looseDatabaseFiles(path)).toEqual([]);
    again.close();
    db.close();
  });

  it('an existing database in a 0755 folder: the folder is made 0700 when opened, and named while it is loose', () => {
    const folder = join(dir, 'shared');
    const path = join(folder, 'issuer.db');
    openSqlite(path).close();
    chmodSync(folder, 0o755);
    expect(looseDatabaseFiles(path)).toEqual([{ file: folder, mode: '0755' }]);
    const db = openSqlite(path);
    expect(mode(folder)).toBe(0o700);
    expect(mode(path)).toBe(0o600);
    expect(looseDatabaseFiles(path)).toEqual([]);
    db.close();
  });
});
