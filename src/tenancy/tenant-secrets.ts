import { createPrivateKey } from 'node:crypto';
import { invalidParameter } from '../errors.js';
import { openSealedKey, sealJson } from '../keys/sealed-key.js';
import type { TenantRecord, TenantSecretName } from './tenant.js';

/**
 * A tenant's own OpenID4VCI secrets (docs/several-issuers.md "Changing a tenant"):
 * kept in the registry sealed with AES-256-GCM under the tenant's sealing key (tenant-config.ts:
 * derived from KEY_ENCRYPTION_KEY and its id), bound to the tenant and the secret's name, so that
 * a sealed value copied onto another tenant's row, or under another name, does not open.
 */
export type SealedSecrets = Partial<Record<TenantSecretName, string>>;

const purposeOf = (name: TenantSecretName) => `tenant-secret:${name}`;

/** The PEM keys must be P-256 private keys (ECDH-ES for requests, ES256 at the login provider). */
const PEM_SECRETS: ReadonlySet<TenantSecretName> = new Set([
  'oid4vciRequestEncryptionKey',
  'oid4vciLoginClientKey',
]);

/** Refuses a PEM secret that is not a P-256 private key: 400 naming `secrets.<name>`. */
export function checkSecret(name: TenantSecretName, value: string): void {
  if (!PEM_SECRETS.has(name)) return;
  let problem: string | undefined;
  try {
    const key = createPrivateKey(value);
    if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
      problem = 'must be a P-256 (EC) private key';
  } catch {
    problem = 'not a PEM private key';
  }
  if (problem) throw invalidParameter(`secrets.${name}`, problem);
}

export const sealSecret = (kek: Buffer, tenantId: string, name: TenantSecretName, value: string): string =>
  sealJson(kek, tenantId, purposeOf(name), value);

/**
 * The tenant's secrets in the clear, for its context. One that does not open (another
 * KEY_ENCRYPTION_KEY sealed it, or the row was altered) stops the tenant's start, naming it.
 */
export function openSecrets(kek: Buffer, tenant: TenantRecord): Partial<Record<TenantSecretName, string>> {
  const open: Partial<Record<TenantSecretName, string>> = {};
  for (const [name, sealed] of Object.entries(tenant.sealedSecrets ?? {}) as [TenantSecretName, string][]) {
    try {
      open[name] = openSealedKey(kek, tenant.id, purposeOf(name), sealed) as string;
    } catch {
      throw new Error(
        `secrets.${name}: does not open with this KEY_ENCRYPTION_KEY (sealed under another one, or altered): set it again with \`tenants set ${tenant.id}\``,
      );
    }
  }
  return open;
}

/**
 * `keys reseal` of one sealed secret: opened with the tenant's sealing key derived from
 * KEY_ENCRYPTION_KEY_PREVIOUS and sealed again under the one derived from KEY_ENCRYPTION_KEY, or
 * kept when it already opens with the latter; undefined when it opens with neither.
 */
export function resealSecret(
  keys: { previous: Buffer; next: Buffer },
  tenantId: string,
  name: TenantSecretName,
  sealed: string,
): { sealed: string; resealed: boolean } | undefined {
  const open = (kek: Buffer) => {
    try {
      return { value: openSealedKey(kek, tenantId, purposeOf(name), sealed) as string };
    } catch {
      return undefined;
    }
  };
  const old = open(keys.previous);
  if (old) return { sealed: sealSecret(keys.next, tenantId, name, old.value), resealed: true };
  return open(keys.next) ? { sealed, resealed: false } : undefined;
}
