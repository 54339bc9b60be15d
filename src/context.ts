import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Store } from 'express-rate-limit';
import { SchemaCatalog } from './catalog/schema-catalog.js';
import { buildSchemaSet } from './catalog/schema-set.js';
import { type Config, DEFAULT_ADMIN_ACTOR, type NamedKey, type Secrets } from './config/config.js';
import { claimDatabaseEnvironment, developmentStateProblems } from './development/production-guard.js';
import { databaseBjjKey } from './formats/iden3-bjj/database-bjj-key.js';
import { Iden3BjjIssuer } from './formats/iden3-bjj/index.js';
import type { Issuer } from './formats/issuer.js';
import { IssuerIdentification } from './formats/sd-jwt-vc/issuer-identification.js';
import { SdJwtVcIssuer } from './formats/sd-jwt-vc/sd-jwt-vc-issuer.js';
import { DirectIssuanceService } from './issuance/direct-issuance.js';
import { type EmailHasher, emailHasher } from './issuance/email-hash.js';
import { HostedIssuanceService } from './issuance/hosted-issuance.js';
import { IssuanceCore } from './issuance/issuance-core.js';
import { UploadOutbox } from './issuance/outbox.js';
import { RenewalService } from './issuance/renewal.js';
import { databaseKeyHolder, fileKeyHolder, type KeyHolder } from './keys/key-holder.js';
import { openKeyBackend } from './keys/open-key-backend.js';
import { recipientSealing } from './keys/recipient-sealing.js';
import { assertSignsInBackend } from './keys/token-migration.js';
import { type Logger, type ProofType, type RouteGroup, Telemetry } from './model.js';
import { Lifecycle } from './observability/lifecycle.js';
import { createLogger } from './observability/logger.js';
import { IssuerMetrics, uploadBacklog } from './observability/metrics.js';
import { observe } from './observability/observer.js';
import { Oid4vciChannel } from './oid4vci/channel.js';
import { redisRateLimits, type SharedRateLimits } from './rate-limit/redis-rate-limits.js';
import { loadSchemas, type SchemaRegistry } from './schemas/schema-registry.js';
import type { TypeMetadataRegistry } from './schemas/type-metadata.js';
import { closeHttpPools } from './service-client/http-json.js';
import { PartnerJwtSigner } from './service-client/partner-jwt.js';
import { ServiceClient } from './service-client/service-client.js';
import { StatusJobs } from './status/status-jobs.js';
import { StatusService } from './status/status-service.js';
import { describeTarget, type OpenedStore, openStore } from './store/engines.js';
import { subscribes } from './store/webhook-store.js';
import { Webhooks } from './webhooks/webhooks.js';

const PACKAGE_VERSION = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

export type { KeyHolder };

/**
 * Everything the app needs, built once (atproto's AppContext). `createContext` only assembles
 * parts; start-up policy (development secrets, the emulator, example claims) lives in `main.ts`
 * and `src/development/`. Tests build it with overrides.
 */
export interface AppContext {
  config: Config;
  /** `adminApiKeys`: every accepted admin key with its actor name (ADMIN_API_KEY as `admin`). */
  secrets: { apiKey: string; adminApiKeys: NamedKey[]; metricsToken: string | undefined };
  /** The package version (OpenAPI `info.version`). */
  version: string;
  partnerId: string;
  keys: KeyHolder;
  /** Every part of the store of the engine DATABASE_URL names (src/store/engines.ts). */
  store: OpenedStore;
  /** The current schema set (a view: a reload swaps what it reads). */
  schemas: SchemaRegistry;
  /** The schema set and its reload (SIGHUP, `POST /admin/schemas/reload`). */
  schemaCatalog: SchemaCatalog;
  /** SD_JWT_ISSUER: `iss` and JOSE header of credentials and status list tokens. */
  identification: IssuerIdentification;
  /** SD-JWT VC type metadata served at vct URLs under ISSUER_ORIGIN, by vct. */
  typeMetadata: TypeMetadataRegistry;
  issuers: Map<ProofType, Issuer>;
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
  /** The Iden3 back-end, when a schema lists BJJ_SIG_2021. */
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
  outbox?: { baseBackoffMs?: number; maxBackoffMs?: number; leaseMs?: number; sweepMs?: number };
  webhooks?: {
    baseBackoffMs?: number;
    maxBackoffMs?: number;
    sweepMs?: number;
    /** How long a receiver has to answer (tests hold a receiver longer than the default). */
    deliveryTimeoutMs?: number;
  };
  /** The development example claims production refuses to find in its database. */
  exampleClaimsFile?: string;
  /** initialize-user retries of direct issuance (tests use short backoffs). */
  direct?: { attempts?: number; baseDelayMs?: number };
  /** How often an instance on PostgreSQL checks the key ring version (default 2000 ms). */
  keysPollMs?: number;
  /** Bulk status change timing and chunk size (tests use small ones). */
  statusJobs?: { leaseMs?: number; sweepMs?: number; chunkSize?: number };
  /** Renewal sweep timing, and its clock (tests and the bench drive them). */
  renewal?: { sweepMs?: number; batchSize?: number; now?: () => Date };
}

