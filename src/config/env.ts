import { z } from 'zod';
import { TrustProxySchema } from './trust-proxy.js';

const int = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `${name} must be a whole number`)
    .transform(Number)
    .pipe(
      z.number().int().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`),
    );

export const EnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).optional(),
  PORT: int('PORT', 0, 65535).optional(),
  HOST: z.string().min(1).optional(),
  ISSUER_ORIGIN: z.string().optional(),
  DATABASE_URL: z.string().optional(),
  DATABASE_POOL_MAX: int('DATABASE_POOL_MAX', 1, 1000).optional(),
  KEYS_DIR: z.string().min(1).optional(),
  SCHEMAS_DIR: z.string().min(1).optional(),
  API_KEY: z.string().optional(),
  ADMIN_API_KEY: z.string().optional(),
  ADMIN_API_KEYS: z.string().optional(),
  ADMIN_PORT: int('ADMIN_PORT', 0, 65535).optional(),
  ADMIN_HOST: z.string().min(1).optional(),
  ALLOW_INSECURE_UPSTREAM: z.enum(['0', '1'], 'ALLOW_INSECURE_UPSTREAM must be 1 (or unset)').optional(),
  KEY_ENCRYPTION_KEY: z.string().optional(),
  KEY_ENCRYPTION_KEY_PREVIOUS: z.string().optional(),
  REDIS_URL: z.string().optional(),
  PARTNER_ID: z.uuid('PARTNER_ID must be a UUID').optional(),
  SERVICE_V1_BASE_URL: z.string().optional(),
  STATUS_LIST_PARTITION_SIZE: int('STATUS_LIST_PARTITION_SIZE', 8, 1 << 26)
    .refine((n) => n % 8 === 0, 'STATUS_LIST_PARTITION_SIZE must be a multiple of 8')
    .optional(),
  STATUS_LIST_TTL_SECONDS: int('STATUS_LIST_TTL_SECONDS', 1, 31_536_000).optional(),
  STATUS_LIST_BITS: z.enum(['1', '2'], 'STATUS_LIST_BITS must be 1 or 2').transform(Number).optional(),
  PARTNER_INFO_SERVICE: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'PARTNER_INFO_SERVICE must be lower-case letters, digits and -')
    .optional(),
  IDEN3_METHOD: z
    .string()
    .regex(/^[a-z0-9]+$/)
    .optional(),
  IDEN3_BLOCKCHAIN: z
    .string()
    .regex(/^[a-z0-9]+$/)
    .optional(),
  IDEN3_NETWORK: z
    .string()
    .regex(/^[a-z0-9]+$/)
    .optional(),
  IDEN3_METHOD_BYTE: int('IDEN3_METHOD_BYTE', 1, 254).optional(),
  IDEN3_NETWORK_FLAG: int('IDEN3_NETWORK_FLAG', 0, 255).optional(),
  IDEN3_MERKLIZE_WORKERS: int('IDEN3_MERKLIZE_WORKERS', 0, 64).optional(),
  RATE_LIMIT_HOLDER_PER_MIN: int('RATE_LIMIT_HOLDER_PER_MIN', 0, 10_000_000).optional(),
  RATE_LIMIT_ADMIN_PER_MIN: int('RATE_LIMIT_ADMIN_PER_MIN', 0, 10_000_000).optional(),
  RATE_LIMIT_PUBLIC_PER_MIN: int('RATE_LIMIT_PUBLIC_PER_MIN', 0, 10_000_000).optional(),
  TRUST_PROXY: TrustProxySchema.optional(),
  UPLOAD_TIMEOUT_MS: int('UPLOAD_TIMEOUT_MS', 100, 120_000).optional(),
  SD_JWT_ISSUER: z.enum(['url', 'did:web', 'x5c'], 'SD_JWT_ISSUER must be url, did:web or x5c').optional(),
  WORKERS: z
    .union([z.literal('auto'), int('WORKERS', 1, 256)], 'WORKERS must be auto or a whole number from 1')
    .optional(),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      error: 'LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent',
    })
    .optional(),
  LOG_FORMAT: z.enum(['json', 'pretty'], { error: 'LOG_FORMAT: must be json or pretty' }).optional(),
  METRICS_TOKEN: z.string().min(1).optional(),
  SHUTDOWN_GRACE_MS: int('SHUTDOWN_GRACE_MS', 0, 600_000).optional(),
  UPLOAD_MAX_ATTEMPTS: int('UPLOAD_MAX_ATTEMPTS', 1, 1000).optional(),
  ADMIN_ISSUE_DEADLINE_MS: int('ADMIN_ISSUE_DEADLINE_MS', 100, 300_000).optional(),
});
export type Env = z.infer<typeof EnvSchema>;

/**
 * Parses the environment variable by variable, so that every bad one is reported in one run: the
 * variables that parse are returned in `env`, one line per bad one in `problems` (which `loadConfig`
 * extends with its own rules). This is the only module that reads `process.env`.
 * Secrets are returned apart from the config object so that logging the config can never print them.
 */
export function parseEnv(source: NodeJS.ProcessEnv): { env: Env; problems: string[]; invalid: Set<string> } {
  const env: Record<string, unknown> = {};
  const problems: string[] = [];
  const invalid = new Set<string>();
  for (const [name, schema] of Object.entries(EnvSchema.shape)) {
    // Empty strings mean "unset", as in most .env tooling.
    const raw = source[name] === '' ? undefined : source[name];
    const parsed = (schema as z.ZodType).safeParse(raw);
    if (parsed.success) {
      if (parsed.data !== undefined) env[name] = parsed.data;
    } else {
      invalid.add(name);
      // The first message of a variable is enough: the later ones restate it for the same value.
      problems.push(`${name}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    }
  }
  return { env: env as Env, problems, invalid };
}

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}
