import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { SchemaCatalog } from './catalog/schema-catalog.js';
import { buildSchemaSet } from './catalog/schema-set.js';
import { type Config, DEFAULT_ADMIN_ACTOR, type NamedKey, type Secrets } from './config/config.js';
import { claimDatabaseEnvironment, developmentStateProblems } from './development/production-guard.js';
import { startedIden3Issuer } from './formats/iden3-bjj/format.js';
import { FORMATS } from './formats/index.js';
import { loadSchemas } from './formats/schema-file.js';
import { type StartedFormats, startFormats } from './formats/start.js';
import {
  type IssuerIdentity,
  type IssuerIdentityBeforeCatalog,
  issuerFace,
  issuerIdentity,
} from './identity/issuer-identity.js';
import { DirectIssuanceService } from './issuance/direct-issuance.js';
import { emailHasher } from './issuance/email-hash.js';
import { HostedIssuanceService } from './issuance/hosted-issuance.js';
import { IssuanceCore } from './issuance/issuance-core.js';
import { UploadOutbox } from './issuance/outbox.js';
import { RenewalService } from './issuance/renewal.js';
import type { KeyHolder } from './keys/key-holder.js';
import { openKeyBackend } from './keys/open-key-backend.js';
import { openKeyHolder } from './keys/open-key-holder.js';
import { recipientSealing } from './keys/recipient-sealing.js';
import { Telemetry } from './model.js';
import { Lifecycle } from './observability/lifecycle.js';
import { createLogger } from './observability/logger.js';
import { IssuerMetrics, uploadBacklog } from './observability/metrics.js';
import { observe } from './observability/observer.js';
import { Oid4vciChannel } from './oid4vci/channel.js';
import { UpstreamLogin } from './oid4vci/login.js';
import { loadRequestDecryption } from './oid4vci/request-encryption.js';
import { oid4vciTrust } from './oid4vci/x5c-trust.js';
import { HttpPools } from './outbound/http-json.js';
import type { SharedRateLimits } from './rate-limit/redis-rate-limits.js';
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

import type { AppContext, ContextOverrides } from './app-context.js';

