import { z } from 'zod';
import { int } from './env-number.js';

/**
 * The variables of where the server runs: its listeners, its database, its keys and secrets, and
 * the hosting service it talks to. Part of `EnvSchema` (`env.ts`), in the order the configuration
 * reference lists them.
 */
export const deploymentVariables = {
  NODE_ENV: z.enum(['development', 'production', 'test']).optional().meta({
    description:
      '`production` refuses every development default: missing secrets, development keys and secrets, the emulator, `http:` origins (one start-up line per problem). `test` is what the test suites use.',
    default: '`development`',
  }),
  PORT: int('PORT', 0, 65535)
    .optional()
    .meta({ description: 'Port of the main listener (`0`: a free port).', default: '`3000`' }),
  HOST: z
    .string()
    .min(1)
    .optional()
    .meta({ description: 'Address of the main listener.', default: '`127.0.0.1`' }),
  ISSUER_ORIGIN: z.string().optional().meta({
    description:
      'The public origin, no trailing slash. It is the SD-JWT issuer identity (`did:web:<host>`, `iss`, status list URLs): changing it changes the issuer.',
    default: '`http://localhost:$PORT`',
    production: 'required, https',
  }),
  TENANCY: z.enum(['single', 'multi'], 'TENANCY must be single or multi').optional().meta({
    description:
      '`multi`: several issuers (tenants) in one deployment, each with its own origin, keys, schemas, admins and data namespace, routed by `Host`; the operator adds them with `npm run admin -- tenants add` ([several-issuers.md](several-issuers.md)). `single`: this process is one issuer, as configured by the variables here.',
    default: '`single`',
  }),
  OPERATOR_API_KEY: z.string().optional().meta({
    description:
      '`TENANCY=multi`: `x-operator-api-key` of the operator routes (`/operator/tenants`) and of `npm run admin -- tenants`; it opens no tenant route. Secret.',
    default: 'unset',
    production: 'required with `TENANCY=multi`; the secret rule',
  }),
  DATABASE_URL: z.string().optional().meta({
    description:
      '`sqlite:<path>`, or `postgres://user[:password]@host[:port]/db` (also `postgresql://`) for the PostgreSQL store shared by several instances ([several-instances.md](several-instances.md)). Treated as a secret: shown with its password as `***`.',
    default: '`sqlite:./data/issuer.db`',
    production: 'a database no development or test start created',
  }),
  DATABASE_POOL_MAX: int('DATABASE_POOL_MAX', 1, 1000).optional().meta({
    description: 'PostgreSQL connections per instance.',
    default: '`10`',
  }),
  DATABASE_CONNECT_TIMEOUT_MS: int('DATABASE_CONNECT_TIMEOUT_MS', 100, 600_000).optional().meta({
    description:
      'PostgreSQL: how long opening one connection (TCP, TLS, authentication) may take before it is given up ([operations.md](operations.md#database-unreachable)).',
    default: '`5000`',
  }),
  DATABASE_QUERY_TIMEOUT_MS: int('DATABASE_QUERY_TIMEOUT_MS', 100, 600_000).optional().meta({
    description:
      'PostgreSQL: how long one statement may run. The server cancels it then (`statement_timeout`); a server that does not answer at all is given up one second later and that connection destroyed. Migrations and `db copy` run without it.',
    default: '`10000`',
  }),
  DATABASE_ACQUIRE_TIMEOUT_MS: int('DATABASE_ACQUIRE_TIMEOUT_MS', 100, 600_000).optional().meta({
    description:
      'PostgreSQL: how long a request waits for a pooled connection (a free one, or a new one being opened) before it is answered 503 `UNAVAILABLE`.',
    default: '`10000`',
  }),
  KEYS_DIR: z.string().min(1).optional().meta({
    description:
      'Folder of the key files (signing, partner JWT, Iden3); on PostgreSQL, imported into the database on the first start.',
    default: '`./keys`',
  }),
  SCHEMAS_DIR: z.string().min(1).optional().meta({
    description:
      'Folder of the schema files, one `*.json` per credential type ([schemas-and-claims.md](schemas-and-claims.md)).',
    default: '`./schemas`',
  }),
  SCHEMAS_WATCH: z.enum(['on', 'off'], 'SCHEMAS_WATCH must be on or off').optional().meta({
    description:
      '`on`: the server looks at `SCHEMAS_DIR` every second and reloads the schemas when a file is added, changed or removed, and an admin request first reloads a folder that changed since the set it serves was read ([schemas-and-claims.md](schemas-and-claims.md#reloading-schemas)); `off`: only a restart, `SIGHUP` or `POST /admin/schemas/reload` reads it again.',
    default: '`on` in development, `off` in production',
  }),
  API_KEY: z.string().optional().meta({
    description: 'What the hosting service sends as `x-api-key` on the holder-facing routes. Secret.',
    default: 'generated once into `keys/dev-secrets.json` (never logged)',
    production:
      'required; the secret rule of [security.md](security.md#production-secret-rule); different from the admin keys',
  }),
  ADMIN_API_KEY: z.string().optional().meta({
    description:
      '`x-admin-api-key` of the admin routes and the admin CLI; its actor name in the audit log is `admin`. Secret.',
    default: 'generated once into `keys/dev-secrets.json`',
    production: 'required unless `ADMIN_API_KEYS` is set; the secret rule',
  }),
  ADMIN_API_KEYS: z.string().optional().meta({
    description:
      'More admin keys, `name:key,…` (names of letters, digits, `-`, `_`); the name is the actor in the audit log. Every key is compared, in constant time. Secret.',
    default: 'unset',
    production: 'each key follows the secret rule',
  }),
  ADMIN_PORT: int('ADMIN_PORT', 0, 65535).optional().meta({
    description:
      'A separate listener for the admin routes (and `GET /metrics`): they then answer only there, and 404 on the main listener (`LISTENER_OF` in `src/app.ts`).',
    default: 'unset: the main listener',
  }),
  ADMIN_HOST: z
    .string()
    .min(1)
    .optional()
    .meta({ description: 'Address of the `ADMIN_PORT` listener.', default: '`127.0.0.1`' }),
  ALLOW_INSECURE_UPSTREAM: z
    .enum(['0', '1'], 'ALLOW_INSECURE_UPSTREAM must be 1 (or unset)')
    .optional()
    .meta({
      description:
        '`1` lets production use an `http:` `SERVICE_V1_BASE_URL` (a staging sidecar); a warning is printed at every start.',
      default: 'unset',
    }),
  KEY_ENCRYPTION_KEY: z.string().optional().meta({
    description:
      '32 bytes (64 hex digits or base64; `openssl rand -hex 32`) sealing the signing, partner and Iden3 keys kept in a PostgreSQL database; unused on SQLite. Secret ([security.md](security.md#keys-shared-by-several-instances)).',
    default: 'a fixed, public development key (PostgreSQL only)',
    production: 'required on PostgreSQL',
  }),
  KEY_BACKEND: z.enum(['software', 'pkcs11'], 'KEY_BACKEND must be software or pkcs11').optional().meta({
    description:
      'Where the ES256 private keys (credential signing, status lists, partner JWT) live and sign. `software`: in the key files on SQLite, in rows sealed with `KEY_ENCRYPTION_KEY` on PostgreSQL. `pkcs11`: generated and used inside a PKCS#11 token (an HSM), never readable by this process ([security.md](security.md#keys-in-a-hardware-security-module)).',
    default: '`software`',
  }),
  PKCS11_MODULE: z.string().min(1).optional().meta({
    description:
      'KEY_BACKEND=pkcs11: path of the PKCS#11 library (SoftHSM2: `/usr/lib/softhsm/libsofthsm2.so`).',
    default: 'unset',
    production: 'required with KEY_BACKEND=pkcs11',
  }),
  PKCS11_TOKEN_LABEL: z.string().min(1).max(32).optional().meta({
    description: 'KEY_BACKEND=pkcs11: the label of the token holding the keys (or `PKCS11_SLOT`).',
    default: 'unset',
  }),
  PKCS11_SLOT: int('PKCS11_SLOT', 0, 2 ** 32 - 1)
    .optional()
    .meta({
      description: 'KEY_BACKEND=pkcs11: the slot id of the token, instead of `PKCS11_TOKEN_LABEL`.',
      default: 'unset',
    }),
  PKCS11_PIN: z.string().min(1).optional().meta({
    description:
      'KEY_BACKEND=pkcs11: the user PIN of the token (or `PKCS11_PIN_FILE`). Secret: never logged, never shown by doctor.',
    default: 'unset',
  }),
  PKCS11_PIN_FILE: z.string().min(1).optional().meta({
    description:
      'KEY_BACKEND=pkcs11: a file holding the user PIN (one line), instead of `PKCS11_PIN` (for secret mounts). Read again at every login, so a PIN changed on the token is followed by writing the file, without a restart.',
    default: 'unset',
  }),
  PKCS11_MAX_SESSIONS: int('PKCS11_MAX_SESSIONS', 1, 10_000).optional().meta({
    description:
      'KEY_BACKEND=pkcs11: the most sessions the process opens on the token. A session is opened only when every open one is signing, so this bounds the signatures in flight at once; with `TENANCY=multi` every tenant of the process shares these sessions and one login ([several-issuers.md](several-issuers.md#where-the-data-lives)).',
    default: '`32`',
  }),
  REDIS_URL: z.string().optional().meta({
    description:
      "`redis://…` or `rediss://…`: every route group's rate-limit counters in Redis, shared by all instances; when Redis is unreachable requests pass uncounted.",
    default: 'unset: in memory, per instance',
  }),
  PARTNER_ID: z.uuid('PARTNER_ID must be a UUID').optional().meta({
    description: "The partner UUID the hosting service knows this issuer by (the partner JWT's `partnerId`).",
    default: 'generated into `keys/dev-secrets.json`',
    production: 'required',
  }),
  SERVICE_V1_BASE_URL: z.string().optional().meta({
    description: "The hosting service's issuance API, ending in `/v1` (`initialize-user`, `dstorage/vcs`).",
    default:
      'the bundled emulator, started by `npm start` on a free loopback port and written to `keys/dev-emulator.json` for `npm run demo`',
    production: 'required, https (unless `ALLOW_INSECURE_UPSTREAM=1`)',
  }),
};
