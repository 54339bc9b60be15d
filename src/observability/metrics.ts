import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { IssuanceStore } from '../store/store.js';

/** The outbox backlog as the store reports it (read when /metrics or /readyz asks). */
export type BacklogReader = () => Promise<{ pending: number; oldest: Date | undefined; failed: number }>;

/** Pending uploads, when the oldest was issued, and the uploads given up on (either engine). */
export function uploadBacklog(
  issuances: Pick<IssuanceStore, 'countPendingUploads' | 'oldestPendingUpload' | 'countFailedUploads'>,
): BacklogReader {
  return async () => {
    const [pending, oldest, failed] = await Promise.all([
      issuances.countPendingUploads(),
      issuances.oldestPendingUpload(),
      issuances.countFailedUploads(),
    ]);
    return { pending, oldest, failed };
  };
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * The Prometheus instruments of one app (the table in docs/operations.md). Each context has its own registry,
 * so tests running several apps in one process never share counters; the default process and
 * Node metrics are registered on it, named as prom-client names them.
 */
export class IssuerMetrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'issuer_http_requests_total',
    help: 'HTTP requests answered, by route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'issuer_http_request_duration_seconds',
    help: 'HTTP request duration in seconds, by route pattern and method',
    labelNames: ['route', 'method'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly issuances = new Counter({
    name: 'issuer_issuances_total',
    help: 'Issuances by proof type, channel (hosted/direct/oid4vci) and outcome (issued/existing/failed)',
    labelNames: ['proof_type', 'channel', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly uploads = new Counter({
    name: 'issuer_uploads_total',
    help: 'Envelope uploads to the hosting service by outcome (stored/retry/gave_up)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly webhookDeliveries = new Counter({
    name: 'issuer_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome (delivered/retry/gave_up)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly upstreamCalls = new Counter({
    name: 'issuer_upstream_requests_total',
    help: 'Calls to the hosting service by call and outcome (ok/failed)',
    labelNames: ['call', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly statusChanges = new Counter({
    name: 'issuer_status_changes_total',
    help: 'Credential status changes (revoke/suspend/unsuspend)',
    labelNames: ['change'] as const,
    registers: [this.registry],
  });
  readonly statusListBuild = new Histogram({
    name: 'issuer_status_list_build_seconds',
    help: 'Time to build and sign one status list partition token',
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly revocationVisible = new Histogram({
    name: 'issuer_revocation_visible_seconds',
    help: 'Time from a status change to the first served status list carrying it',
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600],
    registers: [this.registry],
  });
  readonly claimsLookup = new Histogram({
    name: 'issuer_claims_lookup_seconds',
    help: 'Claims provider lookups by provider and outcome (eligible/not_eligible/error)',
    labelNames: ['provider', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: 'issuer_rate_limited_total',
    help: 'Requests refused by a rate limit, by route group',
    labelNames: ['group'] as const,
    registers: [this.registry],
  });

  readonly rateLimitFailOpen = new Counter({
    name: 'issuer_rate_limit_fail_open_total',
    help: 'Requests that passed uncounted because the shared (REDIS_URL) rate-limit store was unreachable',
    registers: [this.registry],
  });

  /**
   * What `GET /metrics` answers: this registry, or in a cluster worker the whole cluster's
   * (`src/cluster.ts` swaps it in).
   */
  scrape: () => Promise<string> = () => this.registry.metrics();

  // The series of one (method, route, status), looked up once: prom-client validates the label
  // values of every call made with a label object. Few: route patterns × methods × statuses.
  readonly #requestSeries = new Map<
    string,
    { count: { inc(): void }; duration: { observe(v: number): void } }
  >();

  /** One answered HTTP request: `issuer_http_requests_total` and its duration. */
  observeRequest(route: string, method: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let series = this.#requestSeries.get(key);
    if (series === undefined) {
      series = {
        count: this.httpRequests.labels({ route, method, status: String(status) }),
        duration: this.httpDuration.labels({ route, method }),
      };
      this.#requestSeries.set(key, series);
    }
    series.count.inc();
    series.duration.observe(seconds);
  }

  /**
   * `failedDeliveries`: webhook deliveries left `failed`, read from the database when scraped.
   * `processMetrics: false` leaves out the process and Node metrics, which are the process's, not
   * an app's: each set watches the event loop and the garbage collector (a tenant's app,
   * docs/several-issuers.md "Idle tenants").
   */
  constructor(backlog: BacklogReader, failedDeliveries?: () => Promise<number>, processMetrics = true) {
    if (processMetrics) collectDefaultMetrics({ register: this.registry });
    // The backlog lives in the database (shared by every instance): read it when scraped. Every
    // worker of a cluster reads the same figures, so a cluster scrape takes the largest, not the sum.
    let last: ReturnType<BacklogReader> | undefined;
    const read = () => {
      last ??= backlog().finally(() => {
        last = undefined;
      });
      return last;
    };
    new Gauge({
      name: 'issuer_upload_outbox_pending',
      help: 'Issued credentials whose envelope is not stored by the hosting service yet',
      registers: [this.registry],
      aggregator: 'max',
      async collect() {
        this.set((await read()).pending);
      },
    });
    new Gauge({
      name: 'issuer_upload_outbox_oldest_age_seconds',
      help: 'Age of the oldest pending upload in seconds (0 when none)',
      registers: [this.registry],
      aggregator: 'max',
      async collect() {
        const { oldest } = await read();
        this.set(oldest ? Math.max(0, (Date.now() - oldest.getTime()) / 1000) : 0);
      },
    });
    new Gauge({
      name: 'issuer_upload_outbox_failed',
      help: 'Uploads the outbox gave up on (state failed; npm run admin -- uploads retry)',
      registers: [this.registry],
      aggregator: 'max',
      async collect() {
        this.set((await read()).failed);
      },
    });
    if (failedDeliveries)
      new Gauge({
        name: 'issuer_webhook_deliveries_failed',
        help: 'Webhook deliveries given up on (state failed; npm run admin -- webhooks retry)',
        registers: [this.registry],
        aggregator: 'max',
        async collect() {
          this.set(await failedDeliveries());
        },
      });
    // Outcomes start at 0 so alert expressions and rates see the series before the first event.
    for (const outcome of ['stored', 'retry', 'gave_up']) this.uploads.inc({ outcome }, 0);
    for (const outcome of ['delivered', 'retry', 'gave_up']) this.webhookDeliveries.inc({ outcome }, 0);
  }
}
