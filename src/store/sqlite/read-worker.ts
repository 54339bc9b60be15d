import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { KeysetRead, KeysetReadReply, KeysetReadRequest } from './sqlite-reader.js';

// SqliteReader's worker: its own read-only connection to the database file, so that a count over
// millions of rows or an OFFSET page runs beside the server's thread rather than on it.
const port = parentPort;
if (!port) throw new Error('read-worker runs as a worker thread (SqliteReader)');
const { file } = workerData as { file: string };
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
