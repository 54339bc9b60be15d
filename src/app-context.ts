import type { Store } from 'express-rate-limit';
import type { SchemaCatalog } from './catalog/schema-catalog.js';
import type { Config, NamedKey } from './config/config.js';
import type { Iden3BjjIssuer } from './formats/iden3-bjj/index.js';
import type { Issuer } from './formats/issuer.js';
import type { StartedFormats } from './formats/start.js';
import type { IssuerIdentity } from './identity/issuer-identity.js';
import type { DirectIssuanceService } from './issuance/direct-issuance.js';
import type { EmailHasher } from './issuance/email-hash.js';
import type { HostedIssuanceService } from './issuance/hosted-issuance.js';
import type { IssuanceCore } from './issuance/issuance-core.js';
import type { UploadOutbox } from './issuance/outbox.js';
import type { RenewalService } from './issuance/renewal.js';
import type { KeyHolder } from './keys/key-holder.js';
import type { SharedKeyBackends } from './keys/open-key-backend.js';
import type { Logger, ProofType, RouteGroup, Telemetry } from './model.js';
import type { Lifecycle } from './observability/lifecycle.js';
import type { IssuerMetrics } from './observability/metrics.js';
import type { Oid4vciChannel } from './oid4vci/channel.js';
import type { HttpPools, SharedHttpPools } from './outbound/http-json.js';
import type { SharedRateLimits } from './rate-limit/redis-rate-limits.js';
import type { SchemaRegistry } from './schemas/schema-registry.js';
import type { ServiceClient } from './service-client/service-client.js';
import type { StatusJobs } from './status/status-jobs.js';
import type { StatusService } from './status/status-service.js';
import type { OpenedStore } from './store/engines.js';
import type { Webhooks } from './webhooks/webhooks.js';

/**
 * Everything the app needs, built once (atproto's AppContext). `createContext` only assembles
 * parts; start-up policy (development secrets, the emulator, example claims) lives in `main.ts`
 * and `src/development/`. Tests build it with overrides.
 */
export interface AppContext {
  config: Config;
  /** Who this issuer is: origin, identification, keys, schema catalogue, status-list space, partner, every public URL. */
  identity: IssuerIdentity;
  /** Outbound HTTP pools (hosting service, `http` claims providers), closed with the context. */
  http: HttpPools;
  /** `adminApiKeys`: every accepted admin key with its actor name (ADMIN_API_KEY as `admin`). */
  secrets: {
    apiKey: string;
    adminApiKeys: NamedKey[];
    metricsToken: string | undefined;
    /** The keys above are hex SHA-256 digests (a tenant's, kept so in the registry). */
    keysHashed: boolean;
  };
  /** The package version (OpenAPI `info.version`). */
  version: string;
  partnerId: string;
  /** The identity's key holder (`identity.keys`), which the readiness probe asks. */
  keys: KeyHolder;
  /** Every part of the store of the engine DATABASE_URL names (src/store/engines.ts). */
  store: OpenedStore;
  /** The current schema set (`identity.catalog.schemas`; a view: a reload swaps what it reads). */
  schemas: SchemaRegistry;
  /**
   * The schema set and its reload (SIGHUP, `POST /admin/schemas/reload`): the identity's catalogue
   * (`identity.catalog`), with what a process does to it (pin a request, watch, reload).
   */
  schemaCatalog: SchemaCatalog;
  issuers: Map<ProofType, Issuer>;
  /** The credential formats started for this schema set (src/formats/). */
  formats: StartedFormats;
  /** What every issuance does: sign, seal, record, upload within the request. */
  issuance: IssuanceCore;
  /** The holder's flow (docs/interface.md "issue-vc"), over `issuance`. */
  hosted: HostedIssuanceService;
  /** Direct issuance by email (docs/interface.md "admin issue-vc"), over `issuance`. */
  direct: DirectIssuanceService;
  /** The OpenID4VCI channel (docs/interface.md "OpenID4VCI: the wallet door"), when OID4VCI=on. */
  oid4vci: Oid4vciChannel | undefined;
  /** Keyed hash of a recipient email: stored with direct issuances, the history's `email` filter. */
  hashEmail: EmailHasher;
  status: StatusService;
  /** Bulk status changes (docs/operations.md "Bulk status changes"). */
  statusJobs: StatusJobs;
  /** Renewal of direct credentials: the sweep and `POST /admin/renew` (docs/operations.md "Renewal"). */
  renewal: RenewalService;
  outbox: UploadOutbox;
  webhooks: Webhooks;
  serviceClient: ServiceClient;
  /** The Iden3 back-end, when on (its routes, and tests). */
  iden3: Iden3BjjIssuer | undefined;
  /** The Iden3 issuer DID once that back-end is on. */
  iden3Did(): string | undefined;
  rateLimitStore: ((group: RouteGroup) => Store) | undefined;
  /** REDIS_URL's shared counters (fail-open count for metrics), when set. */
  sharedRateLimits: SharedRateLimits | undefined;
  log: Logger;
  /** What the services report; src/observability/observer.ts turns it into logs and metrics. */
  telemetry: Telemetry;
  /** This app's own Prometheus registry and instruments. */
  metrics: IssuerMetrics;
  /** Recovery done, in-flight requests, drain state (readiness, graceful shutdown). */
  lifecycle: Lifecycle;
  close(): Promise<void>;
}

