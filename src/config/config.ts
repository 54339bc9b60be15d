import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import type { SdJwtIssuerMode } from '../issuer-urls.js';
import { DEFAULT_DATABASE_URL, redactDatabaseUrl } from '../store/database-url.js';
import { type DatabaseTimeouts, DEFAULT_DATABASE_TIMEOUTS } from '../store/engine.js';
import type { DatabaseTarget } from '../store/engines.js';
import { engineName, keepsKeysInDatabase, parseDatabaseUrl } from '../store/engines.js';
import { readConsoleOrigins } from './console-origins.js';
import { ConfigError, type Env, parseEnv } from './env.js';
import { checkPkcs11, type KeyBackendConfig } from './key-backend-config.js';
import {
  type KeyEncryption,
  parseKeyEncryptionKey,
  resolveKeyEncryption,
  weakKeyEncryptionKey,
} from './key-encryption-key.js';
import { type NamedKey, parseNamedKeys } from './named-keys.js';
import { type Oid4vciConfig, readOid4vciConfig } from './oid4vci-config.js';
import { type Oid4vciFlowConfig, readOid4vciFlow } from './oid4vci-login-config.js';
import { secretProblem } from './secret-strength.js';
import { readTenancy } from './tenancy-config.js';
import type { TrustProxy } from './trust-proxy.js';

export interface Config {
  nodeEnv: 'development' | 'production' | 'test';
  production: boolean;
  port: number;
  host: string;
  /** TENANCY: one issuer, or the tenants of the registry (docs/several-issuers.md). */
  tenancy: 'single' | 'multi';
  /** ADMIN_PORT/ADMIN_HOST: when set, admin routes answer only on this listener. */
  admin: { port: number; host: string } | undefined;
  /** ALLOW_INSECURE_UPSTREAM=1: production accepts an http SERVICE_V1_BASE_URL (staging sidecar). */
  insecureUpstream: boolean;
  /** ISSUER_ORIGIN: public origin, no trailing slash; read through `IssuerIdentity` (src/identity). */
  publicOrigin: string;
  /** The URL itself is in `Secrets` (it may carry a password); `url` here is redacted. */
  database:
    | { kind: 'sqlite'; path: string }
    | { kind: 'postgres'; url: string; poolMax: number; timeouts: DatabaseTimeouts };
  keysDir: string;
  /**
   * KEY_BACKEND: where the ES256 private keys live and sign; the PIN is in `Secrets`
   * (docs/security.md "Keys in a hardware security module").
   */
  keyBackend: KeyBackendConfig;
  schemasDir: string;
  /** SCHEMAS_WATCH: reload the schemas when SCHEMAS_DIR changes (development's default). */
  schemasWatch: boolean;
  /** Unset in dev: generated and kept in the keys folder. */
  partnerId: string | undefined;
  /** Unset in dev: `npm start` runs the bundled emulator beside the server and passes its URL in. */
  serviceBaseUrl: string | undefined;
  statusList: { partitionSize: number; ttlSeconds: number; bits: 1 | 2 };
  partnerInfoService: string;
  /** `methodByte`/`networkFlag` only for a DID method or network js-iden3-core does not know. */
  iden3: {
    method: string;
    blockchain: string;
    network: string;
    methodByte: number | undefined;
    networkFlag: number | undefined;
    /** Worker threads merklizing BJJ credentials; undefined = one per core (at most 8). */
    merklizeWorkers: number | undefined;
  };
  rateLimits: { holder: number; admin: number; public: number };
  /** Prefix of the rate-limit keys in Redis: deployments sharing one Redis each use their own. */
  rateLimitRedisPrefix: string;
  /** RATE_LIMIT_REDIS_TIMEOUT_MS: how long a count may wait on Redis before failing open. */
  rateLimitRedisTimeoutMs: number;
  /** Express `trust proxy` (`src/config/trust-proxy.ts`); never `true` in production. */
  trustProxy: TrustProxy;
  /** How long `/issue-vc` waits for the upload before answering 502 and retrying in background. */
  uploadTimeoutMs: number;
  /** How verifiers find the credential-signing key: `iss` and the JOSE header. */
  sdJwtIssuer: SdJwtIssuerMode;
  /** Worker processes behind one listener (node:cluster); `auto` resolves to one per core. */
  workers: number;
  log: { level: LogLevel; format: 'json' | 'pretty' };
  /** How long a SIGTERM/SIGINT drain lets in-flight requests finish. */
  shutdownGraceMs: number;
  /** Attempts before an upload becomes `failed` (3 when the hosting service refuses it for good). */
  uploadMaxAttempts: number;
  /** WEBHOOK_MAX_ATTEMPTS: attempts of one webhook delivery before it is `failed`. */
  webhookMaxAttempts: number;
  /** WEBHOOK_RETRY_BASE_MS: the first wait before a failed webhook delivery is tried again. */
  webhookRetryBaseMs: number;
  /** WEBHOOK_LEASE_MS: how long an instance owns a webhook delivery it is attempting. */
  webhookLeaseMs: number;
  /** WEBHOOK_RETENTION_DAYS: days delivered webhook deliveries are kept (0: forever). */
  webhookRetentionDays: number;
  /** WEBHOOK_ALLOW_PRIVATE=1: production webhooks may reach private addresses. */
  webhookAllowPrivate: boolean;
  /** UPLOAD_LEASE_MS: how long an instance owns an upload it has taken. */
  uploadLeaseMs: number;
  /** OUTBOX_SWEEP_MS: how often the outbox looks for due uploads in the shared store. */
  outboxSweepMs: number;
  /** STATUS_JOB_LEASE_MS: how long an instance owns a bulk status change job between chunks. */
  statusJobLeaseMs: number;
  /** RENEWAL_SWEEP_INTERVAL_MS: how often the renewal sweep runs. */
  renewalSweepMs: number;
  /** RENEWAL_SWEEP_LEASE_MS: how long a sweep holds the lock `renewal-sweep`. */
  renewalSweepLeaseMs: number;
  /** RENEWAL_FINISH_GRACE_DAYS: days after expiry the sweep still finishes a renewal cut short. */
  renewalFinishGraceDays: number;
  /** One deadline for a whole `/admin/issue-vc` request: initialize-user retries and the upload wait. */
  adminIssueDeadlineMs: number;
  /** OID4VCI and its settings: the OpenID4VCI channel (on by default outside production). */
  oid4vci: Oid4vciConfig & Oid4vciFlowConfig;
  /** CONSOLE: the admin console at `/console` (on by default outside production). */
  console: {
    enabled: boolean;
    idleSeconds: number;
    absoluteSeconds: number;
    /** CONSOLE_ORIGIN, or its default: the origins a console request's `Origin` must be one of. */
    origins: string[];
  };
}

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export type { SdJwtIssuerMode };

