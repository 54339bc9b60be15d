import type { Config, Secrets } from '../config/config.js';
import type { KeyEncryption } from '../config/key-encryption-key.js';
import { secretProblem } from '../config/secret-strength.js';
import type { AppContext } from '../context.js';
import { invalidParameter } from '../errors.js';
import {
  type ChangeTenant,
  keySha256,
  TENANT_SECRET_NAMES,
  type TenantRecord,
  type TenantSettings,
} from './tenant.js';
import { tenantKeyEncryption } from './tenant-config.js';
import { checkSecret, sealSecret } from './tenant-secrets.js';

/** What a change is checked against: the deployment's production rules and its sealing key. */
export interface ChangeRules {
  production: boolean;
  insecureUpstream: boolean;
  keyEncryption: KeyEncryption;
}

export const changeRules = (o: { config: Config; secrets: Secrets }): ChangeRules => ({
  production: o.config.production,
  insecureUpstream: o.config.insecureUpstream,
  keyEncryption: o.secrets.keyEncryption,
});

/**
 * docs/several-issuers.md "Routing": a disabled tenant issues nothing, and the renewal sweep's
 * re-issues are issuances; what it issued before goes on being uploaded, delivered and changed.
 */
export async function followEnabled(served: {
  ctx: AppContext | undefined;
  record: TenantRecord;
}): Promise<void> {
  const renewal = served.ctx?.renewal;
  if (!renewal) return;
  if (served.record.enabled) renewal.start();
  else await renewal.stop();
}

/** What, changed, makes a tenant's context built again: all but its enabled flag and dates. */
export const identityOf = (r: TenantRecord): string =>
  JSON.stringify([r.origin, r.host, r.settings, r.apiKeySha256, r.adminKeys, r.namespace, r.sealedSecrets]);

type SettingName = keyof TenantSettings;

/**
 * `PATCH /operator/tenants/:id` (docs/several-issuers.md "Changing a tenant"): the record `before`
 * becomes with what `input` gives, and the names of what changed (the audit row's, never a value).
 * Anything refused throws a 400 naming its field before anything is written.
 */
export function applyChange(
  before: TenantRecord,
  input: ChangeTenant,
  rules: ChangeRules,
): { record: TenantRecord; changed: string[] } {
  const changed: string[] = [];
  const settings: Record<string, unknown> = { ...before.settings };
  for (const [name, value] of Object.entries(input.settings ?? {}) as [SettingName, unknown][]) {
    if (value === undefined || JSON.stringify(settings[name]) === JSON.stringify(value ?? undefined))
      continue;
    if (value === null) delete settings[name];
    else settings[name] = value;
    changed.push(`settings.${name}`);
  }
  const sealed = { ...before.sealedSecrets };
  const given = input.secrets ?? {};
  if (given.oid4vciLoginClientSecret && given.oid4vciLoginClientKey)
    throw invalidParameter(
      'secrets.oid4vciLoginClientKey',
      'not with secrets.oid4vciLoginClientSecret: give one of them',
    );
  const drop = (name: (typeof TENANT_SECRET_NAMES)[number]) => {
    if (sealed[name] === undefined) return;
    delete sealed[name];
    changed.push(`secrets.${name}`);
  };
  const kek = tenantKeyEncryption(rules.keyEncryption, before).current;
  for (const name of TENANT_SECRET_NAMES) {
    const value = given[name];
    if (value === undefined) continue;
    if (value === null) {
      drop(name);
      continue;
    }
    checkSecret(name, value);
    sealed[name] = sealSecret(kek, before.id, name, value);
    changed.push(`secrets.${name}`);
  }
  // One way of signing in at the login provider replaces the other; no provider, no login secret.
  if (given.oid4vciLoginClientSecret) drop('oid4vciLoginClientKey');
  if (given.oid4vciLoginClientKey) drop('oid4vciLoginClientSecret');
  if (settings.oid4vciLogin === undefined && input.settings?.oid4vciLogin === null) {
    drop('oid4vciLoginClientSecret');
    drop('oid4vciLoginClientKey');
  }
  const login = settings.oid4vciLogin as TenantSettings['oid4vciLogin'];
  // A secret is the login provider's own: another provider (or client) gets a new one, or none.
  const was = before.settings.oid4vciLogin;
  if (
    login &&
    was &&
    (login.issuer !== was.issuer || login.clientId !== was.clientId) &&
    !given.oid4vciLoginClientSecret &&
    !given.oid4vciLoginClientKey
  )
    throw invalidParameter(
      'secrets.oid4vciLoginClientSecret',
      'required when settings.oid4vciLogin names another issuer or client (or secrets.oid4vciLoginClientKey)',
    );
  const loginSecret = sealed.oid4vciLoginClientSecret ?? sealed.oid4vciLoginClientKey;
  if (login && loginSecret === undefined)
    throw invalidParameter(
      'secrets.oid4vciLoginClientSecret',
      'required with settings.oid4vciLogin (or secrets.oid4vciLoginClientKey)',
    );
  if (!login && loginSecret !== undefined)
    throw invalidParameter(
      sealed.oid4vciLoginClientSecret ? 'secrets.oid4vciLoginClientSecret' : 'secrets.oid4vciLoginClientKey',
      'only with settings.oid4vciLogin (the login provider it is for)',
    );
  let apiKeySha256 = before.apiKeySha256;
  if (input.apiKey !== undefined) {
    if (rules.production) strongKey('apiKey', input.apiKey);
    apiKeySha256 = keySha256(input.apiKey);
    if (apiKeySha256 !== before.apiKeySha256) changed.push('apiKey');
  }
  let adminKeys = before.adminKeys;
  for (const [name, key] of Object.entries(input.adminApiKeys ?? {})) {
    const others = adminKeys.filter((k) => k.name !== name);
    if (key === null) {
      if (others.length === adminKeys.length) continue;
      if (others.length === 0)
        throw invalidParameter(`adminApiKeys.${name}`, 'the last admin key: add another one first');
      adminKeys = others;
    } else {
      if (rules.production) strongKey(`adminApiKeys.${name}`, key);
      adminKeys = [...others, { name, sha256: keySha256(key) }];
    }
    changed.push(`adminApiKeys.${name}`);
  }
  const next = settings as TenantSettings;
  if (rules.production) refuseUpstream(next, rules.insecureUpstream);
  return {
    record: {
      ...before,
      settings: next,
      sealedSecrets: Object.keys(sealed).length > 0 ? sealed : undefined,
      apiKeySha256,
      adminKeys,
      updatedAt: changed.length > 0 ? new Date().toISOString() : before.updatedAt,
    },
    changed,
  };
}

export function strongKey(field: string, key: string): void {
  const weak = secretProblem(key);
  if (weak) throw invalidParameter(field, `${weak} in production`);
}

/** In production (docs/several-issuers.md "The operator"): an https hosting service and login provider. */
export function refuseUpstream(settings: TenantSettings, insecureUpstream: boolean): void {
  const service = settings.serviceBaseUrl;
  if (service !== undefined && !service.startsWith('https:') && !insecureUpstream)
    throw invalidParameter(
      'settings.serviceBaseUrl',
      'must be https in production (ALLOW_INSECURE_UPSTREAM=1 allows http for a staging sidecar)',
    );
  if (settings.oid4vciLogin && !settings.oid4vciLogin.issuer.startsWith('https:'))
    throw invalidParameter('settings.oid4vciLogin.issuer', 'must be https in production');
}