export type { AppContext, ContextOverrides, KeyHolder };

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
  const face = issuerFace(config);
  // Outbound HTTP (hosting service, `http` claims providers): pools of this context, closed with it,
  // or a tenant's share of its deployment's.
  const http = new HttpPools(overrides.sharedHttp);

  const initialSchemas = loadSchemas(config.schemasDir, face.urls);
  // The config holds the URL without its password; the secrets hold the target whole.
  let store: OpenedStore;
  try {
    store = await (overrides.store?.() ??
      openStore(secrets.database, {
        poolMax: 'poolMax' in config.database ? config.database.poolMax : 10,
        timeouts: 'timeouts' in config.database ? config.database.timeouts : undefined,
        log,
      }));
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
  const openBackend = overrides.sharedKeys?.open.bind(overrides.sharedKeys) ?? openKeyBackend;
  const keyBackend = await orClose(openBackend(config.keyBackend, secrets.pkcs11Pin));
  const keys: KeyHolder = await orClose(
    openKeyHolder({
      config,
      secrets,
      keys: store.keys,
      backend: keyBackend,
      check: (ring) => face.identification.assertUsable(ring),
      pollMs: overrides.keysPollMs ?? 2000,
      generateIfMissing: overrides.generateKeys,
      log,
    }),
    () => void keyBackend.close(),
  );
  // The formats start with the identity before its schema set, which they prepare.
  const signingIdentity: IssuerIdentityBeforeCatalog = { ...face, keys };

  const serviceClient =
    overrides.serviceClient ??
    new ServiceClient(
      () => serviceBaseUrl,
      new PartnerJwtSigner({
        identity: face,
        partnerId,
        key: () => keys.current().partner,
      }),
      (url, payload, options) => http.post(url, payload, options),
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
  const metrics = new IssuerMetrics(
    uploadBacklog(store.issuances),
    () => store.webhooks.countFailedDeliveries(),
    overrides.processMetrics,
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

  // Each format starts what it needs (its issuer, its status mechanism) over the shared parts.
  const formats: StartedFormats = await orClose(
    startFormats(
      FORMATS,
      {
        config,
        secrets,
        store,
        identity: signingIdentity,
        vctIntegrity: (vct: string): string | undefined => typeMetadata.get(vct)?.integrity,
        log,
      },
      initialSchemas.all(),
    ),
    () => keys.close(),
  );
  const { issuers } = formats;
  const iden3 = startedIden3Issuer(formats.started);
  // Claims providers, type metadata and the formats' prepared schemas, rebuilt together by a reload.
  const schemaSetDeps = {
    schemasDir: config.schemasDir,
    urls: face.urls,
    claimsStore: store.claims,
    http,
    formats: formats.all,
  };
  const schemaCatalog = new SchemaCatalog(
    await orClose(buildSchemaSet(initialSchemas, schemaSetDeps), () => {
      keys.close();
      void formats.close();
    }),
    async () => buildSchemaSet(loadSchemas(config.schemasDir, face.urls), schemaSetDeps),
  );
  const { schemas, typeMetadata } = schemaCatalog;
  const identity: IssuerIdentity = issuerIdentity(face, keys, schemaCatalog);

  const issuance = new IssuanceCore({
    identity,
    issuers,
    store: store.issuances,
    outbox,
    uploadTimeoutMs: config.uploadTimeoutMs,
    log,
    telemetry,
  });
  const hosted = new HostedIssuanceService({ core: issuance, identity });

  const status = new StatusService({
    identity,
    store: store.status,
    lookup: (nonce) => store.issuances.getByNonce(nonce),
    telemetry,
    publishedSubscribed: async () =>
      (await store.webhooks.listEndpoints()).some((e) => subscribes(e.events, 'status_list.published')),
    externalRevokers: formats.revokers((r) => r.one),
  });

  const statusJobs = new StatusJobs({
    store: store.statusJobs,
    statusStore: store.status,
    status,
    externalRevokers: formats.revokers(
      (r) => (items, changes) =>
        r.many(
          items.map((i) => i.revocationNonce),
          changes,
        ),
    ),
    leaseMs: config.statusJobLeaseMs,
    sweepMs: config.outboxSweepMs,
    ...overrides.statusJobs,
    log,
  });

  // REDIS_URL: counters shared by every instance (a test passes its own), its client loaded only then.
  const shared: SharedRateLimits | undefined =
    overrides.rateLimitStore || !secrets.redisUrl
      ? undefined
      : (await import('./rate-limit/redis-rate-limits.js')).redisRateLimits(secrets.redisUrl, {
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
    identity,
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
    identity,
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
        identity,
        core: issuance,
        store: store.oid4vci,
        hashEmail,
        requireDpop: config.oid4vci.requireDpop,
        dpopNonce: config.oid4vci.dpopNonce,
        ...oid4vciTrust(config.oid4vci),
        batchSize: config.oid4vci.batchSize,
        ...(identity.mode === 'x5c' ? { metadataSigner: identity } : {}),
        log,
        ...(config.oid4vci.login
          ? {
              authorizationCode: {
                login: new UpstreamLogin({
                  ...config.oid4vci.login,
                  clientSecret: secrets.oid4vciLoginClientSecret,
                  clientKeyPem: secrets.oid4vciKeys?.loginClient,
                  redirectUri: identity.urls.oid4vciLoginCallback,
                }),
                store: store.oid4vciAuthorizations,
                requirePar: config.oid4vci.profile === 'haip',
                refreshTokens: config.oid4vci.refreshTokens,
              },
            }
          : {}),
        encryptionRequired: config.oid4vci.responseEncryption === 'required',
        ...(config.oid4vci.requestEncryption
          ? {
              requestDecryption: await loadRequestDecryption(
                config.oid4vci.requestEncryption,
                secrets.oid4vciKeys?.requestEncryption,
              ),
            }
          : {}),
        notifications: config.oid4vci.notifications,
        deferredSeconds: config.oid4vci.deferredSeconds,
      })
    : undefined;

  return {
    config,
    identity,
    http,
    secrets: { apiKey, adminApiKeys, metricsToken, keysHashed: secrets.keysHashed === true },
    version: PACKAGE_VERSION,
    partnerId,
    keys,
    store,
    schemas,
    schemaCatalog,
    issuers,
    formats,
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
      await http.close();
      keys.close();
      await keys.backend.close();
      await shared?.close();
      await formats.close();
      await store.close();
    },
  };
}
