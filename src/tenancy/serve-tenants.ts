import type { Server } from 'node:http';
import type { Config, Secrets } from '../config/config.js';
import type { Logger } from '../model.js';
import { attach } from '../server.js';
import { Deployment, type DeploymentOptions } from './deployment.js';
import { deploymentHandler } from './deployment-app.js';

export interface ServingTenants {
  deployment: Deployment;
  url: string;
  adminUrl: string | undefined;
  /** Stops accepting, lets requests in flight finish up to SHUTDOWN_GRACE_MS, closes every tenant. */
  close(): Promise<void>;
}

/**
 * A `TENANCY=multi` process on its bound listeners (docs/several-issuers.md): the tenants of the
 * registry served by host, the registry watched for changes made through other instances.
 */
export async function serveTenants(
  config: Config,
  secrets: Secrets,
  log: Logger,
  bound: { server: Server; url: string },
  adminBound: { server: Server; url: string } | undefined,
  options: Pick<
    DeploymentOptions,
    'context' | 'pollMs' | 'recoverUploads' | 'doctor' | 'schemasReloaded'
  > = {},
): Promise<ServingTenants> {
  const deployment = await Deployment.open({
    config,
    secrets,
    log,
    listeners: adminBound ? ['public', 'admin'] : ['all'],
    ...options,
  });
  deployment.watch();
  attach(bound.server, deploymentHandler(deployment, adminBound ? 'public' : 'all'));
  if (adminBound) attach(adminBound.server, deploymentHandler(deployment, 'admin'));
  const servers = [bound.server, ...(adminBound ? [adminBound.server] : [])];
  return {
    deployment,
    url: bound.url,
    adminUrl: adminBound?.url,
    async close() {
      // docs/operations.md "Shutdown": readiness turns 503 at once, the deployment's and each tenant's.
      deployment.draining = true;
      for (const t of deployment.served()) if (t.ctx) t.ctx.lifecycle.draining = true;
      const closed = Promise.all(servers.map((s) => new Promise<void>((done) => s.close(() => done()))));
      for (const s of servers) s.closeIdleConnections();
      const grace = setTimeout(() => {
        for (const s of servers) s.closeAllConnections();
      }, config.shutdownGraceMs);
      await closed;
      clearTimeout(grace);
      await deployment.close();
    },
  };
}
