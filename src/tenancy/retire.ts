import type { AppContext } from '../context.js';
import type { Logger } from '../model.js';
import { finishInFlight } from '../server.js';

/**
 * A tenant taken out of service (removed, or built again with other settings), once no request
 * can reach it any more: its readiness turns 503, its requests in flight finish (up to `graceMs`,
 * SHUTDOWN_GRACE_MS; then each still running is answered 503 as in a shutdown drain), and only
 * then does its context close: its workers, its store and its share of the key backend
 * (docs/several-issuers.md "Removing a tenant").
 */
export async function retire(id: string, ctx: AppContext, graceMs: number, log: Logger): Promise<void> {
  ctx.lifecycle.draining = true;
  const inFlight = ctx.lifecycle.inFlight;
  const { finished, unfinished } = await finishInFlight(ctx, graceMs);
  if (!finished)
    log.warn(
      { event: 'tenant_drain_timeout', tenant: id, graceMs, unfinished },
      `tenant ${id}: ${unfinished} request(s) still running after SHUTDOWN_GRACE_MS answered 503`,
    );
  try {
    await ctx.close();
    log.info(
      { event: 'tenant_closed', tenant: id, inFlightAtStart: inFlight, finished },
      `tenant ${id}: closed`,
    );
  } catch (err) {
    log.warn(
      { event: 'tenant_close_failed', tenant: id, error: (err as Error).message },
      `tenant ${id}: closing failed`,
    );
  }
}
