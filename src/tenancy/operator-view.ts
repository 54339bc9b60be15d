import { type Check, READYZ_DATABASE_TIMEOUT_MS } from '../observability/health.js';
import type { Deployment, ServedTenant } from './deployment.js';
import { operatorView } from './tenant.js';

/** A tenant in the operator's list: its registration, whether it serves, and why not. */
export const withServing = (t: ServedTenant) => ({
  ...operatorView(t.record),
  serving: t.ctx !== undefined,
  ...(t.problem === undefined ? {} : { problem: t.problem }),
});

/** What the operator sees of a tenant's work: counts and dates, never a claim or a credential. */
export async function healthOf(t: ServedTenant) {
  const ctx = t.ctx;
  if (!ctx) return { serving: false as const };
  const since = new Date(Date.now() - 86_400_000);
  const [pending, oldest, failed, hours, failedWebhooks] = await Promise.all([
    ctx.store.issuances.countPendingUploads(),
    ctx.store.issuances.oldestPendingUpload(),
    ctx.store.issuances.countFailedUploads(),
    ctx.store.history.issuancesPerHour(since),
    ctx.store.webhooks.countFailedDeliveries(),
  ]);
  return {
    serving: true as const,
    keys: ctx.keys.current().signing.kid,
    issuedLast24h: hours.reduce((n, h) => n + h.count, 0),
    uploads: { pending, oldestPending: oldest ?? null, failed },
    failedWebhookDeliveries: failedWebhooks,
  };
}

/**
 * The deployment's readiness (docs/operations.md `/readyz`, as a single deployment's): its own
 * database (the registry's namespace) answers within READYZ_DATABASE_TIMEOUT_MS, and no drain has
 * begun. The tenants' own checks answer under each tenant's origin.
 */
export async function deploymentReadiness(
  deployment: Deployment,
): Promise<{ database: Check; shutdown: Check }> {
  let database: Check = { ok: true };
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      deployment.namespaces.registry.version(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${READYZ_DATABASE_TIMEOUT_MS} ms`)),
          READYZ_DATABASE_TIMEOUT_MS,
        );
      }),
    ]);
  } catch (err) {
    // The probe is public: it says what is down; the cause, with the server's address, is logged.
    deployment.options.log.warn(
      { event: 'readiness_database_failed', err },
      "readiness: the deployment's database did not answer",
    );
    database = { ok: false, error: 'unavailable' };
  } finally {
    clearTimeout(timer);
  }
  const shutdown: Check = deployment.draining ? { ok: false, error: 'shutting down' } : { ok: true };
  return { database, shutdown };
}
