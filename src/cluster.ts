import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Config, Secrets } from './config/config.js';
import type { Development } from './development/start.js';
import { AppError } from './errors.js';
import type { Logger } from './model.js';

/** What a worker sends its primary once it serves requests. */
export const WORKER_READY = 'issuer-kit:ready';

/**
 * Reload the schemas: primary to worker (after a SIGHUP to the primary, or for a sibling), and
 * worker to primary after an admin reload it served, for the primary to pass to the others.
 */
export const SCHEMAS_RELOAD = 'issuer-kit:schemas-reload';
/** `tenant`: with TENANCY=multi, that tenant's schemas only (its admins' reload on another worker). */
export type SchemasReload = { type: typeof SCHEMAS_RELOAD; tenant?: string };

// A worker's GET /metrics asks its primary for the whole cluster's metrics; the id pairs the
// reply with the scrape that asked (several may be in flight).
const METRICS_REQUEST = 'issuer-kit:metrics-request';
const METRICS_REPLY = 'issuer-kit:metrics-reply';
type MetricsRequest = { type: typeof METRICS_REQUEST; id: number };
type MetricsReply = { type: typeof METRICS_REPLY; id: number; text?: string; error?: string };
// prom-client's clusterMetrics() gives up after 5 s and the primary answers an error; this covers
// a primary that does not answer at all.
const SCRAPE_TIMEOUT_MS = 6_000;

export const isMessage = <T extends { type: string }>(message: unknown, type: T['type']): message is T =>
  typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type;

let answering = false;
/**
 * In a worker: the registries prom-client's cluster support reports when the primary collects
 * (none while the worker starts, so that a scrape meanwhile does not wait for it).
 */
export function answerClusterMetrics(registries: Registry[]): void {
  AggregatorRegistry.setRegistries(registries);
  if (answering) return;
  answering = true;
  // Its constructor adds the worker's listener for the primary's requests.
  new AggregatorRegistry();
}

/**
 * In a worker: the whole cluster's metrics in the Prometheus text format, aggregated by the
 * primary; `UNAVAILABLE` (503) when the primary reports an error or does not answer in time.
 */
export function clusterScrape(timeoutMs = SCRAPE_TIMEOUT_MS): () => Promise<string> {
  let next = 0;
  const waiting = new Map<number, (reply: MetricsReply | undefined) => void>();
  process.on('message', (message) => {
    if (isMessage<MetricsReply>(message, METRICS_REPLY)) waiting.get(message.id)?.(message);
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => settle(undefined), timeoutMs);
      const settle = (reply: MetricsReply | undefined) => {
        clearTimeout(timer);
        waiting.delete(id);
        if (reply?.text !== undefined) resolve(reply.text);
        else
          reject(
            new AppError(
              'UNAVAILABLE',
              `metrics: the cluster did not answer (${reply?.error ?? 'timed out'})`,
            ),
          );
      };
      waiting.set(id, settle);
      process.send?.({ type: METRICS_REQUEST, id } satisfies MetricsRequest, undefined, {}, (err) => {
        if (err) settle({ type: METRICS_REPLY, id, error: err.message });
      });
    });
}

/**
 * `WORKERS=N` (N > 1): this process is the cluster primary. It never loads the app; it starts the
 * development emulator once (when there is one), forks the first worker alone (it runs the
 * start-up recovery of pending uploads, creates keys and migrates the database), then the
 * others behind the same listener, and on SIGTERM/SIGINT stops the workers before exiting.
 */
