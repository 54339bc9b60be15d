import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqlite } from '../../../src/store/sqlite/database.js';
import { READER_NICE_STEPS, SqliteReader } from '../../../src/store/sqlite/sqlite-reader.js';
import { removeDir, tempDir } from '../../helpers/tmp.js';

/** This process's threads and their nice values, from /proc (proc(5): stat field 19, "nice"). */
function threadNices(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      out.set(tid, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

describe('SqliteReader', () => {
  const dirs: string[] = [];
  const readers: SqliteReader[] = [];
  afterEach(async () => {
    for (const r of readers.splice(0)) await r.close();
    for (const d of dirs.splice(0)) removeDir(d);
  });

  function reader(): SqliteReader {
    const dir = tempDir();
    dirs.push(dir);
    const file = join(dir, 'r.db');
    const db = openSqlite(file, { migrate: false });
    db.exec('CREATE TABLE t (k INTEGER PRIMARY KEY); INSERT INTO t (k) VALUES (1), (2), (3)');
    db.close();
    const r = new SqliteReader(file);
    readers.push(r);
    return r;
  }

  it('counts on a thread of its own and answers the page and the total of one snapshot', async () => {
    const read = await reader().read<{ k: number }>({
      page: { sql: 'SELECT k FROM t ORDER BY k LIMIT @limit', params: { limit: 3 } },
      count: { sql: 'SELECT COUNT(*) AS n FROM t', params: {} },
      limit: 2,
    });
    expect(read.rows.map((r) => r.k)).toEqual([1, 2, 3]);
    expect(read.n).toBe(3);
  });

  // src/store/sqlite/sqlite-reader.ts READER_NICE_STEPS: on a CPU shared with the server's thread,
  // a count takes what the holders leave.
  it.skipIf(process.platform !== 'linux')(
    "runs its thread READER_NICE_STEPS below this thread's priority",
    async () => {
      const before = threadNices();
      // The process's main thread (its id is the process's).
      const own = before.get(String(process.pid)) ?? 0;
      const r = reader();
      await r.read({ page: { sql: 'SELECT k FROM t', params: {} }, limit: 10 });
      const started = [...threadNices()].filter(([tid]) => !before.has(tid)).map(([, nice]) => nice);
      expect(started).toContain(Math.min(19, own + READER_NICE_STEPS));
    },
  );
});
