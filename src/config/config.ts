import { resolve } from 'node:path';
import { ConfigError, type Env, parseEnv } from './env.js';

export interface Config {
  nodeEnv: 'development' | 'production' | 'test';
  production: boolean;
  port: number;
  host: string;
  /** Public origin, no trailing slash. Defines `did:web` (spec 4.6). */
  issuerOrigin: string;
  database: { kind: 'sqlite'; path: string };
  keysDir: string;
  schemasDir: string;
  /** Unset in dev: generated and kept in the keys folder. */
  partnerId: string | undefined;
  /** Unset in dev: the bundled emulator is mounted and used. */
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
  trustProxy: boolean | number | string;
  /** How long `/issue-vc` waits for the upload before answering 502 and retrying in background. */
  uploadTimeoutMs: number;
}

/** Kept off `Config` so that printing the config can never print a secret. */
export interface Secrets {
  apiKey: string | undefined;
  adminApiKey: string | undefined;
}

const MIN_SECRET_LENGTH = 32;

/** DESIGN §7: validates everything, collecting one line per problem, then throws ConfigError. */
export function loadConfig(
  source: NodeJS.ProcessEnv,
  cwd = process.cwd(),
): { config: Config; secrets: Secrets } {
  const env: Env = parseEnv(source);
  const problems: string[] = [];
  const production = env.NODE_ENV === 'production';
  const port = env.PORT ?? 3000;

  const issuerOrigin = checkOrigin(
    env.ISSUER_ORIGIN ?? (production ? undefined : `http://localhost:${port}`),
  );
  function checkOrigin(value: string | undefined): string {
    if (value === undefined) {
      problems.push('ISSUER_ORIGIN: required in production (the public https origin of this issuer)');
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

  const databaseUrl = env.DATABASE_URL ?? 'sqlite:./data/issuer.db';
  let databasePath = '';
  if (databaseUrl.startsWith('sqlite:')) {
    // sqlite:<path>; the URL-style sqlite://<relative> and sqlite:///<absolute> mean the same.
    const rest = databaseUrl.slice('sqlite:'.length);
    const p = rest.startsWith('//') ? rest.slice(2) : rest;
    if (!p) problems.push('DATABASE_URL: sqlite: needs a path, e.g. sqlite:./data/issuer.db');
    databasePath = p === ':memory:' ? p : resolve(cwd, p);
  } else if (/^postgres(ql)?:/.test(databaseUrl)) {
    problems.push('DATABASE_URL: postgres is not supported yet; use sqlite:<path>');
  } else {
    problems.push('DATABASE_URL: must be sqlite:<path>');
  }

  // Strength rules bind production; a development or test setup may use any non-empty key.
  for (const name of ['API_KEY', 'ADMIN_API_KEY'] as const) {
    const value = env[name];
    if (value === undefined) {
      if (production) problems.push(`${name}: required in production`);
    } else if (production && value.length < MIN_SECRET_LENGTH) {
      problems.push(`${name}: must be at least ${MIN_SECRET_LENGTH} characters in production`);
    }
  }
  if (production && env.API_KEY !== undefined && env.API_KEY === env.ADMIN_API_KEY) {
    problems.push('ADMIN_API_KEY: must differ from API_KEY in production');
  }
  if (production && env.PARTNER_ID === undefined) problems.push('PARTNER_ID: required in production');

  let serviceBaseUrl = env.SERVICE_V1_BASE_URL;
  if (serviceBaseUrl === undefined) {
    if (production)
      problems.push('SERVICE_V1_BASE_URL: required in production (the bundled emulator is for development)');
  } else {
    try {
      const url = new URL(serviceBaseUrl);
      if (production && url.protocol !== 'https:')
        problems.push('SERVICE_V1_BASE_URL: must be https in production');
      if (url.protocol !== 'https:' && url.protocol !== 'http:')
        problems.push('SERVICE_V1_BASE_URL: must be http or https');
      serviceBaseUrl = serviceBaseUrl.replace(/\/+$/, '');
    } catch {
      problems.push('SERVICE_V1_BASE_URL: not a URL');
    }
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return {
    config: {
      nodeEnv: env.NODE_ENV ?? 'development',
      production,
      port,
      host: env.HOST ?? '127.0.0.1',
      issuerOrigin,
      database: { kind: 'sqlite', path: databasePath },
      keysDir: resolve(cwd, env.KEYS_DIR ?? './keys'),
      schemasDir: resolve(cwd, env.SCHEMAS_DIR ?? './schemas'),
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
      trustProxy: parseTrustProxy(env.TRUST_PROXY),
      uploadTimeoutMs: env.UPLOAD_TIMEOUT_MS ?? 10_000,
    },
    secrets: { apiKey: env.API_KEY, adminApiKey: env.ADMIN_API_KEY },
  };
}

// Express's `trust proxy`: needed behind a reverse proxy so rate limits key on the client IP.
function parseTrustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  return value;
}
