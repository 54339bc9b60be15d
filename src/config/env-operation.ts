import { z } from 'zod';
import { int } from './env-number.js';
import { TrustProxySchema } from './trust-proxy.js';

/**
 * The variables of how the server operates: status lists, the Iden3 identity, rate limits,
 * logging, uploads, the background sweeps, webhooks, OpenID4VCI and the console. Part of
 * `EnvSchema` (`env.ts`), in the order the configuration reference lists them.
 */
export const operationVariables = {
  STATUS_LIST_PARTITION_SIZE: int('STATUS_LIST_PARTITION_SIZE', 8, 1 << 26)
    .refine((n) => n % 8 === 0, 'STATUS_LIST_PARTITION_SIZE must be a multiple of 8')
    .optional()
    .meta({ description: 'Statuses per token status list partition, a multiple of 8.', default: '`131072`' }),
  STATUS_LIST_TTL_SECONDS: int('STATUS_LIST_TTL_SECONDS', 1, 31_536_000).optional().meta({
    description: 'Status list `ttl` and `Cache-Control: max-age`; a token is re-signed once it is this old.',
    default: '`300`',
  }),
  STATUS_LIST_BITS: z
    .enum(['1', '2'], 'STATUS_LIST_BITS must be 1 or 2')
    .transform(Number)
    .optional()
    .meta({ description: '`1`, or `2` to allow SUSPENDED.', default: '`1`' }),
  PARTNER_INFO_SERVICE: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'PARTNER_INFO_SERVICE must be lower-case letters, digits and -')
    .optional()
    .meta({ description: 'The `<svc>` of `/.well-known/<svc>-partner-info`.', default: '`svc`' }),
  IDEN3_METHOD: z
    .string()
    .regex(/^[a-z0-9]+$/)
    .optional()
    .meta({
      description: 'Method of the Iden3 issuer DID (`did:<method>:<blockchain>:<network>:…`).',
      default: '`iden3`',
    }),
  IDEN3_BLOCKCHAIN: z
    .string()
    .regex(/^[a-z0-9]+$/)
    .optional()
    .meta({ description: 'Blockchain of the Iden3 issuer DID.', default: '`privado`' }),
  IDEN3_NETWORK: z
    .string()
    .regex(/^[a-z0-9]+$/)
    .optional()
    .meta({ description: 'Network of the Iden3 issuer DID.', default: '`test`' }),
  IDEN3_METHOD_BYTE: int('IDEN3_METHOD_BYTE', 1, 254).optional().meta({
    description: 'Only for a DID method js-iden3-core does not know: its byte (registered at start).',
    default: 'unset',
  }),
  IDEN3_NETWORK_FLAG: int('IDEN3_NETWORK_FLAG', 0, 255).optional().meta({
    description: 'Only for a blockchain/network js-iden3-core does not know: its flag (registered at start).',
    default: 'unset',
  }),
  IDEN3_MERKLIZE_WORKERS: int('IDEN3_MERKLIZE_WORKERS', 0, 64).optional().meta({
    description: 'Worker threads merklizing BJJ credentials (`0` = on the main thread).',
    default: 'one per core, at most 8',
  }),
  RATE_LIMIT_HOLDER_PER_MIN: int('RATE_LIMIT_HOLDER_PER_MIN', 0, 10_000_000).optional().meta({
    description: 'Requests per minute per client address on the holder-facing routes; `0` = off.',
    default: '`10000`',
  }),
  RATE_LIMIT_ADMIN_PER_MIN: int('RATE_LIMIT_ADMIN_PER_MIN', 0, 10_000_000).optional().meta({
    description:
      'Requests per minute per client address on the admin routes; `0` = off. CSV batches are paced by it.',
    default: '`1200`',
  }),
  RATE_LIMIT_PUBLIC_PER_MIN: int('RATE_LIMIT_PUBLIC_PER_MIN', 0, 10_000_000).optional().meta({
    description: 'Requests per minute per client address on the public routes; `0` = off.',
    default: '`6000`',
  }),
  RATE_LIMIT_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:._-]{1,64}$/, 'RATE_LIMIT_REDIS_PREFIX must be 1 to 64 letters, digits and : . _ -')
    .optional()
    .meta({
      description:
        'Prefix of the rate-limit keys in Redis (with `REDIS_URL`): deployments sharing one Redis need different ones, or they share counters.',
      default: '`rl:`',
    }),
  RATE_LIMIT_REDIS_TIMEOUT_MS: int('RATE_LIMIT_REDIS_TIMEOUT_MS', 10, 600_000).optional().meta({
    description:
      'Longest a rate-limit count may wait on Redis (with `REDIS_URL`); past it the request goes through uncounted (the limit fails open, logged and counted in metrics).',
    default: '`500`',
  }),
  TRUST_PROXY: TrustProxySchema.optional().meta({
    description:
      'Whose `X-Forwarded-For` to believe, so rate limits key on the client: `false` (or `0`), a hop count (at most 5), or a comma-separated list of addresses, CIDR subnets and `loopback`, `linklocal`, `uniquelocal` ([security.md](security.md#client-addresses-behind-a-proxy)).',
    default: '`false`',
    production: '`true` refused',
  }),
  UPLOAD_TIMEOUT_MS: int('UPLOAD_TIMEOUT_MS', 100, 120_000).optional().meta({
    description:
      'How long `/issue-vc` waits for the upload before answering 502 (the upload keeps being retried).',
    default: '`10000`',
  }),
  SD_JWT_ISSUER: z
    .enum(['url', 'did:web', 'x5c'], 'SD_JWT_ISSUER must be url, did:web or x5c')
    .optional()
    .meta({
      description:
        'How verifiers find the credential-signing key: `url`, `did:web` or `x5c` ([security.md](security.md#issuer-identification-sd_jwt_issuer)).',
      default: '`url`',
    }),
  WORKERS: z
    .union([z.literal('auto'), int('WORKERS', 1, 256)], 'WORKERS must be auto or a whole number from 1')
    .optional()
    .meta({
      description:
        'Worker processes behind one listener (`node:cluster`); `auto` = one per core ([several-instances.md](several-instances.md)).',
      default: '`1`',
    }),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      error: 'LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent',
    })
    .optional()
    .meta({
      description: '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`.',
      default: '`info`',
    }),
  LOG_FORMAT: z.enum(['json', 'pretty'], { error: 'LOG_FORMAT: must be json or pretty' }).optional().meta({
    description: '`json` (one object per line) or `pretty` (pino-pretty, for reading in development).',
    default: '`json`',
  }),
  METRICS_TOKEN: z.string().min(1).optional().meta({
    description: 'When set, `GET /metrics` requires `Authorization: Bearer <token>` (401 otherwise). Secret.',
    default: 'unset: `/metrics` is open',
    production: 'follows the secret rule; unset is a start-up warning',
  }),
  SHUTDOWN_GRACE_MS: int('SHUTDOWN_GRACE_MS', 0, 600_000).optional().meta({
    description:
      "How long a SIGTERM/SIGINT drain lets in-flight requests finish; with `TENANCY=multi`, also how long a removed tenant's requests in flight have before it closes.",
    default: '`10000`',
  }),
  UPLOAD_MAX_ATTEMPTS: int('UPLOAD_MAX_ATTEMPTS', 1, 1000).optional().meta({
    description:
      'Attempts before an upload becomes `failed` (3 when the hosting service refuses it for good: a 4xx other than 408/429).',
    default: '`10`',
  }),
  UPLOAD_LEASE_MS: int('UPLOAD_LEASE_MS', 1000, 3_600_000).optional().meta({
    description:
      'How long an instance owns an upload it has taken; an upload left by an instance that died is taken over by another once this has passed. Must be longer than `UPLOAD_TIMEOUT_MS`.',
    default: '`60000`, or `UPLOAD_TIMEOUT_MS` + 1000 when that is longer',
  }),
  OUTBOX_SWEEP_MS: int('OUTBOX_SWEEP_MS', 100, 600_000).optional().meta({
    description:
      'How often each instance looks in the database for due uploads it was not told about (retries left by other instances, uploads of an instance that died, and on PostgreSQL uploads an instance of a version before its migration 023 queued again): when nothing is due, one indexed query on SQLite, two on PostgreSQL.',
    default: '`5000`',
  }),
  STATUS_JOB_LEASE_MS: int('STATUS_JOB_LEASE_MS', 1000, 3_600_000).optional().meta({
    description:
      'How long an instance owns a bulk status change job between two of its chunks; a job left by an instance that died is taken over by another (whose sweep runs every `OUTBOX_SWEEP_MS`) once this has passed.',
    default: '`30000`',
  }),
  RENEWAL_SWEEP_INTERVAL_MS: int('RENEWAL_SWEEP_INTERVAL_MS', 100, 86_400_000).optional().meta({
    description:
      'How often each instance runs the renewal sweep (docs/operations.md "Renewal"): one instance at a time re-issues the direct credentials of schemas that declare `renewal` once they are inside their window.',
    default: '`300000` (5 minutes)',
  }),
  RENEWAL_SWEEP_LEASE_MS: int('RENEWAL_SWEEP_LEASE_MS', 1000, 3_600_000).optional().meta({
    description:
      'How long a renewal sweep holds the named lock `renewal-sweep` (docs/operations.md "Renewal"); it takes no new credential past half of it, and the sweep of an instance that died is taken over by another once it has passed. Half of it must be longer than `ADMIN_ISSUE_DEADLINE_MS`, which bounds the hosting service\'s part of one renewal (let it outlast the claims source\'s timeout as well).',
    default: '`300000` (5 minutes), or twice `ADMIN_ISSUE_DEADLINE_MS` + 1000 when that is longer',
  }),
  RENEWAL_FINISH_GRACE_DAYS: int('RENEWAL_FINISH_GRACE_DAYS', 0, 3650).optional().meta({
    description:
      'How many days after a credential expired the renewal sweep still finishes a renewal of it that was cut short (its new credential recorded, the outcome not yet): the previous credential revoked when the schema says so, the outcome, the `renew` audit row and the `credential.renewed` event (docs/operations.md "Renewal"). It never starts a renewal of an expired credential. Each sweep also reads, per schema, the credentials with no outcome that expired within this many days (for each, one index probe for a renewing credential); `0`: only credentials not yet expired. Past it, `POST /admin/renew` finishes such a renewal by hand.',
    default: '`30`',
  }),
  WEBHOOK_MAX_ATTEMPTS: int('WEBHOOK_MAX_ATTEMPTS', 1, 100).optional().meta({
    description:
      'Attempts of one webhook delivery (backoff doubling from `WEBHOOK_RETRY_BASE_MS`, 30 s, capped at 3 h, with jitter: about a day at 15) before it is `failed`.',
    default: '`15`',
  }),
  WEBHOOK_RETRY_BASE_MS: int('WEBHOOK_RETRY_BASE_MS', 10, 3_600_000).optional().meta({
    description:
      'The first wait before a failed webhook delivery is tried again; each further wait doubles it (capped at 3 h), with jitter.',
    default: '`30000`',
  }),
  WEBHOOK_LEASE_MS: int('WEBHOOK_LEASE_MS', 1000, 3_600_000).optional().meta({
    description:
      'How long an instance owns a webhook delivery it is attempting; a delivery left by an instance that died is taken over by another once this has passed. Keep it longer than an attempt (10 s at most), or a slow receiver may get the same webhook-id twice.',
    default: '`60000`',
  }),
  WEBHOOK_RETENTION_DAYS: int('WEBHOOK_RETENTION_DAYS', 0, 3650).optional().meta({
    description:
      'Days a delivered webhook delivery is kept (listed by `GET /admin/webhooks/:id/deliveries`) before an instance deletes it, with its event once no delivery of it is left; failed and pending deliveries are kept whatever their age. `0` keeps every delivery.',
    default: '`30`',
  }),
  WEBHOOK_ALLOW_PRIVATE: z.enum(['0', '1'], 'WEBHOOK_ALLOW_PRIVATE must be 1 (or unset)').optional().meta({
    description:
      '`1` lets production webhooks reach loopback, private and link-local addresses (a receiver inside the same network); a warning is printed at every start.',
    default: 'unset',
  }),
  OID4VCI: z.enum(['on', 'off'], 'OID4VCI must be on or off').optional().meta({
    description:
      'The OpenID4VCI channel beside the hosted one: credential issuer and authorization server metadata, `POST /admin/credential-offers`, the token, nonce and credential endpoints ([interface.md](interface.md#openid4vci-the-wallet-door)).',
    default: '`on` in development, `off` in production',
  }),
  OID4VCI_REQUIRE_DPOP: z.enum(['0', '1'], 'OID4VCI_REQUIRE_DPOP must be 0 or 1').optional().meta({
    description:
      '`1`: the OpenID4VCI token and credential endpoints refuse a wallet that sends no DPoP proof (RFC 9449); without it DPoP is accepted when sent.',
    default: '`0`',
  }),
  OID4VCI_DPOP_NONCE: z
    .enum(['required', 'off'], 'OID4VCI_DPOP_NONCE must be required or off')
    .optional()
    .meta({
      description:
        "`required`: every DPoP proof sent to the OpenID4VCI token and credential endpoints must carry a nonce the server gave (RFC 9449 §8): a proof without one is answered `use_dpop_nonce` with a `DPoP-Nonce` header, and the wallet retries with it. `off`: freshness rests on the proof's `iat` (within 300 s) and its `jti`, remembered in the database. Requests without DPoP are not affected ([interface.md](interface.md#openid4vci-the-wallet-door)).",
      default: '`off`',
    }),
  OID4VCI_PROFILE: z.enum(['basic', 'haip'], 'OID4VCI_PROFILE must be basic or haip').optional().meta({
    description:
      '`haip`: the OpenID4VCI channel holds to the OpenID4VC High Assurance Interoperability Profile ([haip.md](haip.md)): the token endpoint requires a wallet attestation (`OAuth-Client-Attestation`, trusted through `OID4VCI_WALLET_TRUST`), and DPoP with server-provided nonces is required at the token and credential endpoints (as `OID4VCI_REQUIRE_DPOP=1` with `OID4VCI_DPOP_NONCE=required`; setting either to the contrary is refused). With a login provider (`OID4VCI_LOGIN_ISSUER`) an authorization request must be pushed first (RFC 9126): a plain one at the authorization endpoint is refused. `npm run admin -- doctor` lists what else the profile needs. `basic`: the channel as without it; a wallet attestation that is sent is checked when `OID4VCI_WALLET_TRUST` is set.',
    default: '`basic`',
  }),
  OID4VCI_WALLET_TRUST: z.string().min(1).optional().meta({
    description:
      "A PEM file of the wallet providers' certificates the OpenID4VCI token endpoint trusts: a wallet attestation (`OAuth-Client-Attestation`, ES256) must carry an `x5c` chain that ends at one of them ([haip.md](haip.md#wallet-attestation)). Required in effect under `OID4VCI_PROFILE=haip`; under `basic` an attestation that is sent is checked when it is set, and ignored when it is not.",
    default: 'unset',
  }),
  OID4VCI_KEY_ATTESTATION_TRUST: z.string().min(1).optional().meta({
    description:
      "A PEM file of the key attesters' certificates the OpenID4VCI credential endpoint trusts: a key attestation (the `key_attestation` header of a `jwt` proof, or an `attestation` proof) must carry an `x5c` chain that ends at one of them ([haip.md](haip.md#key-attestation)). Without it a schema that requires key attestation (`keyAttestation` in its file) issues nothing over OpenID4VCI.",
    default: 'unset',
  }),
  OID4VCI_BATCH_SIZE: int('OID4VCI_BATCH_SIZE', 1, 100).optional().meta({
    description:
      'The most credentials one OpenID4VCI credential request may ask for, one per proof of possession (batch issuance, OpenID4VCI 1.0 §8): advertised as `batch_credential_issuance.batch_size`; each credential of a batch has its own key, salts and random status list index, and the batch is recorded at once under one batch id. `1` turns batches off (the metadata then says nothing of them).',
    default: '`10`',
  }),
  OID4VCI_LOGIN_ISSUER: z.string().min(1).optional().meta({
    description:
      "The OpenID Connect provider that signs the holder in for the OpenID4VCI authorization code flow (its issuer identifier; its discovery document is read from `<issuer>/.well-known/openid-configuration`). Set: the channel's authorization server offers the `authorization_code` grant (pushed authorization requests, PKCE S256, `iss` in the response) and the issuer signs in at this provider as a relying party ([interface.md](interface.md#openid4vci-the-wallet-door)). Unset: the pre-authorized code grant only. With `TENANCY=multi` a tenant may have its own provider instead ([several-issuers.md](several-issuers.md#changing-a-tenant)).",
    default: 'unset',
    production: 'https',
  }),
  OID4VCI_LOGIN_CLIENT_ID: z.string().min(1).optional().meta({
    description: "The issuer's client id at the `OID4VCI_LOGIN_ISSUER` provider. Required with it.",
    default: 'unset',
  }),
  OID4VCI_LOGIN_CLIENT_SECRET: z.string().min(1).optional().meta({
    description:
      "The issuer's client secret at the `OID4VCI_LOGIN_ISSUER` provider (`client_secret_basic`). Secret. Required with it unless `OID4VCI_LOGIN_CLIENT_KEY_FILE` is given.",
    default: 'unset',
  }),
  OID4VCI_LOGIN_CLIENT_KEY_FILE: z.string().min(1).optional().meta({
    description:
      'A PKCS#8 PEM file with a P-256 private key: the issuer authenticates at the `OID4VCI_LOGIN_ISSUER` provider with `private_key_jwt` (ES256) instead of a client secret; the provider is given its public key. Secret file.',
    default: 'unset',
  }),
  OID4VCI_LOGIN_USER_CLAIM: z.string().min(1).optional().meta({
    description:
      "The ID token claim whose value is the holder's user id at the claims provider: the credential's claims are the claims provider's for it.",
    default: '`sub`',
  }),
  OID4VCI_REFRESH_TOKENS: z.enum(['0', '1'], 'OID4VCI_REFRESH_TOKENS must be 0 or 1').optional().meta({
    description:
      '`1`: a DPoP-bound authorization code grant also answers a refresh token (bound to the same DPoP key, used once, a new one with each use, 30 days), with which the wallet gets a fresh credential for the same authorization without signing in again.',
    default: '`0`',
  }),
  OID4VCI_RESPONSE_ENCRYPTION: z
    .enum(['optional', 'required'], 'OID4VCI_RESPONSE_ENCRYPTION must be optional or required')
    .optional()
    .meta({
      description:
        'Credential response encryption (OpenID4VCI 1.0 §10), advertised as `credential_response_encryption` (ECDH-ES on P-256, A128GCM or A256GCM): a wallet that sends `credential_response_encryption` gets its credential response as a compact JWE (`application/jwt`). `required`: a credential request without it is refused (`invalid_encryption_parameters`), and the metadata says `encryption_required: true`.',
      default: '`optional`',
    }),
  OID4VCI_REQUEST_ENCRYPTION_KEY_FILE: z.string().min(1).optional().meta({
    description:
      'A PKCS#8 PEM file with a P-256 private key: credential request encryption (OpenID4VCI 1.0 §10) is offered, its public key advertised in `credential_request_encryption.jwks` (ECDH-ES, A128GCM or A256GCM), and the credential endpoint takes a request sent as a compact JWE (`Content-Type: application/jwt`) encrypted to it ([interface.md](interface.md#openid4vci-the-wallet-door)). Every instance needs the same file. Secret file. OpenID4VCI 1.0 asks for request encryption wherever response encryption is offered (`OID4VCI_RESPONSE_ENCRYPTION`): `admin doctor` warns (`oid4vci encryption`) while the channel is on without this file. With `TENANCY=multi` a tenant may have its own key instead ([several-issuers.md](several-issuers.md#changing-a-tenant)).',
    default:
      "unset (no request encryption); in development `KEYS_DIR/dev-request-encryption.pem`, generated (a tenant's in its keys folder)",
  }),
  OID4VCI_REQUEST_ENCRYPTION: z
    .enum(['optional', 'required'], 'OID4VCI_REQUEST_ENCRYPTION must be optional or required')
    .optional()
    .meta({
      description:
        '`required`: a credential request that is not encrypted to `OID4VCI_REQUEST_ENCRYPTION_KEY_FILE` is refused (`invalid_encryption_parameters`), and the metadata says `encryption_required: true`. Needs that file.',
      default: '`optional`',
    }),
  OID4VCI_NOTIFICATIONS: z.enum(['on', 'off'], 'OID4VCI_NOTIFICATIONS must be on or off').optional().meta({
    description:
      "The OpenID4VCI notification endpoint (OpenID4VCI 1.0 §11): `notification_endpoint` in the credential issuer metadata and a `notification_id` in every credential response, so that a wallet can say it accepted, failed to store or deleted a credential (recorded in the credential's audit trail and sent as `credential.wallet_*` webhook events). `off` removes both, for profiles that forbid the wallet telling the issuer ([interface.md](interface.md#openid4vci-the-wallet-door)).",
    default: '`on`',
  }),
  OID4VCI_DEFERRED_SECONDS: int('OID4VCI_DEFERRED_SECONDS', 60, 30 * 86_400)
    .optional()
    .meta({
      description:
        'How long a deferred OpenID4VCI credential (the claims provider answered "pending") waits for its claims: the wallet polls the deferred credential endpoint with its `transaction_id` until then, and after it the transaction is refused as `invalid_transaction_id` ([interface.md](interface.md#openid4vci-the-wallet-door)).',
      default: '`86400` (one day)',
    }),
  ADMIN_ISSUE_DEADLINE_MS: int('ADMIN_ISSUE_DEADLINE_MS', 100, 300_000).optional().meta({
    description:
      'One deadline for a whole `/admin/issue-vc`: `initialize-user` attempts (each bounded by what is left) and the upload wait; past it a hanging `initialize-user` is 502 and a hanging upload answers 202 pending.',
    default: '`15000`',
  }),
  CONSOLE: z.enum(['on', 'off'], 'CONSOLE must be on or off').optional().meta({
    description:
      'The admin console at `/console` on the admin listener ([operations.md](operations.md#the-admin-console)): sign-in with an admin key, server-side sessions in the database.',
    default: '`on` in development, `off` in production',
    production: 'on only when set to `on`; `admin doctor` then lists it',
  }),
  CONSOLE_ORIGIN: z.string().min(1).optional().meta({
    description:
      "The origins the console is opened at (`scheme://host[:port]`, comma-separated): a sign-in or change whose `Origin` is none of them is refused. Configuration, never the request's `Host`.",
    default:
      '`ISSUER_ORIGIN` without `ADMIN_PORT`; with it, `http://localhost:<ADMIN_PORT>`, `http://127.0.0.1:<ADMIN_PORT>` and `http://[::1]:<ADMIN_PORT>`; outside production also the same loopback names of `PORT`',
  }),
  CONSOLE_SESSION_IDLE_SECONDS: int('CONSOLE_SESSION_IDLE_SECONDS', 60, 86_400).optional().meta({
    description: 'A console session ends after this long without a request.',
    default: '`1800` (30 minutes)',
  }),
  CONSOLE_SESSION_ABSOLUTE_SECONDS: int('CONSOLE_SESSION_ABSOLUTE_SECONDS', 60, 604_800).optional().meta({
    description: 'A console session ends this long after its sign-in, however active.',
    default: '`28800` (8 hours)',
  }),
};
