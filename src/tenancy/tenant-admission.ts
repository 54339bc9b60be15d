import { AppError, invalidParameter } from '../errors.js';
import { type AddTenant, hostOfOrigin, keySha256, type TenantRecord } from './tenant.js';
import { applyChange, type ChangeRules, refuseUpstream, strongKey } from './tenant-changes.js';

// What the operator's request to add (or adopt) a tenant becomes, and what it is refused for
// (docs/several-issuers.md "The operator").

/**
 * The registry's record of a tenant the operator adds, enabled, its keys kept as digests, its own
 * OpenID4VCI secrets sealed (refused as a change would be: tenant-changes.ts).
 */
export function recordOf(input: AddTenant, namespace: string, rules: ChangeRules): TenantRecord {
  const now = new Date().toISOString();
  const record: TenantRecord = {
    id: input.id,
    origin: input.origin,
    host: hostOfOrigin(input.origin),
    enabled: true,
    settings: input.settings,
    apiKeySha256: keySha256(input.apiKey),
    adminKeys: Object.entries(input.adminApiKeys).map(([name, key]) => ({ name, sha256: keySha256(key) })),
    namespace,
    createdAt: now,
    updatedAt: now,
  };
  return applyChange(record, { secrets: input.secrets ?? {} }, rules).record;
}

export const conflict = (field: string, message: string) => new AppError('CONFLICT', message, { field });

/**
 * docs/several-issuers.md "The operator": in production a tenant obeys the rules a single
 * deployment's environment does: an https origin, its keys to the routes under the secret rule
 * (docs/security.md "Production secret rule", as API_KEY and ADMIN_API_KEY(S)), and an https
 * hosting service unless ALLOW_INSECURE_UPSTREAM=1 (as SERVICE_V1_BASE_URL), and an https login
 * provider (as OID4VCI_LOGIN_ISSUER).
 */
export function refuseInProduction(input: AddTenant, insecureUpstream: boolean): void {
  if (!input.origin.startsWith('https:')) throw invalidParameter('origin', 'must be https in production');
  strongKey('apiKey', input.apiKey);
  for (const [name, key] of Object.entries(input.adminApiKeys)) strongKey(`adminApiKeys.${name}`, key);
  refuseUpstream(input.settings, insecureUpstream);
}