/** Parts a test (or another start-up) passes in instead of the default ones. */
export interface ContextOverrides {
  /** Default: a pino logger from LOG_LEVEL and LOG_FORMAT. Tests pass a silent or capturing one. */
  log?: Logger;
  /** The hosting-service client (tests pass a fake); default: HTTP to SERVICE_V1_BASE_URL. */
  serviceClient?: ServiceClient;
  /**
   * A shared express-rate-limit Store per route group (e.g. Redis) when several instances run;
   * default: the library's in-memory store.
   */
  rateLimitStore?: (group: RouteGroup) => Store;
  /** Outbox timing (tests use short backoffs). */
  outbox?: {
    baseBackoffMs?: number;
    maxBackoffMs?: number;
    leaseMs?: number;
    sweepMs?: number;
    /** The sweep backs off up to this while idle (a tenant's, docs/several-issuers.md "Idle tenants"). */
    idleSweepMaxMs?: number;
  };
  webhooks?: {
    baseBackoffMs?: number;
    maxBackoffMs?: number;
    sweepMs?: number;
    /** How long a receiver has to answer (tests hold a receiver longer than the default). */
    deliveryTimeoutMs?: number;
    idleSweepMaxMs?: number;
    /** The look for new events backs off up to this while it finds none (a tenant's). */
    lookIdleMaxMs?: number;
  };
  /** The development example claims production refuses to find in its database. */
  exampleClaimsFile?: string;
  /** initialize-user retries of direct issuance (tests use short backoffs). */
  direct?: { attempts?: number; baseDelayMs?: number };
  /** How often an instance on PostgreSQL checks the key ring version (default 2000 ms). */
  keysPollMs?: number;
  /** Bulk status change timing and chunk size (tests use small ones). */
  statusJobs?: { leaseMs?: number; sweepMs?: number; chunkSize?: number; idleSweepMaxMs?: number };
  /**
   * The store this context works on, opened by the caller (a tenant's namespace,
   * src/tenancy/namespaces.ts); default: what DATABASE_URL names. The context closes it.
   */
  store?: () => Promise<OpenedStore>;
  /**
   * Keep-alive pools by origin this context's outbound calls go through, owned by the caller (a
   * deployment's, shared by its tenants); default: pools of this context's own.
   */
  sharedHttp?: SharedHttpPools;
  /**
   * The key backends this context signs through, owned by the caller (a deployment's: one PKCS#11
   * connection and session pool per token for all its tenants); default: a backend of its own.
   */
  sharedKeys?: SharedKeyBackends;
  /** Register the process and Node metrics on this app's registry (default true; not a tenant's). */
  processMetrics?: boolean;
  /** Create missing keys even in production (a tenant's first start). */
  generateKeys?: boolean;
  /** Renewal sweep timing, and its clock (tests and the bench drive them). */
  renewal?: { sweepMs?: number; batchSize?: number; now?: () => Date };
}
