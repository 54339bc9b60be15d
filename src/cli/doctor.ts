import { randomUUID } from 'node:crypto';
import { accessSync, constants, existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { decodeJwt, decodeProtectedHeader, importJWK, type JWK, jwtVerify } from 'jose';
import { createClaimsProviders } from '../claims/index.js';
import type { Config, Secrets } from '../config/config.js';
import { BJJ_KEY_FILE, readBjjKeyFile } from '../issuers/iden3/bjj-key.js';
import { bjjKeyToImport, openStoredBjjKey } from '../issuers/iden3/database-bjj-key.js';
import { didWebFromOrigin } from '../issuers/sd-jwt/issuer-identification.js';
import { databaseKeyHolder } from '../keys/key-holder.js';
import { KeyError, type KeyRing, loadKeyRing } from '../keys/key-ring.js';
import { publishedSigningKeys } from '../keys/published-keys.js';
import {
  DEVELOPMENT_KEY_ENCRYPTION_KEY,
  parseKeyEncryptionKey,
  SealedKeyFormatError,
} from '../keys/sealed-key.js';
import { developmentStateProblems } from '../live/development-state.js';
import { silentLogger } from '../observability/logger.js';
import { loadSchemas, SchemaFileError, type SchemaRegistry } from '../schemas/schema-registry.js';
import { postJson } from '../service-client/http-json.js';
import { PartnerJwtSigner } from '../service-client/partner-jwt.js';
import { readMigrations as readPostgresMigrations } from '../store/postgres/database.js';
import { openPostgresStore, type PostgresStore } from '../store/postgres/index.js';
import { planMigrations } from '../store/sqlite/database.js';
import { type SqliteStore, sqliteStoreOn } from '../store/sqlite/index.js';
import type { Store } from '../store/store.js';
import { networkCause } from './admin-client.js';

/**
 * `admin doctor` (issue 11): the go-live check. It runs where the server runs, with the server's
 * environment (config read as the server reads it), reads the local keys, schemas and database,
 * and fetches the public documents from ISSUER_ORIGIN (or `--origin`) over HTTP. Read-only: it
 * never migrates, generates a key or writes a row.
 */
export type Verdict = 'PASS' | 'WARN' | 'FAIL';

export interface DoctorLine {
  item: string;
  verdict: Verdict;
  detail: string;
}

export interface DoctorOptions {
  /** Where to fetch the public documents (default ISSUER_ORIGIN): staging, or a loopback test. */
  origin?: string | undefined;
  /** An http ISSUER_ORIGIN is a WARN instead of a FAIL (staging and tests). */
  allowHttp?: boolean;
  /** Uploads pending longer than this fail the outbox item (default one hour). */
  maxUploadAgeMs?: number;
  timeoutMs?: number;
  now?: Date;
  /**
   * KEY_ENCRYPTION_KEY_PREVIOUS as the environment has it (never given to the server): tried on an
   * Iden3 key that does not open with KEY_ENCRYPTION_KEY, to tell a `keys reseal` still to run.
   */
  keyEncryptionKeyPrevious?: string | undefined;
}

export const HOUR_MS = 3_600_000;

export async function runDoctor(
  config: Config,
  secrets: Secrets,
  options: DoctorOptions = {},
): Promise<DoctorLine[]> {
  const lines: DoctorLine[] = [];
  const add = (item: string, verdict: Verdict, detail: string) => lines.push({ item, verdict, detail });
  const now = options.now ?? new Date();
  const timeoutMs = options.timeoutMs ?? 10_000;

  add(
    'production',
    config.production ? 'PASS' : 'FAIL',
    config.production ? 'NODE_ENV=production' : `NODE_ENV=${config.nodeEnv}: not production`,
  );
  const https = config.issuerOrigin.startsWith('https:');
  add(
    'origin https',
    https ? 'PASS' : options.allowHttp ? 'WARN' : 'FAIL',
    https
      ? `ISSUER_ORIGIN ${config.issuerOrigin}`
      : `ISSUER_ORIGIN ${config.issuerOrigin} is not https${options.allowHttp ? ' (--allow-http)' : ''}`,
  );
  const origin = (options.origin ?? config.issuerOrigin).replace(/\/+$/, '');
  if (options.origin && origin !== config.issuerOrigin)
    add('origin fetched', 'WARN', `documents fetched from ${origin} (--origin), not ${config.issuerOrigin}`);

  // The database is opened first (on PostgreSQL it holds the keys) but reported after the keys.
  const databaseLines: DoctorLine[] = [];
  const opened = await openForDoctor(config, secrets, (item, verdict, detail) =>
    databaseLines.push({ item, verdict, detail }),
  );
  const store = opened?.store;
  // Local keys as the server reads them: files on SQLite, the sealed rows on PostgreSQL once the
  // first start imported them (docs/security.md "Keys shared by several instances"); file modes and markers.
  let ring: KeyRing | undefined;
  try {
    ring = await loadLocalRing(config, secrets, opened);
  } catch (err) {
    add('keys', 'FAIL', (err as Error).message);
  }
  keyFileLines(config.keysDir, add);
  const devProblems = await developmentStateProblems(config, secrets);
  if (devProblems.length === 0) add('development state', 'PASS', 'no development key or secret in use');
  for (const p of devProblems) add('development state', 'FAIL', p);
  lines.push(...databaseLines);

  try {
    if (opened) await iden3KeyLine(config, secrets, opened, options.keyEncryptionKeyPrevious, add);
    const localSigning = ring && store ? await publishedSigningKeys(ring, store.issuances, now) : undefined;
    const fetchJson = (path: string) => fetchDocument(`${origin}${path}`, timeoutMs);

    const did = await fetchJson('/.well-known/did.json');
    if (did.problem) add('did.json', 'FAIL', did.problem);
    else {
      const doc = did.body as { id?: unknown; verificationMethod?: Array<{ publicKeyJwk?: JWK }> };
      const expected = didWebFromOrigin(config.issuerOrigin);
      if (doc.id !== expected) add('did.json', 'FAIL', `id is ${String(doc.id)}, expected ${expected}`);
      else
        keysLine(
          'did.json',
          (doc.verificationMethod ?? []).map((m) => m.publicKeyJwk ?? {}),
          localSigning,
          add,
        );
    }

    const meta = await fetchJson('/.well-known/jwt-vc-issuer');
    let servedSigning: JWK[] | undefined;
    if (meta.problem) add('jwt-vc-issuer', 'FAIL', meta.problem);
    else {
      const m = meta.body as { issuer?: unknown; jwks?: { keys?: JWK[] } };
      servedSigning = m.jwks?.keys ?? [];
      if (m.issuer !== config.issuerOrigin)
        add('jwt-vc-issuer', 'FAIL', `issuer is ${String(m.issuer)}, expected ${config.issuerOrigin}`);
      else keysLine('jwt-vc-issuer', servedSigning, localSigning, add);
    }

    const jwks = await fetchJson('/.well-known/jwks.json');
    if (jwks.problem) add('jwks.json', 'FAIL', jwks.problem);
    else
      keysLine(
        'jwks.json',
        (jwks.body as { keys?: JWK[] }).keys ?? [],
        ring?.partnerKeys.map((k) => k.publicJwk),
        add,
      );

    if (store)
      await statusListLines(store, origin, config, servedSigning ?? localSigning ?? [], timeoutMs, add);
    if (store) await outboxLine(store, now, options.maxUploadAgeMs ?? HOUR_MS, add);
    await schemaLines(config, store, add);
  } finally {
    await opened?.close();
  }
  if (ring) await partnerJwtLine(config, ring, timeoutMs, add);
  else add('partner JWT', 'FAIL', 'no partner-jwt key to sign with (see keys)');
  return lines;
}

/** One line per key file that is not owner-only (0600), or one PASS. */
function keyFileLines(dir: string, add: (item: string, verdict: Verdict, detail: string) => void): void {
  if (!existsSync(dir)) return;
  const loose: string[] = [];
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    const mode = statSync(join(dir, name)).mode & 0o777;
    if (mode & 0o077) loose.push(`${join(dir, name)} is mode ${mode.toString(8).padStart(4, '0')}`);
  }
  if (loose.length === 0) add('key files', 'PASS', `every file in ${dir} is owner-only (0600)`);
  for (const l of loose) add('key files', 'FAIL', `${l}; run chmod 600 on it`);
}

