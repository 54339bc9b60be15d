import type { ServedTenant } from './deployment.js';
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
