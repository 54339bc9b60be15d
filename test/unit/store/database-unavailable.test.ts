import { createServer } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { DatabaseUnavailableError, databaseUnavailable } from '../../../src/store/database-unavailable.js';
import { createPool } from '../../../src/store/postgres/database.js';
import { removeDir, tempDir } from '../../helpers/tmp.js';

// docs/operations.md "Database unreachable": which errors mean the database cannot serve now (503),
// decided in one place, from errors the real drivers raise.
describe('databaseUnavailable', () => {
  const dir = tempDir();
  afterAll(() => removeDir(dir));

  it('SQLite: a lock held past busy_timeout is unavailable; a constraint is not', () => {
    const file = join(dir, 'busy.db');
    const holder = new Database(file);
    const other = new Database(file);
    try {
      holder.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
      other.pragma('busy_timeout = 0');
      holder.exec('BEGIN IMMEDIATE');
      const busy = catching(() => other.exec('INSERT INTO t (id) VALUES (1)'));
      expect(databaseUnavailable(busy)).toBeInstanceOf(DatabaseUnavailableError);
      expect(databaseUnavailable(busy)?.engine).toBe('SQLite');
      holder.exec('ROLLBACK');

      other.exec('INSERT INTO t (id) VALUES (1)');
      const duplicate = catching(() => other.exec('INSERT INTO t (id) VALUES (1)'));
      expect((duplicate as { code?: string }).code).toMatch(/^SQLITE_CONSTRAINT/);
      expect(databaseUnavailable(duplicate)).toBeUndefined();
    } finally {
      other.close();
      holder.close();
    }
  });

  it('PostgreSQL: a refused connection from the pool is unavailable, naming the engine', async () => {
    const port = await freePort();
    const pool = createPool(`postgres://postgres@127.0.0.1:${port}/none`, { poolMax: 1 });
    try {
      const err = await pool.query('SELECT 1').then(
        () => expect.fail('nothing listens there'),
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(DatabaseUnavailableError);
      expect(databaseUnavailable(err)?.engine).toBe('PostgreSQL');
    } finally {
      await pool.end();
    }
  });

  it('a socket error from elsewhere (an HTTP client, a claims service) is not the database', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    expect(databaseUnavailable(refused)).toBeUndefined();
    expect(databaseUnavailable(new Error('Connection terminated unexpectedly'))).toBeUndefined();
  });
});

function catching(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return expect.fail('expected an error');
}

/** A loopback port nothing listens on (bound, then released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