interface DoctorStore {
  store: Store;
  postgres?: PostgresStore;
  close(): Promise<void>;
}

/** The database as it is: never created, never migrated (a pending migration is a FAIL). */
async function openForDoctor(
  config: Config,
  secrets: Secrets,
  add: (item: string, verdict: Verdict, detail: string) => void,
): Promise<DoctorStore | undefined> {
  if (config.database.kind === 'postgres') return openPostgresForDoctor(config, secrets, add);
  const store = openSqliteForDoctor(config.database.path, config, add);
  return (
    store && {
      store,
      close: async () => {
        store.db.close();
      },
    }
  );
}

/** PostgreSQL: connects without migrating; writable (not a standby, INSERT allowed) and migrated. */
async function openPostgresForDoctor(
  config: Config,
  secrets: Secrets,
  add: (item: string, verdict: Verdict, detail: string) => void,
): Promise<DoctorStore | undefined> {
  const where = config.database.kind === 'postgres' ? config.database.url : 'PostgreSQL';
  let store: PostgresStore | undefined;
  try {
    store = await openPostgresStore(secrets.databaseUrl, { poolMax: 2, migrate: false });
    const { rows } = await store.pool.query<{ standby: boolean; migrations: string | null }>(
      "SELECT pg_is_in_recovery() AS standby, to_regclass('schema_migrations')::text AS migrations",
    );
    if (rows[0]?.standby) throw new Error('it is a read-only standby');
    const applied = new Map<number, { name: string; checksum: string }>();
    if (rows[0]?.migrations) {
      const done = await store.pool.query<{ version: number; name: string; checksum: string }>(
        'SELECT version, name, checksum FROM schema_migrations',
      );
      for (const r of done.rows) applied.set(r.version, r);
    }
    const files = readPostgresMigrations();
    const pending = files.filter((m) => !applied.has(m.version)).map((m) => m.name);
    const changed = files.filter(
      (m) => applied.has(m.version) && applied.get(m.version)?.checksum !== m.checksum,
    );
    for (const m of changed)
      add(
        'database',
        'FAIL',
        `DATABASE_URL: migration ${m.name} changed after it was applied (checksum differs)`,
      );
    if (pending.length > 0)
      add(
        'database',
        'FAIL',
        `DATABASE_URL: ${where} lacks migrations ${pending.join(', ')}; run npm run db:migrate or start the server once`,
      );
    if (changed.length > 0 || pending.length > 0) {
      await store.close();
      return undefined;
    }
    const writable = await store.pool.query<{ ok: boolean }>(
      "SELECT has_table_privilege('issuances', 'INSERT') AS ok",
    );
    if (!writable.rows[0]?.ok) throw new Error('this role may not insert into issuances');
    const environment = await store.meta.get('environment');
    if (config.production && environment !== undefined && environment !== 'production')
      add('database', 'FAIL', `DATABASE_URL: ${where} was created by a ${environment} start`);
    else add('database', 'PASS', `${where}: writable, ${files.length} migrations applied`);
    const opened = store;
    return { store: opened, postgres: opened, close: () => opened.close() };
  } catch (err) {
    await store?.close().catch(() => undefined);
    add('database', 'FAIL', `DATABASE_URL: ${where}: ${(err as Error).message}`);
    return undefined;
  }
}

