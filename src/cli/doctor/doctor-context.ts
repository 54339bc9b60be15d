import type { JWK } from 'jose';
import type { Config, Secrets } from '../../config/config.js';
import { type IssuerFace, issuerFace } from '../../identity/issuer-identity.js';
import type { KeyBackend } from '../../keys/key-backend.js';
import { databaseKeyHolder } from '../../keys/key-holder.js';
import { type KeyRing, loadKeyRing } from '../../keys/key-ring.js';
import { openKeyBackend } from '../../keys/open-key-backend.js';
import { compromisedKids, publishedSigningKeys } from '../../keys/published-keys.js';
import { silentLogger } from '../../observability/logger.js';
import type { StoreInspection } from '../../store/engine.js';
import { inspectStore } from '../../store/engines.js';
import type { Store } from '../../store/store.js';
import { type Fetched, fetchDocument } from './fetch.js';
import type { DoctorLine } from './line.js';

/**
 * One check of `admin doctor`: the item names it reports (in the order it reports them; `<x>` a
 * variable part) and how it finds its lines. A check only reads: the context hands it the
 * database, keys and documents, each opened or fetched once and shared with the other checks.
 */
export interface DoctorCheck {
  items: readonly string[];
  run(ctx: DoctorContext): Promise<DoctorLine[]> | DoctorLine[];
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
}

export const HOUR_MS = 3_600_000;

/** What every check reads. Each part is opened or fetched on first use, then shared. */
export interface DoctorContext {
  config: Config;
  secrets: Secrets;
  /** The issuer the config describes: the origin and URLs the documents should name. */
  identity: IssuerFace;
  /** Where the public documents are fetched from, no trailing slash. */
  origin: string;
  /** `--origin` was given. */
  originGiven: boolean;
  allowHttp: boolean;
  now: Date;
  timeoutMs: number;
  maxUploadAgeMs: number;
  /** The database as it is (never created, never migrated). */
  database(): Promise<StoreInspection>;
  /** The store over it, when the database can serve as it is. */
  store(): Promise<Store | undefined>;
  /** KEY_BACKEND opened as the server opens it (the token found, logged in), or why it does not. */
  keyBackend(): Promise<KeyBackend | Error>;
  /** The ring the server would sign with, or why it does not load. */
  ring(): Promise<KeyRing | Error>;
  /** The signing keys the server would publish, when the ring and the database both read. */
  localSigning(): Promise<JWK[] | undefined>;
  /** A public document under `origin`, fetched once. */
  document(path: string): Promise<Fetched>;
}

const once = <T>(make: () => Promise<T>): (() => Promise<T>) => {
  let made: Promise<T> | undefined;
  return () => {
    made ??= make();
    return made;
  };
};

export function doctorContext(
  config: Config,
  secrets: Secrets,
  options: DoctorOptions,
): DoctorContext & { close(): Promise<void> } {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const now = options.now ?? new Date();
  const identity = issuerFace(config);
  const origin = (options.origin ?? identity.origin).replace(/\/+$/, '');
  const database = once(() => inspectStore(secrets.database));
  const store = async () => (await database()).store;
  const keyBackend = once(async () =>
    openKeyBackend(config.keyBackend, secrets.pkcs11Pin).catch((err: Error) => err),
  );
  const ring = once(async () => {
    const backend = await keyBackend();
    if (backend instanceof Error) return backend;
    return loadLocalRing(config, secrets, await store(), backend).catch((err: Error) => err);
  });
  const localSigning = once(async () => {
    const [r, s] = [await ring(), await store()];
    if (r instanceof Error || !s) return undefined;
    // A database of an older version has no such table yet: nothing was declared compromised.
    const compromised = await compromisedKids(s.compromisedKeys).catch(() => new Set<string>());
    return publishedSigningKeys(r, s.issuances, now, compromised);
  });
  const documents = new Map<string, Promise<Fetched>>();
  return {
    config,
    secrets,
    identity,
    origin,
    originGiven: Boolean(options.origin),
    allowHttp: options.allowHttp === true,
    now,
    timeoutMs,
    maxUploadAgeMs: options.maxUploadAgeMs ?? HOUR_MS,
    database,
    store,
    keyBackend,
    ring,
    localSigning,
    document(path) {
      const fetched = documents.get(path) ?? fetchDocument(`${origin}${path}`, timeoutMs);
      documents.set(path, fetched);
      return fetched;
    },
    async close() {
      await (await database()).close();
      const backend = await keyBackend();
      if (!(backend instanceof Error)) await backend.close();
    },
  };
}

/**
 * The ring the server would sign with: KEYS_DIR's files, or where the engine keeps keys in the
 * database, its sealed rows once the first start imported them (read, never imported).
 */
async function loadLocalRing(
  config: Config,
  secrets: Secrets,
  store: Store | undefined,
  backend: KeyBackend,
): Promise<KeyRing> {
  if (!store?.keys || (await store.keys.list()).length === 0)
    return loadKeyRing(config.keysDir, { generateIfMissing: false, backend });
  const holder = await databaseKeyHolder(store.keys, {
    keysDir: config.keysDir,
    generateIfMissing: false,
    kek: secrets.keyEncryption.current,
    pollMs: HOUR_MS,
    log: silentLogger(),
    environment: config.production ? 'production' : 'development',
    backend,
  });
  holder.close();
  return holder.current();
}
