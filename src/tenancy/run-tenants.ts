import type { Server } from 'node:http';
import type { Config, Secrets } from '../config/config.js';
import type { Logger } from '../model.js';
import { stopOnSignals } from '../shutdown.js';
import type { Deployment } from './deployment.js';
import { serveTenants } from './serve-tenants.js';

type Bound = { server: Server; url: string };

/** `npm start` with TENANCY=multi: serve the tenants until SIGTERM or SIGINT. */
export async function runTenants(
  config: Config,
  secrets: Secrets,
  log: Logger,
  how: {
    first: boolean;
    bind: () => Promise<Bound>;
    bindAdmin: (() => Promise<Bound>) | undefined;
    /** A WORKERS=N worker: its id, and how it tells the primary it serves. */
    worker?: { id: number | undefined; ready: () => void; reloaded: (tenant: string) => void } | undefined;
    /** Called once the tenants are served (SIGHUP's schema reloads go to them from then on). */
    serving?: (deployment: Deployment) => void;
  },
): Promise<void> {
  // WORKERS=N: each worker's lines, its tenants' and its requests' included, name the worker.
  if (how.worker) log = log.child({ worker: how.worker.id });
  const bound = await how.bind();
  const adminBound = await how.bindAdmin?.();
  let running: Awaited<ReturnType<typeof serveTenants>>;
  try {
    running = await serveTenants(config, secrets, log, bound, adminBound, {
      recoverUploads: how.first,
      schemasReloaded: how.worker?.reloaded,
    });
  } catch (err) {
    for (const line of (err as Error).message.split('\n')) console.error(`start-up: ${line}`);
    process.exit(1);
  }
  how.serving?.(running.deployment);
  const tenants = running.deployment.served();
  const failing = tenants.filter((t) => t.problem !== undefined).map((t) => t.record.id);
  if (how.worker) {
    log.info(
      {
        event: 'worker_serving',
        worker: how.worker.id,
        pid: process.pid,
        url: running.url,
        tenants: tenants.length,
        failing,
      },
      `worker ${how.worker.id} (pid ${process.pid}) serving ${running.url} for ${tenants.length} tenant(s)`,
    );
    how.worker.ready();
  } else
    log.info(
      { event: 'listening', url: running.url, tenancy: 'multi', tenants: tenants.length, failing },
      `issuer-kit listening on ${running.url} for ${tenants.length} tenant(s) (TENANCY=multi)`,
    );
  if (running.adminUrl)
    log.info(
      { event: 'admin_listening', url: running.adminUrl },
      `admin routes listening on ${running.adminUrl} only`,
    );
  stopOnSignals(log, config.shutdownGraceMs, () => running.close());
}
