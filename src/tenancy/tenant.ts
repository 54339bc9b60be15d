import { hash } from 'node:crypto';
import { z } from 'zod';

/**
 * One issuer of a `TENANCY=multi` deployment, as the registry keeps it (docs/several-issuers.md
 * "What a tenant is"). Its keys to the routes are kept as SHA-256 digests only.
 */
export interface TenantRecord {
  /** A DNS label: the name the operator and the CLI use. */
  id: string;
  /** ISSUER_ORIGIN of this issuer: scheme://host[:port]. */
  origin: string;
  /** The origin's host (with its port), lower case: what a request's `Host` is matched with. */
  host: string;
  enabled: boolean;
  settings: TenantSettings;
  /** sha256 (hex) of the `x-api-key` the hosting service presents on this tenant's holder routes. */
  apiKeySha256: string;
  /** The tenant's admin keys, by actor name: sha256 (hex) of each. */
  adminKeys: { name: string; sha256: string }[];
  /**
   * Where its rows live: a PostgreSQL schema or an SQLite file name beside the deployment's
   * database; `main` is the deployment's own (a single deployment adopted as this tenant).
   */
  namespace: string;
  /**
   * The tenant's own OpenID4VCI secrets, each sealed under its sealing key (tenant-secrets.ts);
   * absent: the deployment's.
   */
  sealedSecrets?: Partial<Record<TenantSecretName, string>> | undefined;
  createdAt: string;
  updatedAt: string;
}

/** The OpenID Connect provider a tenant signs its holders in at (OID4VCI_LOGIN_*, its secret apart). */
export const TenantLoginSchema = z.strictObject({
  /** OID4VCI_LOGIN_ISSUER. */
  issuer: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
  /** OID4VCI_LOGIN_CLIENT_ID. */
  clientId: z.string().min(1),
  /** OID4VCI_LOGIN_USER_CLAIM (default `sub`). */
  userClaim: z.string().min(1).optional(),
});

/** What a tenant sets of its own over the deployment's configuration. */
export const TenantSettingsSchema = z.strictObject({
  /** SD_JWT_ISSUER of this issuer (default: the deployment's). */
  sdJwtIssuer: z.enum(['url', 'did:web', 'x5c']).optional(),
  /** PARTNER_ID: who this issuer is to the hosting service. */
  partnerId: z.uuid('must be a UUID'),
  /** SERVICE_V1_BASE_URL of this issuer (default: the deployment's). */
  serviceBaseUrl: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .transform((u) => u.replace(/\/+$/, ''))
    .optional(),
  /** SCHEMAS_DIR of this issuer (default: the deployment's). */
  schemasDir: z.string().min(1).optional(),
  /**
   * OID4VCI_LOGIN_* of this issuer: its own login provider, whose client secret or key is one of
   * its secrets (default: the deployment's provider).
   */
  oid4vciLogin: TenantLoginSchema.optional(),
});
export type TenantSettings = z.infer<typeof TenantSettingsSchema>;

/** The secrets a tenant may have of its own, never shown (sealed in the registry). */
export const TENANT_SECRET_NAMES = [
  /** OID4VCI_REQUEST_ENCRYPTION_KEY_FILE's content: a PKCS#8 PEM P-256 private key. */
  'oid4vciRequestEncryptionKey',
  /** OID4VCI_LOGIN_CLIENT_SECRET. */
  'oid4vciLoginClientSecret',
  /** OID4VCI_LOGIN_CLIENT_KEY_FILE's content: a PKCS#8 PEM P-256 private key (private_key_jwt). */
  'oid4vciLoginClientKey',
] as const;
export type TenantSecretName = (typeof TENANT_SECRET_NAMES)[number];

/** A PEM private key as sent: the P-256 check is tenant-secrets.ts's. */
const Pem = z.string().regex(/-----BEGIN [A-Z ]*PRIVATE KEY-----/, 'must be a PEM private key (PKCS#8)');

/** The secrets as `POST /operator/tenants` takes them. */
export const TenantSecretsSchema = z.strictObject({
  oid4vciRequestEncryptionKey: Pem.optional(),
  oid4vciLoginClientSecret: z.string().min(1).optional(),
  oid4vciLoginClientKey: Pem.optional(),
});
export type TenantSecrets = z.infer<typeof TenantSecretsSchema>;