/** Kept off `Config` so that printing the config can never print a secret. */
export interface Secrets {
  apiKey: string | undefined;
  adminApiKey: string | undefined;
  /** ADMIN_API_KEYS: named admin keys; the name is the actor in the audit log. */
  adminApiKeys: NamedKey[];
  /** The keys to the routes are hex SHA-256 digests (a tenant's, from the registry). */
  keysHashed?: boolean;
  /** OPERATOR_API_KEY (TENANCY=multi): the operator routes' key. */
  operatorApiKey?: string | undefined;
  /** Bearer token `GET /metrics` requires; unset = open. */
  metricsToken?: string | undefined;
  /** DATABASE_URL as given (default sqlite:./data/issuer.db). */
  databaseUrl: string;
  /** What DATABASE_URL names, with its password: what `openStore` opens (src/store/engines.ts). */
  database: DatabaseTarget;
  /** KEY_ENCRYPTION_KEY (32 bytes) as given: seals the private keys kept in the database. */
  keyEncryptionKey: Buffer | undefined;
  /** The sealing keys resolved once: the one to use (the development key when unset) and the previous one. */
  keyEncryption: KeyEncryption;
  /** REDIS_URL as given: shared rate-limit counters. */
  redisUrl: string | undefined;
  /** PKCS11_PIN, or the first line of PKCS11_PIN_FILE (KEY_BACKEND=pkcs11). */
  pkcs11Pin: string | undefined;
  /** OID4VCI_LOGIN_CLIENT_SECRET: the issuer's client secret at the login provider. */
  oid4vciLoginClientSecret?: string | undefined;
  /** A tenant's own OpenID4VCI keys (PEM), opened from the registry: used over the files'. */
  oid4vciKeys?: { requestEncryption?: string | undefined; loginClient?: string | undefined } | undefined;
}

export type { NamedKey };

/** The actor name of the single ADMIN_API_KEY. */
export const DEFAULT_ADMIN_ACTOR = 'admin';

