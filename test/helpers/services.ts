import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import pg from 'pg';
import { redactDatabaseUrl } from '../../src/store/database-url.js';
import { migrateAll } from '../../src/store/postgres/database.js';

/**
 * External services for tests (PostgreSQL, Redis). A suite asks whether its service is reachable
 * before it is defined: when it is not, the suite is skipped with one line saying why, except
 * under REQUIRE_SERVICES=1 (CI), where an unreachable service fails the run.
 */
export const TEST_DATABASE_URL =
  process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';
export const REQUIRE_SERVICES = process.env.REQUIRE_SERVICES === '1';

const PROBE_TIMEOUT_MS = 2000;

async function settle(
  service: string,
  url: string,
  suite: string,
  problem: string | undefined,
): Promise<boolean> {
  if (problem === undefined) return true;
  const line = `${service} at ${redactDatabaseUrl(url)} is unreachable (${problem})`;
  if (REQUIRE_SERVICES) throw new Error(`${line}; REQUIRE_SERVICES=1 needs it for ${suite}`);
  console.warn(`skipped ${suite}: ${line}; set REQUIRE_SERVICES=1 to fail instead`);
  return false;
}

/** Whether PostgreSQL answers at TEST_DATABASE_URL (prints the skip line when not). */
export async function postgresAvailable(suite: string): Promise<boolean> {
  const client = new pg.Client({
    connectionString: TEST_DATABASE_URL,
    connectionTimeoutMillis: PROBE_TIMEOUT_MS,
  });
  let problem: string | undefined;
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (err) {
    problem = (err as Error).message || (err as { code?: string }).code || 'connection failed';
  } finally {
    await client.end().catch(() => undefined);
  }
  return settle('PostgreSQL', TEST_DATABASE_URL, suite, problem);
}

/** Whether Redis answers PING at TEST_REDIS_URL (prints the skip line when not). */
export async function redisAvailable(suite: string): Promise<boolean> {
  const url = new URL(TEST_REDIS_URL);
  const problem = await new Promise<string | undefined>((resolve) => {
    const socket = connect({ host: url.hostname, port: Number(url.port || 6379) });
    const done = (p: string | undefined) => {
      socket.destroy();
      resolve(p);
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done('timed out'));
    socket.once('error', (err) => done(err.message));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(data.toString().startsWith('+PONG') ? undefined : `answered ${data}`));
  });
  return settle('Redis', TEST_REDIS_URL, suite, problem);
}

export interface TempDatabase {
  url: string;
  /** Drops it now, or (in a test run) leaves it to the drop of every run database at the end. */
  drop(): Promise<void>;
}

/**
 * The file in which a test run lists its temporary databases (set by test/helpers/global-setup.ts).
 * Each DROP DATABASE makes the server take a checkpoint, a second or more on a busy machine: the
 * run drops them all at once when it ends (the checkpoints of simultaneous drops coincide).
 */
export const RUN_DATABASES_FILE = 'ISSUER_KIT_TEST_DATABASES_FILE';

interface ListedDatabase {
  server: string;
  name: string;
}

async function onServer(server: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

const dropSql = (name: string) => `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`;

/**
 * A fresh, empty database on the TEST_DATABASE_URL server (or `server`), for one run; or a copy of
 * `template` (createMigratedDatabase).
 */
export async function createTempDatabase(
  server = TEST_DATABASE_URL,
  template?: string,
): Promise<TempDatabase> {
  const name = `issuer_test_${randomBytes(6).toString('hex')}`;
  const list = process.env[RUN_DATABASES_FILE];
  // Listed before it exists: a run that stops half way still drops it.
  if (list) appendFileSync(list, `${JSON.stringify({ server, name } satisfies ListedDatabase)}\n`);
  await onServer(server, `CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      if (!list) await onServer(server, dropSql(name));
    },
  };
}

const migratedTemplates = new Map<string, Promise<string>>();

/**
 * A fresh database with every migration (and function) applied, for a test that starts issuers or
 * opens stores on it rather than tests the migrations: a copy (CREATE DATABASE … TEMPLATE) of a
 * database migrated once per test process, which costs a fraction of applying them all again.
 * Tests of the migrations, of first starts and of what a fresh database looks like take
 * createTempDatabase.
 */
export async function createMigratedDatabase(server = TEST_DATABASE_URL): Promise<TempDatabase> {
  let template = migratedTemplates.get(server);
  if (!template) {
    template = (async () => {
      const db = await createTempDatabase(server);
      // Closed before any copy: a template may have no other connection.
      const pool = new pg.Pool({ connectionString: db.url, max: 1 });
      try {
        await migrateAll(pool);
      } finally {
        await pool.end();
      }
      return new URL(db.url).pathname.slice(1);
    })();
    migratedTemplates.set(server, template);
    template.catch(() => migratedTemplates.delete(server));
  }
  return createTempDatabase(server, await template);
}

/** Drops every database listed in `file` (all at once), then the file. */
export async function dropListedDatabases(file: string): Promise<void> {
  if (!existsSync(file)) return;
  const listed = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as ListedDatabase);
  rmSync(file, { force: true });
  await Promise.all(listed.map(({ server, name }) => onServer(server, dropSql(name))));
}