export async function runPrimary(config: Config, secrets: Secrets, log: Logger): Promise<void> {
  const env: Record<string, string> = {};
  let dev: Development | undefined;
  let issuerUrl: string | undefined;
  // TENANCY=multi: each tenant brings its own secrets and hosting service; there is no one issuer
  // for development start-up to fill in.
  const multi = config.tenancy === 'multi';
  if (!config.production && !multi) {
    const { startDevelopment, cachedJwks } = await import('./development/start.js');
    dev = await startDevelopment(config, secrets, {
      log,
      // The workers hold the keys: the emulator reads the issuer's published JWKS (rotation included).
      partnerJwks: cachedJwks(() => (issuerUrl ? `${issuerUrl}/.well-known/jwks.json` : undefined)),
      announceEmulator: true,
    });
    // What development start-up chose, handed to every worker so that they all agree.
    env.API_KEY = dev.secrets.apiKey!;
    env.ADMIN_API_KEY = dev.secrets.adminApiKey!;
    env.PARTNER_ID = dev.config.partnerId!;
    if (dev.config.serviceBaseUrl) env.SERVICE_V1_BASE_URL = dev.config.serviceBaseUrl;
  }

  const listening = new Set<Worker>();
  let stopping = false;
  // prom-client's cluster support: asks every worker for its registry and aggregates by each
  // metric's `aggregator` (sum unless the metric says otherwise).
  const aggregator = new AggregatorRegistry();
  const answerScrape = (worker: Worker, id: number) =>
    aggregator
      .clusterMetrics()
      .then(
        (text): MetricsReply => ({ type: METRICS_REPLY, id, text }),
        (err: Error): MetricsReply => ({ type: METRICS_REPLY, id, error: err.message }),
      )
      .then((reply) => {
        if (worker.isConnected()) worker.send(reply);
      });
  // Every worker but `except` (the one that reloaded already) reloads its schemas.
  const reloadSchemas = (except?: Worker, tenant?: string) => {
    const message: SchemasReload = { type: SCHEMAS_RELOAD, ...(tenant === undefined ? {} : { tenant }) };
    for (const w of Object.values(cluster.workers ?? {}))
      if (w && w !== except && w.isConnected()) w.send(message);
  };
  // Listening before the first fork: a SIGHUP while the workers start must not end the primary (a
  // starting worker runs the reload once its schemas are loaded).
  process.on('SIGHUP', () => {
    log.info(
      { event: 'schemas_reload', signal: 'SIGHUP', workers: config.workers },
      'schemas: reloading in every worker',
    );
    reloadSchemas();
  });
  const fork = (): Worker => {
    const worker = cluster.fork(env);
    worker.on('message', (message) => {
      if (message === WORKER_READY) listening.add(worker);
      else if (isMessage<MetricsRequest>(message, METRICS_REQUEST)) void answerScrape(worker, message.id);
      else if (isMessage<SchemasReload>(message, SCHEMAS_RELOAD)) reloadSchemas(worker, message.tenant);
    });
    return worker;
  };
  // Ready: listening (the first worker binds before it loads) and serving (it says so once it serves).
  const ready = (worker: Worker) =>
    new Promise<{ address: string; port: number }>((resolve, reject) => {
      let address: { address: string; port: number } | undefined;
      worker.once('listening', (a) => {
        address = { address: a.address ?? '127.0.0.1', port: a.port };
      });
      worker.on('message', (message) => {
        if (message === WORKER_READY && address) resolve(address);
      });
      worker.once('exit', (code) =>
        reject(new Error(`worker ${worker.id} exited with ${code} during start-up`)),
      );
    });

  const stopAll = async (code: number): Promise<never> => {
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    await Promise.all(
      workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.isDead()) return resolve();
            w.once('exit', () => resolve());
            w.process.kill('SIGTERM');
          }),
      ),
    );
    await dev?.close();
    process.exit(code);
  };

  try {
    const { address, port } = await ready(fork());
    const host = address === '0.0.0.0' || address === '::' ? '127.0.0.1' : address;
    issuerUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    // The others listen with the same arguments (the cluster hands them the first one's socket,
    // ephemeral port included) and share its origin when that followed the port.
    if (config.port === 0 && !process.env.ISSUER_ORIGIN && !config.production && !multi)
      env.ISSUER_ORIGIN = issuerUrl.replace('127.0.0.1', 'localhost');
    await Promise.all(Array.from({ length: config.workers - 1 }, () => ready(fork())));
  } catch (err) {
    log.fatal({ event: 'startup_failed', reason: (err as Error).message }, 'start-up failed');
    await stopAll(1);
  }

  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    const wasServing = listening.delete(worker);
    log.error(
      { event: 'worker_exited', worker: worker.id, code, signal, restarted: wasServing },
      'worker exited',
    );
    if (wasServing) fork();
  });
  log.info(
    {
      event: 'listening',
      url: issuerUrl,
      ...(multi ? { tenancy: 'multi' } : { origin: env.ISSUER_ORIGIN ?? config.publicOrigin }),
      nodeEnv: config.nodeEnv,
      workers: config.workers,
      docs: `${issuerUrl}/docs`,
    },
    multi
      ? `issuer-kit listening on ${issuerUrl} for the tenants of its registry (TENANCY=multi, ${config.nodeEnv}, ${config.workers} workers)`
      : `issuer-kit listening on ${issuerUrl} as ${env.ISSUER_ORIGIN ?? config.publicOrigin} (${config.nodeEnv}, ${config.workers} workers); API docs at ${issuerUrl}/docs`,
  );
  if (dev?.emulator)
    log.info(
      { event: 'emulator_listening', url: dev.emulator.url },
      'hosting-service emulator listening (SERVICE_V1_BASE_URL unset)',
    );
  if (config.production && !secrets.metricsToken)
    log.warn({ event: 'metrics_open' }, 'METRICS_TOKEN is unset: /metrics is open to anyone who reaches it');

  const stop = (signal: string) => {
    if (stopping) return;
    log.info({ event: 'shutdown', signal, workers: config.workers }, 'shutting down the workers');
    void stopAll(0);
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}
