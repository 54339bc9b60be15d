import cluster from 'node:cluster';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { SchemaCatalog } from './catalog/schema-catalog.js';
import {
  answerClusterMetrics,
  clusterScrape,
  isMessage,
  SCHEMAS_RELOAD,
  type SchemasReload,
  WORKER_READY,
} from './cluster.js';
import { loadConfig } from './config/config.js';
import { ConfigError } from './config/env.js';
import type { AppContext } from './context.js';
import type { Development } from './development/start.js';
import { IssuerUrls } from './identity/issuer-identity.js';
import { createLogger } from './observability/logger.js';
import { stopOnSignals } from './shutdown.js';

/** Every schema file's problems, for the one-pass report (loaded only then: ajv is heavy). */
async function schemaProblems(dir: string): Promise<string[]> {
  const { loadSchemas, SchemaFileError } = await import('./formats/schema-file.js');
  try {
    // The origin only shapes a default vct, which is never a problem.
    loadSchemas(dir, new IssuerUrls('http://localhost'));
    return [];
  } catch (err) {
    if (err instanceof SchemaFileError) return err.message.split('\n');
    throw err;
  }
}

// One process entry: config → (cluster primary | development start-up → keys/context → server) → signals (STYLE: src/main.ts).
async function main(): Promise<void> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  let loaded: ReturnType<typeof loadConfig>;
  try {
    loaded = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      // Every problem in one run: the schema files' too, though the config stops start-up anyway.
      for (const line of err.problems) console.error(`config: ${line}`);
      for (const line of await schemaProblems(resolve(process.env.SCHEMAS_DIR || './schemas')))
        console.error(`config: ${line}`);
      process.exit(1);
    }
    throw err;
  }
  let { config, secrets } = loaded;
  const log = createLogger(config.log);
  if (config.production && config.insecureUpstream && config.serviceBaseUrl?.startsWith('http:'))
    log.warn(
      { event: 'insecure_upstream', url: config.serviceBaseUrl },
      'ALLOW_INSECURE_UPSTREAM=1: partner JWTs and envelopes go over plain http',
    );
  if (config.production && config.webhookAllowPrivate)
    log.warn(
      { event: 'webhook_allow_private' },
      'WEBHOOK_ALLOW_PRIVATE=1: webhooks may reach loopback, private and link-local addresses',
    );
  if (cluster.isPrimary && config.workers > 1) {
    // WORKERS=N: this process forks and supervises; the workers run everything below.
    const { runPrimary } = await import('./cluster.js');
    return runPrimary(config, secrets, log);
  }
  // A starting worker answers the primary's metrics requests with nothing until its registry exists.
  if (cluster.isWorker) answerClusterMetrics([]);
  // Loaded here, not above: a cluster primary never loads the app.
  const [{ createContext }, { bind, serve }] = await Promise.all([
    import('./context.js'),
    import('./server.js'),
  ]);
  // The first (or only) process binds before loading (answering 503 meanwhile, so that an
  // ephemeral port is known for the dev origin) and resumes the uploads a previous run left; a
  // later worker joins the listener only once it can serve, and leaves its siblings' leases alone.
  const first = !cluster.isWorker || cluster.worker?.id === 1;
  // SIGHUP, and in a WORKERS=N worker the primary's message, read SCHEMAS_DIR again
  // (docs/schemas-and-claims.md "Reloading schemas"): a set with a bad file is refused, logged, and
  // the current one kept. Listening from the start, so that a SIGHUP while starting does not end
  // the process: that reload runs once the schemas are loaded.
  let catalog: SchemaCatalog | undefined;
  // TENANCY=multi: each tenant's catalogue (docs/several-issuers.md "Idle tenants").
  let tenants: { reloadSchemas(trigger: string, only?: string): Promise<void> } | undefined;
  let pendingReload: string | undefined;
  let stopWatching: (() => void) | undefined;
  const reloadSchemas = (trigger: string, tenant?: string) => {
    const current = catalog;
    if (tenants) void tenants.reloadSchemas(trigger, tenant);
    else if (!current) pendingReload = trigger;
    else
      void import('./catalog/schema-catalog.js').then(({ reloadAndLog }) =>
        reloadAndLog(current, log, trigger),
      );
  };
  process.on('SIGHUP', () => reloadSchemas('SIGHUP'));
  if (cluster.isWorker)
    process.on('message', (message) => {
      if (isMessage<SchemasReload>(message, SCHEMAS_RELOAD)) reloadSchemas('primary', message.tenant);
    });
  // A failed listen is one line naming the variables (a raw EADDRINUSE stack would name none):
  // a `listen_failed` log line, and the plain `start-up:` line on stderr every failed start writes.
  const listen = async (port: number, host: string, names: ListenNames) => {
    try {
      return await bind(port, host);
    } catch (err) {
      const problem = listenProblem(err as NodeJS.ErrnoException, port, host, names);
      log.fatal({ event: 'listen_failed', port, host, code: (err as NodeJS.ErrnoException).code }, problem);
      console.error(`start-up: ${problem}`);
      process.exit(1);
    }
  };
  if (config.tenancy === 'multi') {
    // docs/several-issuers.md: the tenants of the registry, each its own issuer, routed by host.
    const { runTenants } = await import('./tenancy/run-tenants.js');
    return runTenants(config, secrets, log, {
      first,
      // WORKERS=N: the primary forks the next worker once this one says it serves.
      worker: cluster.isWorker
        ? {
            id: cluster.worker?.id,
            ready: () => process.send?.(WORKER_READY),
            // A tenant's admins reloaded its schemas here: the other workers reload that tenant's.
            reloaded: (tenant) => process.send?.({ type: SCHEMAS_RELOAD, tenant } satisfies SchemasReload),
          }
        : undefined,
      bind: () => listen(config.port, config.host, ['PORT', 'HOST']),
      bindAdmin: config.admin
        ? () => listen(config.admin!.port, config.admin!.host, ['ADMIN_PORT', 'ADMIN_HOST'])
        : undefined,
      serving: (deployment) => {
        tenants = deployment;
        if (pendingReload) reloadSchemas(pendingReload);
      },
    });
  }
  let bound = first ? await listen(config.port, config.host, ['PORT', 'HOST']) : undefined;
  let adminBound =
    first && config.admin
      ? await listen(config.admin.port, config.admin.host, ['ADMIN_PORT', 'ADMIN_HOST'])
      : undefined;
  if (bound && config.port === 0 && !process.env.ISSUER_ORIGIN && !config.production) {
    // An ephemeral port (benchmarks, scripts): the dev origin follows the port actually bound.
    ({ config, secrets } = loadConfig({
      ...process.env,
      ISSUER_ORIGIN: bound.url.replace('127.0.0.1', 'localhost'),
    }));
  }
  let ctx: AppContext | undefined;
  let dev: Development | undefined;
  try {
    if (!config.production) {
      // Loaded only in development: the production process never imports the emulator.
      const { startDevelopment } = await import('./development/start.js');
      dev = await startDevelopment(config, secrets, {
        log,
        // The emulator checks partner JWTs against the issuer's current keys (rotation included).
        partnerJwks: async () => ({ keys: ctx?.keys.current().partnerKeys.map((k) => k.publicJwk) ?? [] }),
        announceEmulator: true,
      });
      ({ config, secrets } = dev);
    }
    ctx = await createContext(config, secrets, { log });
    catalog = ctx.schemaCatalog;
    if (cluster.isWorker)
      catalog.propagate = () => process.send?.({ type: SCHEMAS_RELOAD } satisfies SchemasReload);
    if (pendingReload) reloadSchemas(pendingReload);
    // SCHEMAS_WATCH (development's default): a schema file written while the server runs is served
    // without a reload by hand (docs/schemas-and-claims.md "Reloading schemas").
    if (config.schemasWatch) stopWatching = catalog.watch(config.schemasDir, log);
    if (cluster.isWorker) {
      // WORKERS=N: GET /metrics answers for the whole cluster, not for the worker that took it.
      answerClusterMetrics([ctx.metrics.registry]);
      ctx.metrics.scrape = clusterScrape();
    }
    await dev?.seedExamples(ctx.store.claims);
    bound ??= await bind(config.port, config.host);
    if (config.admin) adminBound ??= await bind(config.admin.port, config.admin.host);
  } catch (err) {
    // Plain lines on stderr, one per problem, where a failed start is looked for.
    for (const line of (err as Error).message.split('\n')) console.error(`start-up: ${line}`);
    bound?.server.close();
    adminBound?.server.close();
    await dev?.close();
    process.exit(1);
  }
  // The console's Overview runs `admin doctor` with this process's configuration.
  const doctor = async () => {
    const { runDoctor } = await import('./cli/doctor.js');
    return runDoctor(config, secrets, { allowHttp: !config.production, timeoutMs: 5000 });
  };
  const running = await serve(ctx, bound, { recoverUploads: first, admin: adminBound, doctor });
  // CONSOLE=on: the console answers where the admin routes do (docs/operations.md "The admin console").
  const consoleUrl = config.console.enabled ? `${(running.admin ?? running).url}/console` : undefined;
  if (cluster.isWorker) {
    log.info(
      { event: 'worker_serving', worker: cluster.worker?.id, pid: process.pid, url: running.url },
      `worker ${cluster.worker?.id} (pid ${process.pid}) serving ${running.url}`,
    );
    process.send?.(WORKER_READY);
  } else
    log.info(
      {
        event: 'listening',
        url: running.url,
        origin: config.publicOrigin,
        nodeEnv: config.nodeEnv,
        docs: `${running.url}/docs`,
        ...(consoleUrl ? { console: consoleUrl } : {}),
      },
      `issuer-kit listening on ${running.url} as ${config.publicOrigin} (${config.nodeEnv}); API docs at ${running.url}/docs${consoleUrl ? `; admin console at ${consoleUrl}` : ''}`,
    );
  if (running.admin && !cluster.isWorker)
    log.info(
      { event: 'admin_listening', url: running.admin.url },
      `admin routes listening on ${running.admin.url} only`,
    );
  if (dev?.emulator)
    log.info(
      { event: 'emulator_listening', url: dev.emulator.url },
      'hosting-service emulator listening (SERVICE_V1_BASE_URL unset)',
    );
  if (config.production && !secrets.metricsToken && !cluster.isWorker)
    log.warn({ event: 'metrics_open' }, 'METRICS_TOKEN is unset: /metrics is open to anyone who reaches it');

  stopOnSignals(log, config.shutdownGraceMs, () => {
    stopWatching?.();
    return running.close().then(() => dev?.close());
  });
}

type ListenNames = [port: 'PORT' | 'ADMIN_PORT', host: 'HOST' | 'ADMIN_HOST'];

/** What a failed listen means, naming the port and host variables. */
function listenProblem(err: NodeJS.ErrnoException, port: number, host: string, [P, H]: ListenNames): string {
  switch (err.code) {
    case 'EADDRINUSE':
      return `${P} ${port} is in use (${H} ${host}); stop the other process or choose another ${P}`;
    case 'EACCES':
      return `${P} ${port} needs privileges this process does not have (${H} ${host})`;
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      return `${H} ${host} is not an address of this machine (${P} ${port})`;
    default:
      return `cannot listen on ${H} ${host} ${P} ${port} (${err.message})`;
  }
}

await main();
