import type { ConsoleSessionStore } from '../store/console-session-store.js';
import type { TenantRecord } from './tenant.js';

/** One line of the operator's audit: what was done to which tenant, by whom. */
export interface TenantAuditRow {
  at: string;
  actor: string;
  action:
    | 'tenant.added'
    | 'tenant.disabled'
    | 'tenant.enabled'
    | 'tenant.removed'
    | 'tenant.adopted'
    | 'tenant.changed';
  tenantId: string;
  /**
   * What identifies the tenant at that moment (origin, namespace), and for a change the names of
   * what changed (`changed`): never a key, a secret or a setting's value.
   */
  detail: Record<string, unknown>;
}

/** A unique rule of the registry a change would break: the field it names. */
export class TenantConflict extends Error {
  constructor(
    readonly field: 'id' | 'origin' | 'namespace',
    message: string,
  ) {
    super(message);
    this.name = 'TenantConflict';
  }
}

/**
 * The tenants of a `TENANCY=multi` deployment and the operator's audit, kept in the deployment's
 * own namespace (the main SQLite file, the `public` schema) apart from every tenant's rows
 * (docs/several-issuers.md "Where the data lives"). Every change writes its audit row in the same
 * transaction, so `version` (the last audit row) tells another instance that something changed.
 */
export interface TenantRegistry {
  list(): Promise<TenantRecord[]>;
  get(id: string): Promise<TenantRecord | undefined>;
  /** Adds `tenant`; a taken id, origin host or namespace is a TenantConflict, nothing written. */
  add(tenant: TenantRecord, actor: string, action?: TenantAuditRow['action']): Promise<void>;
  /** Enables or disables; undefined when there is no such tenant. */
  setEnabled(id: string, enabled: boolean, actor: string): Promise<TenantRecord | undefined>;
  /**
   * Changes a tenant in one transaction: `next` makes its new record from the registry's (a throw
   * changes nothing) and names what it changed, for the audit row `tenant.changed`; nothing named,
   * nothing written. undefined when there is no such tenant.
   */
  change(
    id: string,
    next: (before: TenantRecord) => { record: TenantRecord; changed: string[] },
    actor: string,
  ): Promise<TenantRecord | undefined>;
  /** Removes a disabled tenant's registration (`enabled`: refused, nothing changed). */
  remove(id: string, actor: string): Promise<'removed' | 'enabled' | 'absent'>;
  /** Changes whenever the registry does. */
  version(): Promise<number>;
  audit(limit: number): Promise<TenantAuditRow[]>;
  /** The operator's console sign-ins (docs/several-issuers.md "The operator's console"). */
  consoleSessions: ConsoleSessionStore;
  close(): Promise<void>;
}

/** The operator's console sessions: the columns of a tenant's `console_sessions`. */
export const OPERATOR_SESSIONS_TABLE = 'operator_console_sessions';

/**
 * The registry's tables, the same on both engines (created at the first `TENANCY=multi` start, and
 * the sessions' table by the first start that has it).
 */
export const registryTables = (serial: string, bool: string, epochMs: string) => [
  `CREATE TABLE IF NOT EXISTS tenants (
     id TEXT PRIMARY KEY,
     origin TEXT NOT NULL,
     host TEXT NOT NULL UNIQUE,
     enabled ${bool} NOT NULL,
     settings TEXT NOT NULL,
     api_key_sha256 TEXT NOT NULL,
     admin_keys TEXT NOT NULL,
     namespace TEXT NOT NULL UNIQUE,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     sealed_secrets TEXT)`,
  `CREATE TABLE IF NOT EXISTS tenant_audit (
     id ${serial},
     at TEXT NOT NULL,
     actor TEXT NOT NULL,
     action TEXT NOT NULL,
     tenant_id TEXT NOT NULL,
     detail TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS ${OPERATOR_SESSIONS_TABLE} (
     id_hash TEXT PRIMARY KEY,
     actor TEXT NOT NULL,
     key_hash TEXT,
     created_at ${epochMs} NOT NULL,
     last_seen_at ${epochMs} NOT NULL)`,
];

/** The column a registry made before tenants had secrets of their own gains (`ADD COLUMN`). */
export const SECRETS_COLUMN = 'sealed_secrets TEXT';

export interface TenantRow {
  id: string;
  origin: string;
  host: string;
  enabled: boolean | number;
  settings: string;
  api_key_sha256: string;
  admin_keys: string;
  namespace: string;
  created_at: string;
  updated_at: string;
  sealed_secrets?: string | null;
}

export const tenantOfRow = (r: TenantRow): TenantRecord => ({
  id: r.id,
  origin: r.origin,
  host: r.host,
  enabled: r.enabled === true || r.enabled === 1,
  settings: JSON.parse(r.settings) as TenantRecord['settings'],
  apiKeySha256: r.api_key_sha256,
  adminKeys: JSON.parse(r.admin_keys) as TenantRecord['adminKeys'],
  namespace: r.namespace,
  ...(r.sealed_secrets
    ? { sealedSecrets: JSON.parse(r.sealed_secrets) as TenantRecord['sealedSecrets'] }
    : {}),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** The row's values in the column order of `INSERT_COLUMNS`. */
export const rowValues = (t: TenantRecord) => [
  t.id,
  t.origin,
  t.host,
  t.enabled,
  JSON.stringify(t.settings),
  t.apiKeySha256,
  JSON.stringify(t.adminKeys),
  t.namespace,
  t.createdAt,
  t.updatedAt,
  t.sealedSecrets && Object.keys(t.sealedSecrets).length > 0 ? JSON.stringify(t.sealedSecrets) : null,
];
export const INSERT_COLUMNS =
  'id, origin, host, enabled, settings, api_key_sha256, admin_keys, namespace, created_at, updated_at, sealed_secrets';

/** `col = ?` (or `$n`) for each column but the id, then the id: an UPDATE of the whole row. */
export const updateOf = (
  placeholder: (n: number) => string,
): { sql: string; values: (t: TenantRecord) => unknown[] } => {
  const columns = INSERT_COLUMNS.split(', ').slice(1);
  return {
    sql: `UPDATE tenants SET ${columns.map((c, i) => `${c} = ${placeholder(i + 1)}`).join(', ')} WHERE id = ${placeholder(columns.length + 1)}`,
    values: (t) => [...rowValues(t).slice(1), t.id],
  };
};

export const auditOfRow = (r: {
  at: string;
  actor: string;
  action: string;
  tenant_id: string;
  detail: string;
}): TenantAuditRow => ({
  at: r.at,
  actor: r.actor,
  action: r.action as TenantAuditRow['action'],
  tenantId: r.tenant_id,
  detail: JSON.parse(r.detail) as Record<string, unknown>,
});

/** Which field a unique constraint of `tenants` stands for, from the engine's message. */
export function conflictField(message: string): TenantConflict['field'] | undefined {
  if (/host/.test(message)) return 'origin';
  if (/namespace/.test(message)) return 'namespace';
  if (/pkey|tenants\.id|PRIMARY/i.test(message)) return 'id';
  return undefined;
}
