import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { SqliteStatement } from '../keyset.js';

/** One keyset or OFFSET read: the page (`limit` + 1 rows), where a bounded read ended, a count. */
export interface KeysetRead {
  page: SqliteStatement;
  /** Read only when the page holds at most `limit` rows (it ended early). */
  scanEnd?: SqliteStatement | undefined;
  count?: SqliteStatement | undefined;
  limit: number;
}

/** main → worker. */
export interface KeysetReadRequest {
  id: number;
  read: KeysetRead;
}

/** worker → main: the rows as SQLite answered them. */
export type KeysetReadReply =
  | { id: number; rows: unknown[]; end?: unknown; n?: number }
  | { id: number; error: string; code?: string };

export interface KeysetReadResult<R, E> {
  rows: R[];
  end: E | undefined;
  n: number | undefined;
}

/**
 * How far below the server's thread the reader's thread runs (nice steps, Linux). Where the two
 * share a CPU, the scheduler weighs a thread 10 steps down about a tenth of one at the server's
 * (sched(7), "The nice value"): a count takes what the holders' requests leave, and at most about
 * a tenth of the CPU while they keep it busy, instead of half of it.
 */
export const READER_NICE_STEPS = 10;

interface Pending {
  resolve: (reply: KeysetReadReply) => void;
  reject: (err: Error) => void;
}

/**
 * The admin reads that look at every matching row (a total, an OFFSET page) run here, on a worker
 * thread with its own read-only connection to the database file (docs/interface.md "Paging"):
 * better-sqlite3 answers on the thread that calls it, and counting millions of rows there would
 * hold every holder's request meanwhile. Its thread runs at a lower priority than the server's
 * ({@link READER_NICE_STEPS}): on a shared CPU the holders come first. One worker, started on first
 * use, not keeping the process alive while idle; a worker that dies fails its own reads only and
 * the next read starts another.
 */
export class SqliteReader {
  #worker: Worker | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #closed = false;

  constructor(private readonly file: string) {}

  async read<R, E = never>(read: KeysetRead): Promise<KeysetReadResult<R, E>> {
    if (this.#closed) throw new Error('the SQLite reader is closed');
    const worker = this.#spawned();
    const id = this.#nextId++;
    const reply = await new Promise<KeysetReadReply>((resolve, reject) => {
      if (this.#pending.size === 0) worker.ref();
      this.#pending.set(id, { resolve, reject });
      worker.postMessage({ id, read } satisfies KeysetReadRequest);
    });
    if ('error' in reply) {
      // As the connection on this thread would have thrown it: a busy or failing file is a 503.
      throw reply.code ? new Database.SqliteError(reply.error, reply.code) : new Error(reply.error);
    }
    return { rows: reply.rows as R[], end: reply.end as E | undefined, n: reply.n };
  }

  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = undefined;
    this.#fail(new Error('the SQLite reader was closed'));
    await worker?.terminate();
  }

  #spawned(): Worker {
    if (this.#worker) return this.#worker;
    // From source (tsx, vitest) the worker starts through a plain-JS entry that loads its TypeScript.
    const entry = import.meta.url.endsWith('.ts') ? './read-worker-boot.mjs' : './read-worker.js';
    const worker = new Worker(new URL(entry, import.meta.url), { workerData: { file: this.file } });
    worker.unref();
    worker.on('message', (reply: KeysetReadReply) => {
      const p = this.#pending.get(reply.id);
      if (!p) return;
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0) worker.unref();
      p.resolve(reply);
    });
    const retire = (err: Error) => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      this.#fail(err);
    };
    worker.on('error', retire);
    worker.on('exit', (code) => retire(new Error(`SQLite reader exited (${code})`)));
    this.#worker = worker;
    return worker;
  }

  #fail(err: Error): void {
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
  }
}
