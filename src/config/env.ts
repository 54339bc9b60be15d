import { z } from 'zod';

/**
 * The only module that reads `process.env` (DESIGN §7). It parses; `loadConfig` applies the dev
 * defaults and the production rules. Secrets are returned apart from the config object so that
 * logging the config can never print them.
 */
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
  KEYS_DIR: z.string().min(1).optional(),
  SCHEMAS_DIR: z.string().min(1).optional(),
  API_KEY: z.string().optional(),
  ADMIN_API_KEY: z.string().optional(),
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
  TRUST_PROXY: z.string().optional(),
  UPLOAD_TIMEOUT_MS: int('UPLOAD_TIMEOUT_MS', 100, 120_000).optional(),
});
export type Env = z.infer<typeof EnvSchema>;

/** Parses the environment; throws ConfigError with one line per problem. */
export function parseEnv(source: NodeJS.ProcessEnv): Env {
  // Empty strings mean "unset", as in most .env tooling.
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = EnvSchema.safeParse(cleaned);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  return parsed.data;
}

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}
