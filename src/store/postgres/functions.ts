import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';

const FUNCTIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'functions');

/**
 * A repeatable SQL function (docs/architecture.md "Repeatable SQL functions"): one file per
 * function, `functions/<name>.sql`, holding its one live definition (`CREATE OR REPLACE FUNCTION`).
 */
export interface SqlFunction {
  name: string;
  sql: string;
  checksum: string;
}

/** The repeatable functions of this engine, by file name. */
export function readFunctions(dir = FUNCTIONS_DIR): SqlFunction[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => /^[a-z][\w-]*\.sql$/.test(f))
    .sort()
    .map((name) => {
      const sql = readFileSync(join(dir, name), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

export class FunctionError extends Error {
  override readonly name = 'FunctionError';
}

/**
 * Applies each function whose file is new or changed since it was last applied (its checksum in
 * schema_functions), each in its own transaction, and returns their names; an unchanged one is
 * left alone. The caller holds the migration lock, after the numbered migrations: the tables a
 * function names exist, and two instances starting together apply a changed file once.
 *
 * `level` is the last numbered migration this code knows. A definition applied by code of a
 * higher level (a newer release, during a rolling deploy) is not replaced by an older instance
 * that restarts: the older one's callers keep working with it, as a function's body only ever
 * changes compatibly with its signature (a new signature is a new function).
 */
export async function applyFunctions(
  client: pg.PoolClient,
  functions: readonly SqlFunction[],
  level: number,
): Promise<string[]> {
  await client.query(
    `CREATE TABLE IF NOT EXISTS schema_functions (
       name TEXT PRIMARY KEY, checksum TEXT NOT NULL, level INTEGER NOT NULL, applied_at TIMESTAMPTZ NOT NULL)`,
  );
  const { rows } = await client.query<{ name: string; checksum: string; level: number }>(
    'SELECT name, checksum, level FROM schema_functions',
  );
  const applied = new Map(rows.map((r) => [r.name, r]));
  const done: string[] = [];
  for (const f of functions) {
    const before = applied.get(f.name);
    if (before && (before.checksum === f.checksum || before.level > level)) continue;
    await client.query('BEGIN');
    try {
      await client.query(f.sql);
      await client.query(
        `INSERT INTO schema_functions (name, checksum, level, applied_at) VALUES ($1, $2, $3, now())
         ON CONFLICT (name) DO UPDATE
           SET checksum = EXCLUDED.checksum, level = EXCLUDED.level, applied_at = EXCLUDED.applied_at`,
        [f.name, f.checksum, level],
      );
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw new FunctionError(`function ${f.name} failed: ${(err as Error).message}`);
    }
    done.push(f.name);
  }
  return done;
}