/** A DNS label (RFC 1035 §2.3.1, lower case): also part of a schema and a file name. */
const TENANT_ID = /^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$/;
/** A host name of DNS labels, or `localhost` (with a port, for development). */
const HOST_NAME =
  /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

export const TenantIdSchema = z.string().regex(TENANT_ID, 'must be a DNS label: a-z, 0-9 and -, at most 40');

/** An origin whose host is a host name (not an address): scheme://host[:port], nothing else. */
export const TenantOriginSchema = z.string().superRefine((value, ctx) => {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'not a URL' });
    return;
  }
  if (url.origin !== value)
    ctx.addIssue({ code: 'custom', message: 'must be an origin only: scheme://host[:port], lower case' });
  else if (url.protocol !== 'https:' && url.protocol !== 'http:')
    ctx.addIssue({ code: 'custom', message: 'must be http or https' });
  else if (!HOST_NAME.test(url.hostname) || /^[\d.]+$/.test(url.hostname))
    ctx.addIssue({ code: 'custom', message: 'its host must be a host name' });
});

/** An admin key's name: the actor of the tenant's audit log. */
const ADMIN_NAME = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'names of letters, digits, - and _');

/** `POST /operator/tenants` and `tenants add`. */
export const AddTenantSchema = z.strictObject({
  id: TenantIdSchema,
  origin: TenantOriginSchema,
  settings: TenantSettingsSchema,
  apiKey: z.string().min(1),
  /** name → key; the name is the actor of the tenant's audit log. */
  adminApiKeys: z
    .record(ADMIN_NAME, z.string().min(1))
    .refine((keys) => Object.keys(keys).length > 0, 'at least one admin key'),
  secrets: TenantSecretsSchema.optional(),
});
export type AddTenant = z.infer<typeof AddTenantSchema>;

/**
 * `PATCH /operator/tenants/:id` and `tenants set`: what is given changes, the rest stays; `null`
 * gives a setting back to the deployment's default, removes a secret or an admin key. The id and
 * the origin are not changeable (the origin carries the tenant's did:web and what it issued).
 */
export const ChangeTenantSchema = z.strictObject({
  id: z.custom<never>(() => false, 'cannot be changed').optional(),
  origin: z
    .custom<never>(
      () => false,
      "cannot be changed: the tenant's did:web and the credentials it issued name it (add a new tenant for a new origin)",
    )
    .optional(),
  settings: z
    .strictObject({
      partnerId: TenantSettingsSchema.shape.partnerId.optional(),
      sdJwtIssuer: TenantSettingsSchema.shape.sdJwtIssuer.unwrap().nullable().optional(),
      serviceBaseUrl: TenantSettingsSchema.shape.serviceBaseUrl.unwrap().nullable().optional(),
      schemasDir: TenantSettingsSchema.shape.schemasDir.unwrap().nullable().optional(),
      oid4vciLogin: TenantLoginSchema.nullable().optional(),
    })
    .optional(),
  secrets: z
    .strictObject({
      oid4vciRequestEncryptionKey: Pem.nullable().optional(),
      oid4vciLoginClientSecret: z.string().min(1).nullable().optional(),
      oid4vciLoginClientKey: Pem.nullable().optional(),
    })
    .optional(),
  /** The hosting service's new x-api-key. */
  apiKey: z.string().min(1).optional(),
  /** name → a new key (added, or replacing that actor's), or null (removed). */
  adminApiKeys: z.record(ADMIN_NAME, z.string().min(1).nullable()).optional(),
});
export type ChangeTenant = z.infer<typeof ChangeTenantSchema>;

/** Hex SHA-256 of a key: what the registry keeps of it. */
export const keySha256 = (key: string): string => hash('sha256', key, 'hex');

/** The host a request for `origin` carries (`Host`, or the forwarded host behind TRUST_PROXY). */
export const hostOfOrigin = (origin: string): string => new URL(origin).host.toLowerCase();

/** A tenant as the operator sees it: never a key digest. */
export function operatorView(t: TenantRecord) {
  return {
    id: t.id,
    origin: t.origin,
    enabled: t.enabled,
    settings: t.settings,
    adminActors: t.adminKeys.map((k) => k.name),
    // Which of its own secrets it has: their names only.
    ...(t.sealedSecrets && Object.keys(t.sealedSecrets).length > 0
      ? { secrets: Object.keys(t.sealedSecrets).sort() }
      : {}),
    namespace: t.namespace,
    createdAt: t.createdAt,
    updatedAt: t.updatedAt,
  };
}