export async function createContext(
  config: Config,
  secrets: Secrets,
  overrides: ContextOverrides = {},
): Promise<AppContext> {
  const log = overrides.log ?? createLogger(config.log);
  const telemetry = new Telemetry();
  const lifecycle = new Lifecycle();
  const { apiKey, adminApiKey, metricsToken } = secrets;
  const adminApiKeys: NamedKey[] = [
    ...(adminApiKey ? [{ name: DEFAULT_ADMIN_ACTOR, key: adminApiKey }] : []),
    ...secrets.adminApiKeys,
  ];
  const { partnerId, serviceBaseUrl } = config;
  // Production config validation refuses to get here without them; development start-up
  // (src/development/start.ts) fills them in first.
  if (!apiKey || adminApiKeys.length === 0 || !partnerId)
    throw new Error('API_KEY, ADMIN_API_KEY (or ADMIN_API_KEYS) and PARTNER_ID are required');
  if (!serviceBaseUrl) throw new Error('SERVICE_V1_BASE_URL is required');

  if (config.production) {
    const problems = await developmentStateProblems(config, secrets);
    if (problems.length > 0) throw new Error(problems.join('\n'));
  }
  const identification = new IssuerIdentification(config.sdJwtIssuer, config.issuerOrigin);

  const initialSchemas = loadSchemas(config.schemasDir, config.issuerOrigin);
  // The config holds the URL without its password; the secrets hold the target whole.
  let store: OpenedStore;
  try {
    store = await openStore(secrets.database, {
      poolMax: 'poolMax' in config.database ? config.database.poolMax : 10,
      timeouts: 'timeouts' in config.database ? config.database.timeouts : undefined,
      log,
    });
  } catch (err) {
    throw new Error(
      `DATABASE_URL: cannot open ${describeTarget(secrets.database)} (${(err as Error).message})`,
    );
  }
  try {
    await claimDatabaseEnvironment(
      store,
      config,
      overrides.exampleClaimsFile ?? resolve('examples/claims.json'),
    );
  } catch (err) {
    await store.close();
    throw err;
  }
  // One machine keeps its keys as files; several instances share them through the database,
  // sealed (docs/security.md "Keys shared by several instances"): the engine says which by having
  // `keys` or not. Config refuses production on such an engine without KEY_ENCRYPTION_KEY.
  // A start refused while loading keys (e.g. a row sealed under another KEY_ENCRYPTION_KEY)
  // leaves no pool open behind it.
  const orClose = async <T>(step: Promise<T>, also?: () => void): Promise<T> => {
    try {
      return await step;
    } catch (err) {
      also?.();
      await store.close().catch(() => undefined);
      throw err;
    }
  };
  // KEY_BACKEND: where the ES256 private keys live and sign; the file or row keeps each key's
  // state either way (docs/security.md "Keys in a hardware security module").
  const keyBackend = await orClose(openKeyBackend(config.keyBackend, secrets.pkcs11Pin));
  const keys: KeyHolder = await orClose(
    !store.keys
      ? fileKeyHolder(
          config.keysDir,
          !config.production,
          (ring) => {
            identification.assertUsable(ring);
            assertSignsInBackend(ring, keyBackend);
          },
          config.production ? 'production' : 'development',
          {
            // WORKERS=N: a rotation through one worker reaches its siblings within a poll.
            pollMs: overrides.keysPollMs ?? 2000,
            onReload: (ring) =>
              log.info(
                { event: 'keys_reloaded', signingKid: ring.signing.kid },
                'keys: KEYS_DIR changed; reloaded',
              ),
            onError: (err) =>
              log.warn(
                { event: 'key_reload_failed', error: (err as Error).message },
                'keys: KEYS_DIR changed but does not load; keeping the current keys',
              ),
          },
          keyBackend,
        )
      : databaseKeyHolder(store.keys, {
          check: (ring) => {
            identification.assertUsable(ring);
            assertSignsInBackend(ring, keyBackend);
          },
          keysDir: config.keysDir,
          generateIfMissing: !config.production,
          kek: secrets.keyEncryption.current,
          pollMs: overrides.keysPollMs ?? 2000,
          environment: config.production ? 'production' : 'development',
          log,
          backend: keyBackend,
        }),
    () => void keyBackend.close(),
  );

  const serviceClient =
    overrides.serviceClient ??
    new ServiceClient(
      () => serviceBaseUrl,
      new PartnerJwtSigner({
        partnerId,
        issuerOrigin: config.issuerOrigin,
        key: () => keys.current().partner,
      }),
      undefined,
      telemetry,
    );
  const outbox = new UploadOutbox(store.issuances, serviceClient, {
    maxAttempts: config.uploadMaxAttempts,
    leaseMs: config.uploadLeaseMs,
    sweepMs: config.outboxSweepMs,
    ...overrides.outbox,
    log,
  });
  const metrics = new IssuerMetrics(uploadBacklog(store.issuances), () =>
    store.webhooks.countFailedDeliveries(),
  );
  observe(telemetry, outbox, metrics, log);
  const webhooks = new Webhooks(store.webhooks, {
    policy: { production: config.production, allowPrivate: config.webhookAllowPrivate },
    // Sealed at rest where the keys are (PostgreSQL).
    kek: store.keys ? secrets.keyEncryption.current : undefined,
    maxAttempts: config.webhookMaxAttempts,
    baseBackoffMs: config.webhookRetryBaseMs,
    leaseMs: config.webhookLeaseMs,
    retentionMs: config.webhookRetentionDays * 86_400_000,
    locks: store.locks,
    sweepMs: config.outboxSweepMs,
    ...overrides.webhooks,
    log,
  });
  webhooks.on('delivered', () => metrics.webhookDeliveries.inc({ outcome: 'delivered' }));
  webhooks.on('failed', () => metrics.webhookDeliveries.inc({ outcome: 'retry' }));
  webhooks.on('gave_up', (delivery, error, attempts) => {
    metrics.webhookDeliveries.inc({ outcome: 'gave_up' });
    log.error(
      { event: 'webhook_gave_up', deliveryId: delivery.id, endpointId: delivery.endpointId, attempts, error },
      `webhook delivery given up after ${attempts} attempts; once the receiver answers: npm run admin -- webhooks retry ${delivery.id}`,
    );
  });

  const issuers = new Map<ProofType, Issuer>();
  issuers.set(
    'SD_JWT_VC',
    new SdJwtVcIssuer(
      identification,
      () => keys.current().signing,
      (vct) => typeMetadata.get(vct)?.integrity,
    ),
  );
  // The Iden3 back-end is on when a schema lists BJJ_SIG_2021 at start-up (docs/architecture.md).
  let iden3: Iden3BjjIssuer | undefined;
  if (initialSchemas.all().some((s) => s.proofTypes.includes('BJJ_SIG_2021'))) {
    iden3 = await Iden3BjjIssuer.open({
      store: store.iden3,
      // Several instances share the key through the database (sealed); one machine keeps the file.
      key: store.keys
        ? await orClose(
            databaseBjjKey(store.keys, store.iden3, {
              keysDir: config.keysDir,
              generateIfMissing: !config.production,
              kek: secrets.keyEncryption.current,
              log,
            }),
            () => keys.close(),
          )
        : undefined,
      keysDir: config.keysDir,
      generateKeyIfMissing: !config.production,
      origin: config.issuerOrigin,
      schemasDir: config.schemasDir,
      didMethod: config.iden3.method,
      blockchain: config.iden3.blockchain,
      network: config.iden3.network,
      didMethodByte: config.iden3.methodByte,
      networkFlag: config.iden3.networkFlag,
      merklizeWorkers: config.iden3.merklizeWorkers,
    });
    issuers.set('BJJ_SIG_2021', iden3);
  }
  // Claims providers, type metadata and the Iden3 prepared schemas, rebuilt together by a reload.
  const schemaSetDeps = {
    schemasDir: config.schemasDir,
    issuerOrigin: config.issuerOrigin,
    claimsStore: store.claims,
    iden3,
  };
  const schemaCatalog = new SchemaCatalog(
    await orClose(buildSchemaSet(initialSchemas, schemaSetDeps), () => {
      keys.close();
      void iden3?.close();
    }),
    async () => buildSchemaSet(loadSchemas(config.schemasDir, config.issuerOrigin), schemaSetDeps),
  );
  const { schemas, typeMetadata, claimsProviders } = schemaCatalog;

  const issuance = new IssuanceCore({
    issuerOrigin: config.issuerOrigin,
    schemas,
    claimsProviders,
    issuers,
    store: store.issuances,
    outbox,
    statusList: { partitionSize: config.statusList.partitionSize, bits: config.statusList.bits },
    uploadTimeoutMs: config.uploadTimeoutMs,
    log,
    telemetry,
  });
  const hosted = new HostedIssuanceService({ core: issuance, schemas });

  const status = new StatusService({
    issuerOrigin: config.issuerOrigin,
    ttlSeconds: config.statusList.ttlSeconds,
    store: store.status,
    signingKey: () => keys.current().signing,
    header: (key) => identification.header(key),
    ...(identification.statusListIssuer ? { iss: identification.statusListIssuer } : {}),
    lookup: (nonce) => store.issuances.getByNonce(nonce),
    telemetry,
    publishedSubscribed: async () =>
      (await store.webhooks.listEndpoints()).some((e) => subscribes(e.events, 'status_list.published')),
    externalRevokers: iden3
      ? new Map([
          [
            'BJJ_SIG_2021',
            async (record, statusChange) => (await iden3.revoke(record.revocationNonce, statusChange)).record,
          ],
        ])
      : undefined,
  });

  const statusJobs = new StatusJobs({
    store: store.statusJobs,
    statusStore: store.status,
    status,
    externalRevokers: iden3
      ? new Map([
          [
            'BJJ_SIG_2021',
            (items, changes) =>
              iden3.revokeMany(
                items.map((i) => i.revocationNonce),
                changes,
              ),
          ],
        ])
      : undefined,
    leaseMs: config.statusJobLeaseMs,
    sweepMs: config.outboxSweepMs,
    ...overrides.statusJobs,
    log,
  });

  // REDIS_URL: counters shared by every instance (a test passes its own store instead).
  const shared: SharedRateLimits | undefined =
    overrides.rateLimitStore || !secrets.redisUrl
      ? undefined
      : redisRateLimits(secrets.redisUrl, {
          log,
          prefix: config.rateLimitRedisPrefix,
          timeoutMs: config.rateLimitRedisTimeoutMs,
          onFailOpen: () => telemetry.emit('rateLimitFailOpen'),
        });

  const hashEmail = emailHasher(store.meta);
  // docs/security.md "What renewal keeps": a recipient is sealed only under a key that protects it
  // (KEY_ENCRYPTION_KEY; development's public key outside production).
  const sealing =
    secrets.keyEncryption.given || !config.production
      ? recipientSealing(secrets.keyEncryption.current)
      : undefined;
  const direct = new DirectIssuanceService({
    core: issuance,
    hashEmail,
    renewals: store.renewals,
    sealRecipient: sealing?.seal,
    schemas,
    service: serviceClient,
    history: store.history,
    status,
    locks: store.locks,
    retry: overrides.direct,
    deadlineMs: config.adminIssueDeadlineMs,
  });

  const renewal = new RenewalService({
    core: issuance,
    direct,
    schemas,
    issuances: store.issuances,
    renewals: store.renewals,
    status,
    sealing,
    locks: store.locks,
    sweepMs: config.renewalSweepMs,
    leaseMs: config.renewalSweepLeaseMs,
    finishGraceMs: config.renewalFinishGraceDays * 86_400_000,
    ...overrides.renewal,
    log,
  });

  if (!sealing && renewal.renewedSchemas().length > 0)
    log.warn(
      { event: 'renewal_without_key' },
      'KEY_ENCRYPTION_KEY is unset: direct credentials keep no sealed recipient and the renewal sweep records them not renewable (docs/security.md "What renewal keeps")',
    );

  const oid4vci = config.oid4vci.enabled
    ? new Oid4vciChannel({
        issuerOrigin: config.issuerOrigin,
        schemas,
        core: issuance,
        store: store.oid4vci,
        hashEmail,
        requireDpop: config.oid4vci.requireDpop,
        dpopNonce: config.oid4vci.dpopNonce,
      })
    : undefined;

  return {
    config,
    secrets: { apiKey, adminApiKeys, metricsToken },
    version: PACKAGE_VERSION,
    partnerId,
    keys,
    store,
    schemas,
    schemaCatalog,
    identification,
    typeMetadata,
    issuers,
    issuance,
    hosted,
    direct,
    oid4vci,
    hashEmail,
    status,
    statusJobs,
    renewal,
    outbox,
    webhooks,
    serviceClient,
    iden3,
    rateLimitStore: overrides.rateLimitStore ?? shared?.store,
    sharedRateLimits: shared,
    iden3Did: () => iden3?.did,
    log,
    telemetry,
    metrics,
    lifecycle,
    async close() {
      await renewal.stop();
      await statusJobs.stop();
      await outbox.stop();
      await webhooks.stop();
      await closeHttpPools();
      keys.close();
      await keys.backend.close();
      await shared?.close();
      await iden3?.close();
      await store.close();
    },
  };
}
