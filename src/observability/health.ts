import type { KeyRing } from '../keys/key-ring.js';
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

/** docs/operations.md `/readyz`: the database answers, keys and schemas are loaded, recovery is done. */
export async function readiness(parts: {
  store: Store;
  keys: { current(): KeyRing };
  schemas: SchemaRegistry;
  lifecycle: Lifecycle;
}): Promise<Readiness> {
  const failed = (err: unknown): Check => ({ ok: false, error: (err as Error)?.message ?? String(err) });
  let database: Check = { ok: true };
  let outbox: Readiness['checks']['outbox'] = { pending: null, oldestAgeSeconds: null, failed: null };
  try {
    await parts.store.ping();
    const backlog = await uploadBacklog(parts.store.issuances)();
    outbox = {
      pending: backlog.pending,
      oldestAgeSeconds: backlog.oldest
        ? Math.max(0, Math.round((Date.now() - backlog.oldest.getTime()) / 1000))
        : 0,
      failed: backlog.failed,
    };
  } catch (err) {
    database = failed(err);
  }
  let keys: Check = { ok: true };
  try {
    const ring = parts.keys.current();
    if (!ring.signing || ring.partnerKeys.length === 0)
      keys = { ok: false, error: 'no signing or partner key' };
  } catch (err) {
    keys = failed(err);
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
