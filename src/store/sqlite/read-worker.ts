import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import {
  type KeysetRead,
  type KeysetReadReply,
  type KeysetReadRequest,
  READER_NICE_STEPS,
} from './sqlite-reader.js';

// SqliteReader's worker: its own read-only connection to the database file, so that a count over
// millions of rows or an OFFSET page runs beside the server's thread rather than on it.
const port = parentPort;
if (!port) throw new Error('read-worker runs as a worker thread (SqliteReader)');
const { file } = workerData as { file: string };
lowerOwnPriority();
const db = new Database(file, { readonly: true, fileMustExist: true });
// The writer holds the lock only while it commits; a reader of a WAL database waits for nothing else.
db.pragma('busy_timeout = 5000');

const statements = new Map<string, Database.Statement>();
const prepared = (sql: string) => {
  let s = statements.get(sql);
  if (!s) {
    s = db.prepare(sql);
    statements.set(sql, s);
  }
  return s;
};

// One read transaction: the page, where a bounded read ended and the count see one snapshot.
const read = db.transaction((r: KeysetRead): { rows: unknown[]; end?: unknown; n?: number } => {
  const rows = prepared(r.page.sql).all(r.page.params);
  const end = r.scanEnd && rows.length <= r.limit ? prepared(r.scanEnd.sql).get(r.scanEnd.params) : undefined;
  const n = r.count ? (prepared(r.count.sql).get(r.count.params) as { n: number }).n : undefined;
  return { rows, ...(end === undefined ? {} : { end }), ...(n === undefined ? {} : { n }) };
});

port.on('message', (req: KeysetReadRequest) => {
  let reply: KeysetReadReply;
  try {
    reply = { id: req.id, ...read.deferred(req.read) };
  } catch (err) {
    const code = err instanceof Database.SqliteError ? err.code : undefined;
    reply = {
      id: req.id,
      error: err instanceof Error ? err.message : String(err),
      ...(code ? { code } : {}),
    };
  }
  port.postMessage(reply);
});

/**
 * This thread only, READER_NICE_STEPS below the server's thread. On Linux a thread id given to
 * setpriority(2) sets that thread's nice value alone (setpriority(2), "BUGS": the nice value is
 * per thread under NPTL); /proc/thread-self names the id. Elsewhere, or where it is refused, the
 * reads keep the process's priority.
 */
function lowerOwnPriority(): void {
  if (process.platform !== 'linux') return;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    setPriority(tid, Math.min(19, getPriority(tid) + READER_NICE_STEPS));
  } catch {
    // No /proc, or a sandbox that refuses setpriority: the same reads, at the same priority.
  }
}