/** Validates everything, collecting one line per problem, then throws ConfigError. */
export function loadConfig(
  source: NodeJS.ProcessEnv,
  cwd = process.cwd(),
): { config: Config; secrets: Secrets } {
  const parsed = parseEnv(source);
  const env: Env = parsed.env;
  const problems: string[] = [...parsed.problems];
  // A variable already reported as malformed is not reported again as missing.
  const production = env.NODE_ENV === 'production';
  const tenancy = readTenancy(env, production, problems);
  const missing = (name: keyof Env, line: string) => {
    if (!parsed.invalid.has(name) && tenancy.requires(name)) problems.push(line);
  };
  const port = env.PORT ?? 3000;

  const publicOrigin = checkOrigin(
    env.ISSUER_ORIGIN ?? (production ? undefined : `http://localhost:${port}`),
  );
  function checkOrigin(value: string | undefined): string {
    if (value === undefined) {
      missing(
        'ISSUER_ORIGIN',
        'ISSUER_ORIGIN: required in production (the public https origin of this issuer)',
      );
      return '';
    }
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      problems.push('ISSUER_ORIGIN: not a URL');
      return value;
    }
    if (url.origin !== value)
      problems.push(
        'ISSUER_ORIGIN: must be an origin only (scheme://host[:port], no path, no trailing slash)',
      );
    if (production && url.protocol !== 'https:') problems.push('ISSUER_ORIGIN: must be https in production');
    if (!production && url.protocol !== 'https:' && url.protocol !== 'http:')
      problems.push('ISSUER_ORIGIN: must be http or https');
    return value;
  }

  const consoleOrigins = readConsoleOrigins(env, { publicOrigin, port, production }, problems);
  const oid4vci = readOid4vciConfig(env, { production, cwd }, problems);

  const databaseUrl = env.DATABASE_URL ?? DEFAULT_DATABASE_URL;
  const target = parseDatabaseUrl(databaseUrl, cwd);
  if (typeof target === 'string') problems.push(`DATABASE_URL: ${target}`);
  const database: Config['database'] =
    typeof target === 'string' || target.kind === 'sqlite'
      ? { kind: 'sqlite', path: typeof target === 'string' ? '' : target.path }
      : {
          kind: 'postgres',
          url: redactDatabaseUrl(target.url),
          poolMax: env.DATABASE_POOL_MAX ?? 10,
          timeouts: {
            connectMs: env.DATABASE_CONNECT_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.connectMs,
            queryMs: env.DATABASE_QUERY_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.queryMs,
            acquireMs: env.DATABASE_ACQUIRE_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.acquireMs,
          },
        };

  let keyEncryptionKey: Buffer | undefined;
  if (env.KEY_ENCRYPTION_KEY !== undefined) {
    const parsed = parseKeyEncryptionKey(env.KEY_ENCRYPTION_KEY);
    if (typeof parsed === 'string') problems.push(`KEY_ENCRYPTION_KEY: ${parsed}`);
    else keyEncryptionKey = parsed;
    const weak = typeof parsed === 'string' ? undefined : weakKeyEncryptionKey(parsed);
    if (production && weak)
      problems.push(`KEY_ENCRYPTION_KEY: ${weak}; production needs a random one (openssl rand -hex 32)`);
  } else if (production && typeof target !== 'string' && keepsKeysInDatabase(target)) {
    problems.push(
      `KEY_ENCRYPTION_KEY: required in production with ${engineName(target)} (it seals the signing keys kept in the database)`,
    );
  }
  const pkcs11 = checkPkcs11(env, source, cwd, problems);
  const oid4vciFlow = readOid4vciFlow(env, { production, cwd }, problems);

  if (env.REDIS_URL !== undefined && !/^rediss?:\/\/[^\s]+$/.test(env.REDIS_URL))
    problems.push('REDIS_URL: must be redis://[user:password@]host[:port][/db] or rediss://…');

  // An attempt that outlived its lease could be taken again by another instance meanwhile.
  if (env.UPLOAD_LEASE_MS !== undefined && env.UPLOAD_LEASE_MS <= (env.UPLOAD_TIMEOUT_MS ?? 10_000))
    problems.push('UPLOAD_LEASE_MS: must be longer than UPLOAD_TIMEOUT_MS (one upload attempt)');
  // A sweep takes credentials until half its lease has passed; a renewal taken just before must end
  // before the lease does, or another instance takes the sweep over and renews it too.
  const adminIssueDeadlineMs = env.ADMIN_ISSUE_DEADLINE_MS ?? 15_000;
  if (
    env.RENEWAL_SWEEP_LEASE_MS !== undefined &&
    !parsed.invalid.has('ADMIN_ISSUE_DEADLINE_MS') &&
    env.RENEWAL_SWEEP_LEASE_MS / 2 <= adminIssueDeadlineMs
  )
    problems.push(
      `RENEWAL_SWEEP_LEASE_MS: half of it (${env.RENEWAL_SWEEP_LEASE_MS / 2} ms) must be longer than ADMIN_ISSUE_DEADLINE_MS (${adminIssueDeadlineMs} ms), which bounds one renewal`,
    );

  // Strength rules bind production; a development or test setup may use any non-empty key.
  const adminApiKeys = parseNamedKeys(env.ADMIN_API_KEYS, problems);
  if (env.ADMIN_API_KEY !== undefined && adminApiKeys.some((k) => k.name === DEFAULT_ADMIN_ACTOR))
    problems.push(`ADMIN_API_KEYS: the name ${DEFAULT_ADMIN_ACTOR} is ADMIN_API_KEY's; choose another`);
  const strength = (name: string, value: string) => {
    const problem = production ? secretProblem(value) : undefined;
    if (problem) problems.push(`${name}: ${problem} in production`);
  };
  if (env.API_KEY === undefined) {
    if (production) missing('API_KEY', 'API_KEY: required in production');
  } else strength('API_KEY', env.API_KEY);
  if (env.ADMIN_API_KEY === undefined) {
    if (production && adminApiKeys.length === 0 && !parsed.invalid.has('ADMIN_API_KEYS'))
      missing('ADMIN_API_KEY', 'ADMIN_API_KEY: required in production (or named keys in ADMIN_API_KEYS)');
  } else strength('ADMIN_API_KEY', env.ADMIN_API_KEY);
  for (const k of adminApiKeys) strength(`ADMIN_API_KEYS (${k.name})`, k.key);
  if (env.METRICS_TOKEN !== undefined) strength('METRICS_TOKEN', env.METRICS_TOKEN);
  if (production && env.API_KEY !== undefined) {
    if (env.API_KEY === env.ADMIN_API_KEY)
      problems.push('ADMIN_API_KEY: must differ from API_KEY in production');
    for (const k of adminApiKeys)
      if (k.key === env.API_KEY)
        problems.push(`ADMIN_API_KEYS (${k.name}): must differ from API_KEY in production`);
  }
  // With `true`, any client's rotating X-Forwarded-For escapes every rate limit.
  if (production && env.TRUST_PROXY === true)
    problems.push(
      'TRUST_PROXY: true is refused in production (any client could pick its address); give the hop count or the proxy addresses/subnets',
    );
  if (production && env.PARTNER_ID === undefined) missing('PARTNER_ID', 'PARTNER_ID: required in production');

  const insecureUpstream = env.ALLOW_INSECURE_UPSTREAM === '1';
  let serviceBaseUrl = env.SERVICE_V1_BASE_URL;
  if (serviceBaseUrl === undefined) {
    if (production)
      missing(
        'SERVICE_V1_BASE_URL',
        'SERVICE_V1_BASE_URL: required in production (the bundled emulator is for development)',
      );
  } else {
    try {
      const url = new URL(serviceBaseUrl);
      if (production && url.protocol !== 'https:' && !insecureUpstream)
        problems.push(
          'SERVICE_V1_BASE_URL: must be https in production (ALLOW_INSECURE_UPSTREAM=1 allows http for a staging sidecar)',
        );
      if (url.protocol !== 'https:' && url.protocol !== 'http:')
        problems.push('SERVICE_V1_BASE_URL: must be http or https');
      serviceBaseUrl = serviceBaseUrl.replace(/\/+$/, '');
    } catch {
      problems.push('SERVICE_V1_BASE_URL: not a URL');
    }
  }

  if (problems.length > 0 || typeof target === 'string') throw new ConfigError(problems);
  return {
    config: {
      nodeEnv: env.NODE_ENV ?? 'development',
      production,
      tenancy: tenancy.mode,
      port,
      host: env.HOST ?? '127.0.0.1',
      admin:
        env.ADMIN_PORT === undefined
          ? undefined
          : { port: env.ADMIN_PORT, host: env.ADMIN_HOST ?? '127.0.0.1' },
      insecureUpstream,
      publicOrigin,
      database,
      keysDir: resolve(cwd, env.KEYS_DIR ?? './keys'),
      keyBackend: pkcs11.backend,
      schemasDir: resolve(cwd, env.SCHEMAS_DIR ?? './schemas'),
      schemasWatch: (env.SCHEMAS_WATCH ?? (production ? 'off' : 'on')) === 'on',
      partnerId: env.PARTNER_ID,
      serviceBaseUrl,
      statusList: {
        partitionSize: env.STATUS_LIST_PARTITION_SIZE ?? 131072,
        ttlSeconds: env.STATUS_LIST_TTL_SECONDS ?? 300,
        bits: (env.STATUS_LIST_BITS ?? 1) as 1 | 2,
      },
      partnerInfoService: env.PARTNER_INFO_SERVICE ?? 'svc',
      iden3: {
        method: env.IDEN3_METHOD ?? 'iden3',
        blockchain: env.IDEN3_BLOCKCHAIN ?? 'privado',
        network: env.IDEN3_NETWORK ?? 'test',
        methodByte: env.IDEN3_METHOD_BYTE,
        networkFlag: env.IDEN3_NETWORK_FLAG,
        merklizeWorkers: env.IDEN3_MERKLIZE_WORKERS,
      },
      rateLimits: {
        holder: env.RATE_LIMIT_HOLDER_PER_MIN ?? 10_000,
        admin: env.RATE_LIMIT_ADMIN_PER_MIN ?? 1200,
        public: env.RATE_LIMIT_PUBLIC_PER_MIN ?? 6000,
      },
      rateLimitRedisPrefix: env.RATE_LIMIT_REDIS_PREFIX ?? 'rl:',
      rateLimitRedisTimeoutMs: env.RATE_LIMIT_REDIS_TIMEOUT_MS ?? 500,
      trustProxy: env.TRUST_PROXY ?? false,
      uploadTimeoutMs: env.UPLOAD_TIMEOUT_MS ?? 10_000,
      sdJwtIssuer: env.SD_JWT_ISSUER ?? 'url',
      workers: env.WORKERS === 'auto' ? availableParallelism() : (env.WORKERS ?? 1),
      log: { level: env.LOG_LEVEL ?? 'info', format: env.LOG_FORMAT ?? 'json' },
      shutdownGraceMs: env.SHUTDOWN_GRACE_MS ?? 10_000,
      uploadMaxAttempts: env.UPLOAD_MAX_ATTEMPTS ?? 10,
      uploadLeaseMs: env.UPLOAD_LEASE_MS ?? Math.max(60_000, (env.UPLOAD_TIMEOUT_MS ?? 10_000) + 1000),
      outboxSweepMs: env.OUTBOX_SWEEP_MS ?? 5000,
      statusJobLeaseMs: env.STATUS_JOB_LEASE_MS ?? 30_000,
      renewalSweepMs: env.RENEWAL_SWEEP_INTERVAL_MS ?? 300_000,
      renewalSweepLeaseMs: env.RENEWAL_SWEEP_LEASE_MS ?? Math.max(300_000, 2 * adminIssueDeadlineMs + 1000),
      renewalFinishGraceDays: env.RENEWAL_FINISH_GRACE_DAYS ?? 30,
      webhookMaxAttempts: env.WEBHOOK_MAX_ATTEMPTS ?? 15,
      webhookRetryBaseMs: env.WEBHOOK_RETRY_BASE_MS ?? 30_000,
      webhookLeaseMs: env.WEBHOOK_LEASE_MS ?? 60_000,
      webhookRetentionDays: env.WEBHOOK_RETENTION_DAYS ?? 30,
      webhookAllowPrivate: env.WEBHOOK_ALLOW_PRIVATE === '1',
      adminIssueDeadlineMs,
      oid4vci: { ...oid4vci, ...oid4vciFlow.flow },
      console: {
        enabled: env.CONSOLE === undefined ? !production : env.CONSOLE === 'on',
        idleSeconds: env.CONSOLE_SESSION_IDLE_SECONDS ?? 1800,
        absoluteSeconds: env.CONSOLE_SESSION_ABSOLUTE_SECONDS ?? 28_800,
        origins: consoleOrigins,
      },
    },
    secrets: {
      apiKey: env.API_KEY,
      adminApiKey: env.ADMIN_API_KEY,
      adminApiKeys,
      metricsToken: env.METRICS_TOKEN,
      operatorApiKey: tenancy.operatorApiKey,
      databaseUrl,
      database: target,
      keyEncryptionKey,
      keyEncryption: resolveKeyEncryption(
        keyEncryptionKey,
        // A tool variable (src/config/tool-env.ts): never refuses the start, whatever its value.
        source.KEY_ENCRYPTION_KEY_PREVIOUS,
      ),
      redisUrl: env.REDIS_URL,
      pkcs11Pin: pkcs11.pin,
      oid4vciLoginClientSecret: oid4vciFlow.clientSecret,
    },
  };
}
