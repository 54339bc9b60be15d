import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqlite, type SqliteDatabase } from '../../../src/store/sqlite/database.js';
import { GroupCommit } from '../../../src/store/sqlite/group-commit.js';
import { removeDir, tempDir } from '../../helpers/tmp.js';

// Group commit: a real WAL file and a second connection to it, as a second process would see it.
describe('GroupCommit', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) removeDir(d);
  });

  function open(): { db: SqliteDatabase; other: Database.Database } {
    const dir = tempDir();
    dirs.push(dir);
    const file = join(dir, 'g.db');
    const db = openSqlite(file, { migrate: false });
    db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)');
    const other = new Database(file);
    other.pragma('busy_timeout = 0');
    return { db, other };
  }
  const keysSeenBy = (conn: Database.Database) =>
    (conn.prepare('SELECT k FROM t ORDER BY k').all() as Array<{ k: string }>).map((r) => r.k);

  it('commits the writes of one turn in one transaction, and resolves each only once committed', async () => {
    const { db, other } = open();
    const writes = new GroupCommit(db);
    const insert = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
    const seenInside: string[][] = [];
    const seenAfter: string[][] = [];
    const all = ['a', 'b', 'c'].map((k, i) =>
      writes
        .run(() => {
          insert.run(k, i);
          // Another connection sees none of this turn's writes while the group is open...
          seenInside.push(keysSeenBy(other));
          return k;
        })
        // ...and all of them by the time any one resolves.
        .then((v) => {
          seenAfter.push(keysSeenBy(other));
          return v;
        }),
    );
    expect(await Promise.all(all)).toEqual(['a', 'b', 'c']);
    expect(seenInside).toEqual([[], [], []]);
    expect(seenAfter).toEqual([
      ['a', 'b', 'c'],
      ['a', 'b', 'c'],
      ['a', 'b', 'c'],
    ]);
    other.close();
    db.close();
  });

  it('a write that throws rolls back alone and rejects alone; the others of its turn commit', async () => {
    const { db, other } = open();
    const writes = new GroupCommit(db);
    const insert = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
    const results = await Promise.allSettled([
      writes.run(() => insert.run('a', 1)),
      writes.run(() => {
        // Two statements: the first is undone by the savepoint when the second fails.
        insert.run('b', 2);
        insert.run('a', 3); // UNIQUE
      }),
      writes.run(() => {
        insert.run('c', 4);
        throw new Error('not this one');
      }),
      writes.run(() => insert.run('d', 5)),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect(((results[1] as PromiseRejectedResult).reason as { code: string }).code).toBe(
      'SQLITE_CONSTRAINT_PRIMARYKEY',
    );
    expect(((results[2] as PromiseRejectedResult).reason as Error).message).toBe('not this one');
    expect(keysSeenBy(other)).toEqual(['a', 'd']);
    other.close();
    db.close();
  });

  it('when the group cannot take the write lock, every write of the turn rejects and none is kept', async () => {
    const { db, other } = open();
    db.pragma('busy_timeout = 0');
    const writes = new GroupCommit(db);
    const insert = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
    other.exec('BEGIN IMMEDIATE'); // another process holds the write lock
    const results = await Promise.allSettled([
      writes.run(() => insert.run('a', 1)),
      writes.run(() => insert.run('b', 2)),
    ]);
    other.exec('ROLLBACK');
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(((results[0] as PromiseRejectedResult).reason as { code: string }).code).toBe('SQLITE_BUSY');
    expect(keysSeenBy(other)).toEqual([]);
    // The next turn starts a new group.
    await writes.run(() => insert.run('c', 3));
    expect(keysSeenBy(other)).toEqual(['c']);
    other.close();
    db.close();
  });

  it('refuses to join a transaction another caller left open on the connection', async () => {
    const { db, other } = open();
    const writes = new GroupCommit(db);
    db.exec('BEGIN');
    await expect(writes.run(() => db.prepare("INSERT INTO t (k, v) VALUES ('a', 1)").run())).rejects.toThrow(
      /inside another transaction/,
    );
    db.exec('ROLLBACK');
    expect(keysSeenBy(other)).toEqual([]);
    other.close();
    db.close();
  });

  it('when SQLite rolls the whole transaction back, no write of the turn is kept and all get that error', async () => {
    const { db, other } = open();
    // RAISE(ROLLBACK) ends the transaction itself, as a full disk or an I/O error would.
    db.exec(
      "CREATE TRIGGER t_full BEFORE INSERT ON t WHEN NEW.k = 'x' BEGIN SELECT RAISE(ROLLBACK, 'disk full'); END",
    );
    const writes = new GroupCommit(db);
    const insert = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
    const results = await Promise.allSettled(
      ['a', 'x', 'b', 'c'].map((k, i) => writes.run(() => insert.run(k, i))),
    );
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    for (const r of results) expect(((r as PromiseRejectedResult).reason as Error).message).toBe('disk full');
    expect(keysSeenBy(other)).toEqual([]);
    expect(db.inTransaction).toBe(false);
    other.close();
    db.close();
  });

  it('flush() commits what is queued at once (the store does it before closing the database)', async () => {
    const { db, other } = open();
    const writes = new GroupCommit(db);
    const done = writes.run(() => db.prepare("INSERT INTO t (k, v) VALUES ('a', 1)").run());
    writes.flush();
    db.close();
    await expect(done).resolves.toMatchObject({ changes: 1 });
    expect(keysSeenBy(other)).toEqual(['a']);
    other.close();
  });
});
