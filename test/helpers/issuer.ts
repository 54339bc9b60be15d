import { chmodSync, copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { runDoctor } from '../../src/cli/doctor.js';
import { loadConfig } from '../../src/config/config.js';
import { type AppContext, type ContextOverrides, createContext } from '../../src/context.js';
import {
  type Emulator,
  type EmulatorServer,
  startEmulatorServer,
} from '../../src/development/emulator/index.js';
import { seedExampleClaims } from '../../src/development/example-claims.js';
import { silentLogger } from '../../src/observability/logger.js';
import { bind, type RunningServer, serve } from '../../src/server.js';
import type { OpenedStore } from '../../src/store/engines.js';
import { openSqlite } from '../../src/store/sqlite/database.js';
import { createMigratedDatabase, type TempDatabase } from './services.js';
import { tempDir } from './tmp.js';

export { removeDir, tempDir } from './tmp.js';

export const TEST_API_KEY = 'test-api-key-0123456789abcdef0123456789';
export const TEST_ADMIN_API_KEY = 'test-admin-key-0123456789abcdef012345678';
export const TEST_PARTNER_ID = '6f1c3a52-8d0e-4c55-9a57-2f6f0e1b9c11';

export interface TestIssuer {
  url: string;
  ctx: AppContext;
  /** The hosting-service emulator started for this issuer (unless SERVICE_V1_BASE_URL was given). */
  emulator: Emulator | undefined;
  dir: string;
  running: RunningServer;
  /** The ADMIN_PORT listener's URL, with `adminListener`. */
  adminUrl: string | undefined;
  close(): Promise<void>;
  /** fetch against the issuer with the holder API key and a JSON body. */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  admin(path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
}

export interface StartOptions {
  /** Working folder for keys and the database; a fresh temp folder by default. Reuse it to restart. */
  dir?: string;
  /** Listen port (default: ephemeral). A restart reuses the previous one to keep ISSUER_ORIGIN. */
  port?: number;
  env?: Record<string, string>;
  /** Context overrides; given the config, e.g. to build a service client for its SERVICE_V1_BASE_URL. */
  context?: ContextOverrides | ((config: ReturnType<typeof loadConfig>['config']) => ContextOverrides);
  /** Claims seeded into an empty sqlite claims table (default examples/claims.json; '' for none). */
  exampleClaimsFile?: string;
  /** Called once the origin is known, before the context loads keys and schemas from `dir`. */
  prepare?: (dir: string, origin: string) => Promise<void>;
  /** Called with the context before the server starts (and before the outbox resumes). */
  beforeServe?: (ctx: AppContext) => void;
  /** A separate admin listener (ADMIN_PORT) on an ephemeral port; `admin()` then calls it. */
  adminListener?: boolean;
}

/**
 * `TEST_STORE=postgres` runs every test issuer on PostgreSQL (TEST_DATABASE_URL's server): one
 * fresh database per working folder, so a restart on the same folder finds its data again. They
 * are dropped after each test file (`dropTestDatabases`, registered by test/helpers/setup.ts).
 */
export const TEST_STORE = process.env.TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';
const databases = new Map<string, TempDatabase>();

/** The DATABASE_URL of the test store for `dir` (TEST_STORE: a file in it, or a fresh database). */
export async function databaseUrlFor(dir: string): Promise<string> {
  if (TEST_STORE === 'sqlite') return `sqlite:${join(dir, 'issuer.db')}`;
  let db = databases.get(dir);
  if (!db) {
    db = await createMigratedDatabase();
    databases.set(dir, db);
  }
  return db.url;
}

let migratedSqlite: string | undefined;

/**
 * A SQLite file with every migration applied, made once per test process. A test issuer's new
 * working folder starts from a copy of it instead of applying the migrations again (a tenth of a
 * second or more a start): the migrations run in the store tests and in every start of a process.
 */
function copyMigratedSqlite(file: string): void {
  if (!migratedSqlite) {
    const dir = tempDir();
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const template = join(dir, 'migrated.db');
    // Closing the last connection checkpoints the WAL into the file and removes it.
    openSqlite(template).close();
    migratedSqlite = template;
  }
  copyFileSync(migratedSqlite, file);
  chmodSync(file, 0o600);
}

export async function dropTestDatabases(): Promise<void> {
  const all = [...databases.values()];
  databases.clear();
  await Promise.all(all.map((db) => db.drop()));
}

/** Runs one SQL statement on a test issuer's store, either engine (`?` placeholders). */
export async function queryStore<T>(store: OpenedStore, sql: string, params: unknown[] = []): Promise<T[]> {
  if (store.kind === 'sqlite') {
    const statement = store.db.prepare(sql);
    if (statement.reader) return statement.all(...params) as T[];
    statement.run(...params);
    return [];
  }
  let n = 0;
  const { rows } = await store.pool.query(
    sql.replace(/\?/g, () => `$${++n}`),
    params,
  );
  return rows as T[];
}

/**
 * The real app on an ephemeral loopback port, with its own keys and SQLite file, and (unless the
 * env names a SERVICE_V1_BASE_URL) the hosting-service emulator as its own server, as `npm start` runs them.
 */
export async function startIssuer(options: StartOptions = {}): Promise<TestIssuer> {
  const dir = options.dir ?? tempDir();
  const bound = await bind(options.port ?? 0, '127.0.0.1');
  await options.prepare?.(dir, options.env?.ISSUER_ORIGIN ?? bound.url);
  let ctx: AppContext | undefined;
  let emulatorServer: EmulatorServer | undefined;
  if (options.env?.SERVICE_V1_BASE_URL === undefined) {
    emulatorServer = await startEmulatorServer({
      jwks: async () => ({ keys: ctx?.keys.current().partnerKeys.map((k) => k.publicJwk) ?? [] }),
      partnerId: TEST_PARTNER_ID,
    });
  }
  const sqliteFile = join(dir, 'issuer.db');
  if (options.env?.DATABASE_URL === undefined && TEST_STORE === 'sqlite' && !existsSync(sqliteFile)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    copyMigratedSqlite(sqliteFile);
  }
  const { config, secrets } = loadConfig(
    {
      NODE_ENV: 'test',
      ISSUER_ORIGIN: bound.url,
      DATABASE_URL: await databaseUrlFor(dir),
      KEYS_DIR: join(dir, 'keys'),
      API_KEY: TEST_API_KEY,
      ADMIN_API_KEY: TEST_ADMIN_API_KEY,
      PARTNER_ID: TEST_PARTNER_ID,
      ...(emulatorServer ? { SERVICE_V1_BASE_URL: emulatorServer.url } : {}),
      ...options.env,
    },
    process.cwd(),
  );
  const overrides = typeof options.context === 'function' ? options.context(config) : options.context;
  try {
    ctx = await createContext(config, secrets, {
      log: silentLogger(),
      outbox: { baseBackoffMs: 5, maxBackoffMs: 50 },
      ...overrides,
    });
  } catch (err) {
    // A refused start (the test's subject) leaves neither the port nor the emulator open.
    await new Promise((done) => bound.server.close(done));
    await emulatorServer?.close();
    throw err;
  }
  const exampleClaimsFile = options.exampleClaimsFile ?? resolve('examples/claims.json');
  if (exampleClaimsFile) await seedExampleClaims(ctx.store.claims, exampleClaimsFile);
  options.beforeServe?.(ctx);
  const adminBound = options.adminListener ? await bind(0, '127.0.0.1') : undefined;
  const running = await serve(ctx, bound, {
    admin: adminBound,
    doctor: () => runDoctor(config, secrets, { allowHttp: true, timeoutMs: 5000 }),
  });
  const url = running.url;
  const adminUrl = running.admin?.url;
  return {
    url,
    ctx,
    emulator: emulatorServer?.emulator,
    dir,
    running,
    adminUrl,
    close: async () => {
      await running.close();
      await emulatorServer?.close();
    },
    post: (path, body, headers = {}) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY, ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    admin: (path, body, headers = {}) =>
      fetch(`${adminUrl ?? url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json', 'x-admin-api-key': TEST_ADMIN_API_KEY, ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
  };
}