/** The ring the server would sign with: key files, or on PostgreSQL the sealed rows (read, never imported). */
async function loadLocalRing(
  config: Config,
  secrets: Secrets,
  opened: DoctorStore | undefined,
): Promise<KeyRing> {
  const postgres = opened?.postgres;
  if (!postgres || (await postgres.keys.list()).length === 0)
    return loadKeyRing(config.keysDir, { generateIfMissing: false });
  const holder = await databaseKeyHolder(postgres.keys, {
    keysDir: config.keysDir,
    generateIfMissing: false,
    kek: secrets.keyEncryptionKey ?? DEVELOPMENT_KEY_ENCRYPTION_KEY,
    pollMs: 3_600_000,
    log: silentLogger(),
    environment: config.production ? 'production' : 'development',
  });
  holder.close();
  return holder.current();
}

/**
 * The Iden3 issuer key as the server would open it, read-only. On PostgreSQL: the sealed row,
 * opened with KEY_ENCRYPTION_KEY by the issuer's own code (src/issuers/iden3/database-bjj-key.ts),
 * or, with no row yet, what the first start would import. On SQLite: the KEYS_DIR file.
 */
async function iden3KeyLine(
  config: Config,
  secrets: Secrets,
  opened: DoctorStore,
  previousValue: string | undefined,
  add: (item: string, verdict: Verdict, detail: string) => void,
): Promise<void> {
  const item = 'iden3 key';
  const file = join(config.keysDir, BJJ_KEY_FILE);
  let needed = true;
  try {
    needed = loadSchemas(config.schemasDir, config.issuerOrigin)
      .all()
      .some((s) => s.proofTypes.includes('BJJ_SIG_2021'));
  } catch {
    // The schemas line reports it; the key is checked as if a schema needed it.
  }
  const unneeded = 'no schema lists BJJ_SIG_2021, so the issuer needs none';
  const postgres = opened.postgres;
  try {
    if (!postgres) {
      const local = await readBjjKeyFile(config.keysDir);
      if (local)
        add(
          item,
          'PASS',
          `${local.key.file} loads (public key ${local.key.publicKeyHex}; a file on SQLite, not sealed)`,
        );
      else if (!needed) add(item, 'PASS', `absent: no ${file}; ${unneeded}`);
      else if (config.production)
        add(item, 'FAIL', `${file}: missing; run npm run admin -- keys generate before the first start`);
      else add(item, 'PASS', `absent: no ${file}; a development start generates one`);
      return;
    }
    const stored = await postgres.keys.iden3Key();
    if (!stored) {
      if (!needed) {
        add(item, 'PASS', `absent: the database holds no Iden3 key; ${unneeded}`);
        return;
      }
      const planned = await bjjKeyToImport(postgres.iden3, {
        keysDir: config.keysDir,
        generateIfMissing: !config.production,
      });
      add(
        item,
        'PASS',
        planned.content
          ? `absent: the database holds no Iden3 key yet; the first start imports ${planned.file} (sealed under KEY_ENCRYPTION_KEY)`
          : 'absent: the database holds no Iden3 key yet; a development start generates one',
      );
      return;
    }
    const did = (await postgres.iden3.getIdentity())?.did;
    const which = `${did ? `${did}, ` : ''}public key ${stored.publicKey}`;
    const current = secrets.keyEncryptionKey ?? DEVELOPMENT_KEY_ENCRYPTION_KEY;
    const currentName = secrets.keyEncryptionKey
      ? 'KEY_ENCRYPTION_KEY'
      : 'the development KEY_ENCRYPTION_KEY (KEY_ENCRYPTION_KEY is unset)';
    if (opensWith(stored, current)) {
      add(item, 'PASS', `${which}: sealed in the database under ${currentName}; it opens`);
      return;
    }
    const previous = previousValue === undefined ? undefined : parseKeyEncryptionKey(previousValue);
    if (previous instanceof Buffer && opensWith(stored, previous)) {
      add(
        item,
        'FAIL',
        `${which}: sealed under KEY_ENCRYPTION_KEY_PREVIOUS, not ${currentName} (the only key the server opens it with): run npm run admin -- keys reseal`,
      );
      return;
    }
    const tried =
      previous === undefined
        ? ''
        : typeof previous === 'string'
          ? ` (KEY_ENCRYPTION_KEY_PREVIOUS not tried: ${previous})`
          : ' nor with KEY_ENCRYPTION_KEY_PREVIOUS';
    add(
      item,
      'FAIL',
      `${which}: sealed in the database, but does not open with ${currentName}${tried}: set KEY_ENCRYPTION_KEY to the key that sealed it`,
    );
  } catch (err) {
    add(item, 'FAIL', (err as Error).message);
  }
}

