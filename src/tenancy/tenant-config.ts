import { hkdfSync } from 'node:crypto';
import { join } from 'node:path';
import type { Config, Secrets } from '../config/config.js';
import type { KeyEncryption } from '../config/key-encryption-key.js';
import type { AppContext, ContextOverrides } from '../context.js';
import { developmentRequestKey } from '../development/development-files.js';
import type { Logger } from '../model.js';
import { MAIN_NAMESPACE } from './namespaces.js';
import type { TenantRecord } from './tenant.js';
import { openSecrets } from './tenant-secrets.js';

/**
 * A tenant's sealing key: derived from KEY_ENCRYPTION_KEY and the tenant's id (RFC 5869 HKDF), so
 * that a row of one tenant's keys copied into another's namespace does not open. The adopted
 * deployment's own namespace keeps KEY_ENCRYPTION_KEY itself, which sealed its keys.
 */
export function tenantKeyEncryption(base: KeyEncryption, tenant: TenantRecord): KeyEncryption {
  if (tenant.namespace === MAIN_NAMESPACE) return base;
  const derive = (key: Buffer) =>
    Buffer.from(hkdfSync('sha256', key, Buffer.from(tenant.id), 'issuer-kit tenant key sealing', 32));
  return {
    current: derive(base.current),
    given: base.given,
    previous: Buffer.isBuffer(base.previous) ? derive(base.previous) : base.previous,
  };
}

/**
 * The configuration one tenant's context is built with (docs/several-issuers.md
 * "What a tenant is"): the deployment's, overlaid with the tenant's origin, identification mode, partner
 * registration, schemas, keys folder, keys to the routes, and its own OpenID4VCI login provider
 * and request encryption key when it has them. Everything else (limits, timings, formats, the
 * rest of OID4VCI) is the deployment's.
 */
export function tenantConfig(
  base: { config: Config; secrets: Secrets; log?: Logger | undefined },
  tenant: TenantRecord,
): { config: Config; secrets: Secrets } {
  const { config, secrets } = base;
  const own = tenant.namespace === MAIN_NAMESPACE;
  const keysDir = own ? config.keysDir : join(config.keysDir, 'tenants', tenant.id);
  const keyEncryption = tenantKeyEncryption(secrets.keyEncryption, tenant);
  const mine = openSecrets(keyEncryption.current, tenant);
  const login = tenant.settings.oid4vciLogin;
  // A development tenant with no request encryption key gets one of its own, as a single
  // development start does (KEYS_DIR/dev-request-encryption.pem, here its keys folder's).
  const requestKeyFile = mine.oid4vciRequestEncryptionKey
    ? `the registry's secrets.oid4vciRequestEncryptionKey of tenant ${tenant.id}`
    : (config.oid4vci.requestEncryption?.keyFile ??
      (config.production || !config.oid4vci.enabled ? undefined : developmentRequestKey(keysDir, base.log)));
  return {
    config: {
      ...config,
      tenancy: 'single',
      publicOrigin: tenant.origin,
      sdJwtIssuer: tenant.settings.sdJwtIssuer ?? config.sdJwtIssuer,
      partnerId: tenant.settings.partnerId,
      serviceBaseUrl: tenant.settings.serviceBaseUrl ?? config.serviceBaseUrl,
      schemasDir: tenant.settings.schemasDir ?? config.schemasDir,
      // One watcher per tenant would poll a thousand folders; a reload is asked for instead.
      schemasWatch: false,
      keysDir,
      keyBackend:
        config.keyBackend.kind === 'pkcs11' && !own
          ? { ...config.keyBackend, labelPrefix: `${tenant.id}: ` }
          : config.keyBackend,
      // Rate limits count per tenant, also in a shared Redis.
      rateLimitRedisPrefix: `${config.rateLimitRedisPrefix}${tenant.id}:`,
      console: { ...config.console, origins: [tenant.origin] },
      oid4vci: {
        ...config.oid4vci,
        login: login ? { ...login, userClaim: login.userClaim ?? 'sub' } : config.oid4vci.login,
        requestEncryption: requestKeyFile
          ? { keyFile: requestKeyFile, required: config.oid4vci.requestEncryption?.required ?? false }
          : undefined,
      },
    },
    secrets: {
      ...secrets,
      apiKey: tenant.apiKeySha256,
      adminApiKey: undefined,
      adminApiKeys: tenant.adminKeys.map((k) => ({ name: k.name, key: k.sha256 })),
      keysHashed: true,
      operatorApiKey: undefined,
      keyEncryption,
      oid4vciLoginClientSecret: login ? mine.oid4vciLoginClientSecret : secrets.oid4vciLoginClientSecret,
      oid4vciKeys: {
        requestEncryption: mine.oid4vciRequestEncryptionKey,
        loginClient: login ? mine.oid4vciLoginClientKey : undefined,
      },
    },
  };
}

/**
 * docs/several-issuers.md "Idle tenants": a tenant's background sweeps, and its webhook worker's
 * look for events another process wrote, back off up to a minute while they find nothing, and its
 * key ring is looked at every ten seconds for a rotation made through another instance, so that a
 * thousand idle tenants do not keep the process and the database busy.
 */
const TENANT_IDLE_MAX_MS = 60_000;
const TENANT_KEYS_POLL_MS = 10_000;

/** How a tenant's context runs its background work: `overrides` (tests) over the idle defaults. */
export function tenantContextOverrides(overrides: ContextOverrides): ContextOverrides {
  const idle = { idleSweepMaxMs: TENANT_IDLE_MAX_MS };
  return {
    keysPollMs: TENANT_KEYS_POLL_MS,
    processMetrics: false,
    ...overrides,
    outbox: { ...idle, ...overrides.outbox },
    webhooks: { ...idle, lookIdleMaxMs: TENANT_IDLE_MAX_MS, ...overrides.webhooks },
    statusJobs: { ...idle, ...overrides.statusJobs },
  };
}

/**
 * A tenant's webhook look backs off while it is idle; what its background work writes (an upload
 * marked or given up, a bulk status job's chunk, a renewal sweep) may hold events, so each brings
 * one look within its interval, as a change served to the tenant does (deployment-app.ts).
 */
export function lookAfterBackgroundWrites(ctx: AppContext): void {
  const soon = () => ctx.webhooks.lookSoon();
  ctx.outbox.on('uploaded', soon).on('failed', soon).on('gave_up', soon);
  ctx.statusJobs.on('changed', soon);
  ctx.renewal.on('swept', soon);
}
