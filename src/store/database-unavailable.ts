import Database from 'better-sqlite3';
import pg from 'pg';

/**
 * The database cannot answer right now: unreachable, timed out, restarting, out of connections,
 * busy past its lock wait, or failing I/O. A request meeting it is answered 503 `UNAVAILABLE`
 * (docs/operations.md "Database unreachable"), never as an upstream's or the kit's own fault; the
 * cause (with its addresses) goes to the log only.
 */
export class DatabaseUnavailableError extends Error {
  override readonly name = 'DatabaseUnavailableError';

  constructor(
    /** The engine's name in messages (`PostgreSQL`, `SQLite`). */
    readonly engine: string,
    cause: unknown,
  ) {
    super(`the ${engine} database is unavailable: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

/**
 * SQLSTATEs that say the server cannot serve now rather than that the statement is wrong
 * (PostgreSQL "Appendix A. PostgreSQL Error Codes"): class 08 connection exception,
 * 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now, 53300 too_many_connections,
 * 57014 query_canceled (what `statement_timeout` raises).
 */
const PG_UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300', '57014']);

/** Socket errors: the server is unreachable or the connection to it broke. */
const NETWORK_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * What node-postgres (pg 8, pg-pool 3) throws, without a code, when a connection cannot be made
 * or is lost, a bound runs out, or the pool is closing.
 */
const PG_CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Query read timeout',
  'timeout expired',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Cannot use a pool after calling end on the pool',
];

/**
 * An error raised by node-postgres itself (a pool, a client or their socket) as
 * DatabaseUnavailableError when it means the server cannot be reached or cannot serve now;
 * undefined for a statement's own error (a constraint, bad SQL), which stays what it is. Only
 * errors that came out of pg may be passed: a socket errno alone does not say which server.
 */
export function postgresUnavailable(err: unknown): DatabaseUnavailableError | undefined {
  if (err instanceof DatabaseUnavailableError) return err;
  if (!(err instanceof Error)) return undefined;
  if (err instanceof pg.DatabaseError) {
    const state = err.code ?? '';
    return state.startsWith('08') || PG_UNAVAILABLE_STATES.has(state)
      ? new DatabaseUnavailableError('PostgreSQL', err)
      : undefined;
  }
  const errno = (err as NodeJS.ErrnoException).code;
  if (
    (errno !== undefined && NETWORK_ERRNOS.has(errno)) ||
    PG_CONNECTION_MESSAGES.some((m) => err.message.startsWith(m))
  )
    return new DatabaseUnavailableError('PostgreSQL', err);
  return undefined;
}

/**
 * SQLite result codes that say the file cannot be used now (https://sqlite.org/rescode.html):
 * SQLITE_BUSY past `busy_timeout` (another process holds the write lock), SQLITE_IOERR_* (the
 * disk or file system failed), SQLITE_CANTOPEN, SQLITE_FULL (the disk is full).
 */
const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|IOERR|CANTOPEN|FULL)(_|$)/;

/**
 * Any error a request may meet, as DatabaseUnavailableError when it is one or is a database
 * error that means the database cannot serve now; undefined otherwise. The one place that decides
 * it for the error handler and the built-in claims provider.
 */
export function databaseUnavailable(err: unknown): DatabaseUnavailableError | undefined {
  if (err instanceof DatabaseUnavailableError) return err;
  if (err instanceof Database.SqliteError)
    return SQLITE_UNAVAILABLE.test(err.code) ? new DatabaseUnavailableError('SQLite', err) : undefined;
  // Statement errors carry their own class, so they can only have come from pg.
  if (err instanceof pg.DatabaseError) return postgresUnavailable(err);
  return undefined;
}