/**
 * Whether the row opens under `kek`. A row no key could open (not a sealed key) or that opens but
 * holds a bad key throws, and is a FAIL as it is.
 */
function opensWith(stored: Parameters<typeof openStoredBjjKey>[0], kek: Buffer): boolean {
  try {
    openStoredBjjKey(stored, kek);
    return true;
  } catch (err) {
    if (err instanceof KeyError && !(err instanceof SealedKeyFormatError)) return false;
    throw err;
  }
}

/** The SQLite file, opened as it is. */
function openSqliteForDoctor(
  path: string,
  config: Config,
  add: (item: string, verdict: Verdict, detail: string) => void,
): SqliteStore | undefined {
  if (path === ':memory:' || !existsSync(path)) {
    add(
      'database',
      'FAIL',
      `DATABASE_URL: no database at ${path} (the server creates it at its first start)`,
    );
    return undefined;
  }
  let db: Database.Database;
  try {
    accessSync(path, constants.R_OK | constants.W_OK);
    db = new Database(path, { fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    // Takes the write lock and lets it go: writable without writing anything.
    db.prepare('BEGIN IMMEDIATE').run();
    db.prepare('ROLLBACK').run();
  } catch (err) {
    add('database', 'FAIL', `DATABASE_URL: ${path} is not writable (${(err as Error).message})`);
    return undefined;
  }
  const { problems, files } = planMigrations(db);
  const pending = files.filter((f) => f.state === 'pending').map((f) => f.name);
  for (const p of problems) add('database', 'FAIL', p);
  if (pending.length > 0)
    add(
      'database',
      'FAIL',
      `DATABASE_URL: ${path} lacks migrations ${pending.join(', ')}; start the server once to apply them`,
    );
  if (problems.length > 0 || pending.length > 0) {
    db.close();
    return undefined;
  }
  const store = sqliteStoreOn(db);
  const environment = (
    db.prepare("SELECT value FROM meta WHERE key = 'environment'").get() as { value?: string } | undefined
  )?.value;
  if (config.production && environment !== undefined && environment !== 'production')
    add('database', 'FAIL', `DATABASE_URL: ${path} was created by a ${environment} start`);
  else add('database', 'PASS', `${path}: writable, ${files.length} migrations applied`);
  return store;
}

type Fetched = { body: unknown; problem?: undefined } | { body?: undefined; problem: string };

async function fetchDocument(url: string, timeoutMs: number): Promise<Fetched> {
  const res = await fetchRaw(url, timeoutMs);
  if ('problem' in res) return { problem: res.problem };
  try {
    return { body: JSON.parse(res.text) };
  } catch {
    return { problem: `${url} answered ${res.status} without JSON` };
  }
}

async function fetchRaw(
  url: string,
  timeoutMs: number,
): Promise<{ status: number; text: string; type: string } | { problem: string }> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
  } catch (err) {
    return {
      problem: `${url}: ${(err as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : networkCause(err)}`,
    };
  }
  const text = await res.text();
  if (res.status !== 200) return { problem: `${url} answered ${res.status}` };
  return { status: res.status, text, type: res.headers.get('content-type') ?? '' };
}

