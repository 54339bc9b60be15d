import type { KeyRing } from '../keys/key-ring.js';
import type { Logger } from '../model.js';
import type { SchemaRegistry } from '../schemas/schema-registry.js';
import type { Store } from '../store/store.js';
import type { Lifecycle } from './lifecycle.js';
import { uploadBacklog } from './metrics.js';

export interface Check {
  ok: boolean;
  error?: string;
}

export interface Readiness {
  ready: boolean;
  checks: {
    database: Check;
    keys: Check;
    schemas: Check & { count?: number };
    recovery: Check;
    shutdown: Check;
    /** Reported, never failing: a backlog means the hosting service is slow, not this instance. */
    outbox: { pending: number | null; oldestAgeSeconds: number | null; failed: number | null };
  };
}

/**
 * How long `/readyz` waits for the database: a probe must answer quickly, and a database that
 * takes longer than this to answer `SELECT 1` is not ready to serve (docs/operations.md "Database unreachable").
 */
export const READYZ_DATABASE_TIMEOUT_MS = 1000;

/** docs/operations.md `/readyz`: the database answers, keys and schemas are loaded, recovery is done. */
export async function readiness(parts: {
  store: Store;
  keys: { current(): KeyRing; probe?(): Promise<void>; backend?: { name: string } };
  schemas: SchemaRegistry;
  lifecycle: Lifecycle;
  log?: Logger | undefined;
}): Promise<Readiness> {
  const failed = (err: unknown): Check => ({ ok: false, error: (err as Error)?.message ?? String(err) });
  let database: Check = { ok: true };
  let outbox: Readiness['checks']['outbox'] = { pending: null, oldestAgeSeconds: null, failed: null };
  let timer: NodeJS.Timeout | undefined;
  try {
    const backlog = await Promise.race([
      parts.store.ping(READYZ_DATABASE_TIMEOUT_MS).then(() => uploadBacklog(parts.store.issuances)()),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${READYZ_DATABASE_TIMEOUT_MS} ms`)),
          READYZ_DATABASE_TIMEOUT_MS,
        );
      }),
    ]);
    outbox = {
      pending: backlog.pending,
      oldestAgeSeconds: backlog.oldest
        ? Math.max(0, Math.round((Date.now() - backlog.oldest.getTime()) / 1000))
        : 0,
      failed: backlog.failed,
    };
  } catch (err) {
    // The probe is public: it says what is down; the error, with the server's address, is logged.
    parts.log?.warn({ event: 'readiness_database_failed', err }, 'readiness: the database did not answer');
    database = { ok: false, error: 'unavailable' };
  } finally {
    clearTimeout(timer);
  }
  let keys: Check = { ok: true };
  try {
    const ring = parts.keys.current();
    if (!ring.signing || ring.partnerKeys.length === 0)
      keys = { ok: false, error: 'no signing or partner key' };
  } catch (err) {
    keys = failed(err);
  }
  if (keys.ok && parts.keys.probe) {
    // A test signature through the key backend (a PKCS#11 token may be unreachable); the probe
    // is public, so it names the backend and the cause goes to the log.
    try {
      await parts.keys.probe();
    } catch (err) {
      const backend = parts.keys.backend?.name ?? 'software';
      parts.log?.warn(
        { event: 'readiness_key_backend_failed', keyBackend: backend, err },
        `readiness: the key backend (${backend}) cannot sign`,
      );
      keys = { ok: false, error: `key backend ${backend} cannot sign` };
    }
  }
  const count = parts.schemas.all().length;
  const schemas = count > 0 ? { ok: true, count } : { ok: false, count, error: 'no schema loaded' };
  const recovery: Check = parts.lifecycle.recovered
    ? { ok: true }
    : { ok: false, error: 'start-up recovery running' };
  const shutdown: Check = parts.lifecycle.draining ? { ok: false, error: 'shutting down' } : { ok: true };
  const checks = { database, keys, schemas, recovery, shutdown, outbox };
  return { ready: database.ok && keys.ok && schemas.ok && recovery.ok && shutdown.ok, checks };
}
