import pg from 'pg';
import { postgresUnavailable } from '../database-unavailable.js';
import { type PgPool, pathFree, schemaPrefix } from './database.js';

/** Where a tenant's view of the shared pool keeps the pool's SharedCalls (src/tenancy/schema-pool.ts). */
export const POOL_CALLS = Symbol('shared calls');

/** The SharedCalls of the pool `pool` is a view of; none on a pool of its own (one issuer). */
export const sharedCallsOf = (pool: object): SharedCalls | undefined =>
  (pool as { [POOL_CALLS]?: SharedCalls })[POOL_CALLS];

interface Call {
  order: string;
  text: string;
  values: unknown[];
  resolve(rows: Record<string, unknown>[]): void;
  reject(err: unknown): void;
}

// Parameters stay far below PostgreSQL's 65,535 a statement, and one statement's parse stays short.
const CALLS_PER_STATEMENT = 32;

/** `text` with its parameters $1.. renumbered from $(by + 1) (our statements quote no `$n`). */
const shifted = (text: string, by: number): string =>
  by === 0 ? text : text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + by}`);

/**
 * The statements several namespaces of one shared pool ask for in one turn of the event loop,
 * sent together (docs/several-issuers.md "Where the data lives"): the calls of a turn of the
 * same kind (statements that return the same columns and name their own schema, database.ts
 * pathFree) go as one statement, `UNION ALL` of each call's own, in one round trip, one
 * transaction and one commit. A single deployment's group commit puts the issuances of a turn in
 * one statement; this does the same for tenants whose issuances arrive one each.
 *
 * Calls go in the order of their `order` (their schema), so two instances take the namespaces'
 * locks in one order. A statement the server refuses as a whole (it rolled back: nothing of it
 * was written) is sent again call by call, so its error reaches only the call that caused it and
 * a tenant whose schema is broken never fails another's writes. A lost connection, after which
 * nobody knows whether it committed, rejects every call of the statement with it.
 */
export class SharedCalls {
  private readonly queues = new Map<string, Call[]>();

  constructor(private readonly pool: PgPool) {}

  /** `text` (naming its schema) with `values`, in the next statement of `kind`: its rows. */
  run<R>(kind: string, order: string, text: string, values: unknown[]): Promise<R[]> {
    return new Promise<R[]>((resolve, reject) => {
      let queue = this.queues.get(kind);
      if (!queue) {
        queue = [];
        this.queues.set(kind, queue);
      }
      queue.push({ order, text, values, resolve: resolve as Call['resolve'], reject });
      if (queue.length === 1) setImmediate(() => this.flush(kind));
    });
  }

  private flush(kind: string): void {
    const queue = this.queues.get(kind) ?? [];
    this.queues.delete(kind);
    queue.sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
    for (let i = 0; i < queue.length; i += CALLS_PER_STATEMENT)
      void this.send(queue.slice(i, i + CALLS_PER_STATEMENT));
  }

  private async send(calls: Call[]): Promise<void> {
    let text = '';
    const values: unknown[] = [];
    for (const [i, call] of calls.entries()) {
      text +=
        calls.length === 1
          ? call.text
          : `${i === 0 ? '' : '\nUNION ALL '}SELECT ${i} AS shared_call, c.* FROM (${shifted(call.text, values.length)}) c`;
      values.push(...call.values);
    }
    let rows: Array<Record<string, unknown>>;
    try {
      ({ rows } = await this.pool.query<Record<string, unknown>>({ text, values }));
    } catch (err) {
      const lost = postgresUnavailable(err);
      if (calls.length > 1 && !lost && err instanceof pg.DatabaseError) {
        await Promise.all(calls.map((call) => this.send([call])));
        return;
      }
      for (const call of calls) call.reject(lost ?? err);
      return;
    }
    if (calls.length === 1) {
      calls[0]!.resolve(rows);
      return;
    }
    const byCall = calls.map((): Array<Record<string, unknown>> => []);
    for (const { shared_call, ...row } of rows) byCall[shared_call as number]!.push(row);
    for (const [i, call] of calls.entries()) call.resolve(byCall[i]!);
  }
}

/**
 * One of a store's hot statements, `sql(schema prefix)`, as `pool` runs it: a prepared statement
 * named `name` on a pool of its own (one issuer); on a tenant's view of the shared pool, naming the
 * tenant's schema (no search_path needed) and sent with the other tenants' calls of `kind` of the
 * same turn.
 */
export function hotStatement<R>(
  pool: PgPool,
  kind: string,
  name: string,
  sql: (schema: string) => string,
): (values: unknown[]) => Promise<R[]> {
  const schema = schemaPrefix(pool);
  const text = sql(schema);
  if (!schema)
    return async (values) => (await pool.query<R & pg.QueryResultRow>({ name, text, values })).rows;
  const calls = sharedCallsOf(pool);
  if (calls) return (values) => calls.run<R>(kind, schema, text, values);
  return async (values) => (await pool.query<R & pg.QueryResultRow>(pathFree({ text, values }))).rows;
}