/** The public members that identify a key. */
const keyId = (jwk: JWK) => JSON.stringify([jwk.kid, jwk.kty, jwk.crv, jwk.x, jwk.y, jwk.n, jwk.e]);

function keysLine(
  item: string,
  served: JWK[],
  local: JWK[] | undefined,
  add: (item: string, verdict: Verdict, detail: string) => void,
): void {
  if (!local) {
    add(item, 'FAIL', 'served, but the local keys could not be read to compare (see keys/database)');
    return;
  }
  const servedIds = new Set(served.map(keyId));
  const localIds = new Set(local.map(keyId));
  const missing = local.filter((k) => !servedIds.has(keyId(k))).map((k) => k.kid);
  const extra = served.filter((k) => !localIds.has(keyId(k))).map((k) => k.kid ?? '(no kid)');
  if (served.some((k) => 'd' in k)) add(item, 'FAIL', 'serves a private key member (d)');
  else if (missing.length === 0 && extra.length === 0)
    add(item, 'PASS', `serves the ${local.length} local key(s): ${local.map((k) => k.kid).join(', ')}`);
  else
    add(
      item,
      'FAIL',
      `keys differ from KEYS_DIR: ${missing.length ? `not served ${missing.join(', ')}` : ''}${missing.length && extra.length ? '; ' : ''}${extra.length ? `not local ${extra.join(', ')}` : ''}`,
    );
}

async function statusListLines(
  store: Store,
  origin: string,
  config: Config,
  published: JWK[],
  timeoutMs: number,
  add: (item: string, verdict: Verdict, detail: string) => void,
): Promise<void> {
  const partitions = await store.status.listPartitions();
  if (partitions.length === 0) {
    add('status lists', 'PASS', 'no partition yet (the first issuance opens one)');
    return;
  }
  for (const { partition } of partitions) {
    const item = `status list ${partition}`;
    const url = `${origin}/statuslist/${partition}`;
    const res = await fetchRaw(url, timeoutMs);
    if ('problem' in res) {
      add(item, 'FAIL', res.problem);
      continue;
    }
    try {
      const { kid } = decodeProtectedHeader(res.text);
      const jwk = published.find((k) => k.kid === kid);
      if (!jwk) throw new Error(`signed with ${String(kid)}, not a published key`);
      await jwtVerify(res.text, await importJWK(jwk, jwk.alg ?? 'ES256'), { typ: 'statuslist+jwt' });
      const expected = `${config.issuerOrigin}/statuslist/${partition}`;
      const { sub } = decodeJwt(res.text);
      if (sub !== expected) throw new Error(`sub is ${String(sub)}, expected ${expected}`);
      add(item, 'PASS', `${url} verifies with published key ${kid}`);
    } catch (err) {
      add(item, 'FAIL', `${url}: ${(err as Error).message}`);
    }
  }
}

