import type { OpenOptions, StorageEngine, StoreInspection } from './engine.js';
import { postgresEngine } from './postgres/engine.js';
import { sqliteEngine } from './sqlite/engine.js';
import type { Store } from './store.js';

/**
 * The storage engines, and the one place a DATABASE_URL chooses among them. Adding an engine is
 * its folder (an `engine` export implementing `StorageEngine`, src/store/engine.ts) and one entry here.
 */
const ENGINES = [sqliteEngine, postgresEngine] as const;

type Engine = (typeof ENGINES)[number];
/** What a DATABASE_URL names: the engine's `kind` and where. */
export type DatabaseTarget = Exclude<ReturnType<Engine['parse']>, string | undefined>;
/** The store an engine opens: every part of it, `kind` telling the engine. */
export type OpenedStore = Awaited<ReturnType<Engine['open']>>;

/** Parses DATABASE_URL; a string result is the problem, worded for a config error line. */
export function parseDatabaseUrl(url: string, cwd: string): DatabaseTarget | string {
  for (const engine of ENGINES) {
    const target = engine.parse(url, cwd);
    if (target !== undefined) return target;
  }
  return `must be ${ENGINES.map((e) => e.urlForm).join(' or ')}`;
}

// The cast pairs a target with the engine that parsed it: `kind` is unique per engine, so the
// engine found by `kind` takes that target (the compiler cannot follow the pairing through the list).
const engineOf = (target: DatabaseTarget) =>
  ENGINES.find((e) => e.kind === target.kind) as unknown as StorageEngine<DatabaseTarget, OpenedStore>;

/** The target as messages show it: `sqlite:<path>`, or the URL without its password. */
export const describeTarget = (target: DatabaseTarget): string => engineOf(target).describe(target);

/** The engine's name in messages. */
export const engineName = (target: DatabaseTarget): string => engineOf(target).name;

/** Whether the engine keeps private keys in the database (production then needs KEY_ENCRYPTION_KEY). */
export const keepsKeysInDatabase = (target: DatabaseTarget): boolean => engineOf(target).keysInDatabase;

/** Opens every part of the store, pending migrations applied first. */
export function openStore(target: DatabaseTarget, options: OpenOptions): Promise<OpenedStore> {
  return engineOf(target).open(target, options);
}

/** The database as it is, read-only (`admin doctor`). */
export function inspectStore(target: DatabaseTarget): Promise<StoreInspection<Store>> {
  return engineOf(target).inspect(target);
}

/**
 * `npm run db:migrate`: applies the pending numbered migrations ahead of a deploy (a server
 * applies them at start too). Returns where and what it applied.
 */
export async function migrateDatabase(
  databaseUrl: string,
  cwd: string,
): Promise<{ target: string; applied: string[] }> {
  const target = parseDatabaseUrl(databaseUrl, cwd);
  if (typeof target === 'string') throw new Error(`DATABASE_URL: ${target}`);
  return { target: describeTarget(target), applied: await engineOf(target).migrate(target) };
}