async function outboxLine(
  store: Store,
  now: Date,
  maxAgeMs: number,
  add: (item: string, verdict: Verdict, detail: string) => void,
): Promise<void> {
  const pending = await store.issuances.countPendingUploads();
  const oldest = await store.issuances.oldestPendingUpload();
  if (oldest && now.getTime() - oldest.getTime() > maxAgeMs)
    add(
      'outbox',
      'FAIL',
      `${pending} upload(s) pending, the oldest since ${oldest.toISOString()} (over ${Math.round(maxAgeMs / 60_000)} min): is SERVICE_V1_BASE_URL reachable?`,
    );
  else
    add(
      'outbox',
      'PASS',
      pending === 0
        ? 'no upload pending'
        : `${pending} upload(s) pending, none over ${Math.round(maxAgeMs / 60_000)} min`,
    );
  // A failed upload is a credential its holder never received, and the outbox will not try it
  // again by itself: a FAIL (not a WARN), so that the check does not pass while deliveries are stranded.
  const failed = await store.issuances.countFailedUploads();
  if (failed > 0)
    add(
      'outbox',
      'FAIL',
      `${failed} upload(s) failed (given up after UPLOAD_MAX_ATTEMPTS; npm run admin -- history --status upload_failed lists them); once the cause is fixed: npm run admin -- uploads retry --all-failed`,
    );
}

/** Every schema file loads; every `http` claims source answers a lookup for a user that does not exist. */
async function schemaLines(
  config: Config,
  store: Store | undefined,
  add: (item: string, verdict: Verdict, detail: string) => void,
): Promise<void> {
  let schemas: SchemaRegistry;
  try {
    schemas = loadSchemas(config.schemasDir, config.issuerOrigin);
  } catch (err) {
    if (!(err instanceof SchemaFileError)) throw err;
    for (const line of err.message.split('\n')) add('schemas', 'FAIL', line);
    return;
  }
  add('schemas', 'PASS', `${schemas.all().length} schema(s) load from ${config.schemasDir}`);
  const http = schemas.all().filter((s) => s.claims.provider === 'http');
  if (http.length === 0 || !store) return;
  const providers = await createClaimsProviders(schemas, store.claims, config.schemasDir);
  for (const schema of http) {
    const item = `claims ${schema.schemaId}`;
    const userId = `doctor-${randomUUID()}`;
    try {
      const answer = await providers.get(schema.schemaId)!.lookup({
        userId,
        schemaId: schema.schemaId,
        proofType: schema.proofTypes[0]!,
      });
      add(item, 'PASS', `the http source answered eligible:${answer.eligible} for ${userId}`);
    } catch (err) {
      add(item, 'FAIL', `the http source failed a lookup: ${(err as Error).message}`);
    }
  }
}

/**
 * Spec 4.5 has no read-only route under the partner JWT: `initialize-user` creates the account it
 * is asked for. The check sends it an empty body: a service that accepts the JWT refuses the body
 * (400) and creates nothing; one that refuses the JWT answers 401 (or 403).
 */
async function partnerJwtLine(
  config: Config,
  ring: KeyRing,
  timeoutMs: number,
  add: (item: string, verdict: Verdict, detail: string) => void,
): Promise<void> {
  const item = 'partner JWT';
  if (!config.serviceBaseUrl || !config.partnerId) {
    add(item, 'FAIL', 'SERVICE_V1_BASE_URL and PARTNER_ID are needed to check it');
    return;
  }
  const signer = new PartnerJwtSigner({
    partnerId: config.partnerId,
    issuerOrigin: config.issuerOrigin,
    key: () => ring.partner,
  });
  const url = `${config.serviceBaseUrl}/auth/initialize-user`;
  try {
    const res = await postJson(url, {}, { headers: { 'x-partner-auth': await signer.token() }, timeoutMs });
    if (res.status === 400)
      add(item, 'PASS', `${url} accepted the JWT (kid ${ring.partner.kid}) and refused the empty body (400)`);
    else if (res.status === 401 || res.status === 403)
      add(
        item,
        'FAIL',
        `${url} answered ${res.status}: the service refuses our partner JWT (kid ${ring.partner.kid}): is PARTNER_ID right and jwks.json reachable by the service?`,
      );
    else
      add(
        item,
        'WARN',
        `${url} answered ${res.status} to an empty body; spec 4.5 has no read-only route, so acceptance cannot be told`,
      );
  } catch (err) {
    add(item, 'FAIL', `${url}: ${networkCause(err)}`);
  }
}
