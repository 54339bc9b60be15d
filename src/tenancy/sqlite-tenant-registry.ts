import Database from 'better-sqlite3';
import { prepareDatabaseFile } from '../store/sqlite/database.js';
import { SqliteConsoleSessionStore } from '../store/sqlite/sqlite-console-session-store.js';
import type { TenantRecord } from './tenant.js';
import {
  auditOfRow,
  conflictField,
  INSERT_COLUMNS,
  OPERATOR_SESSIONS_TABLE,
  registryTables,
  rowValues,
  SECRETS_COLUMN,
  type TenantAuditRow,
  TenantConflict,
  type TenantRegistry,
  type TenantRow,
  tenantOfRow,
  updateOf,
} from './tenant-registry.js';

/** The registry in the deployment's SQLite file, beside (never inside) any tenant's rows. */
export function sqliteTenantRegistry(path: string): TenantRegistry {
  // A first TENANCY=multi start makes the deployment's file, as a single deployment's first start does.
  prepareDatabaseFile(path);
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  for (const ddl of registryTables('INTEGER PRIMARY KEY AUTOINCREMENT', 'INTEGER', 'INTEGER')) db.exec(ddl);
  const columns = db.prepare("SELECT name FROM pragma_table_info('tenants')").all() as { name: string }[];
  if (!columns.some((c) => c.name === 'sealed_secrets'))
    db.exec(`ALTER TABLE tenants ADD COLUMN ${SECRETS_COLUMN}`);
  const update = updateOf(() => '?');
  const sqlValue = (v: unknown) => (typeof v === 'boolean' ? Number(v) : v);
  const audit = db.prepare(
    'INSERT INTO tenant_audit (at, actor, action, tenant_id, detail) VALUES (?, ?, ?, ?, ?)',
  );
  const write = (
    actor: string,
    action: TenantAuditRow['action'],
    t: Pick<TenantRecord, 'id' | 'origin' | 'namespace'>,
    more: Record<string, unknown> = {},
  ) =>
    audit.run(
      new Date().toISOString(),
      actor,
      action,
      t.id,
      JSON.stringify({ origin: t.origin, namespace: t.namespace, ...more }),
    );
  const one = (id: string) => {
    const row = db.prepare('SELECT * FROM tenants WHERE id = ?').get(id) as TenantRow | undefined;
    return row && tenantOfRow(row);
  };
  return {
    async list() {
      return (db.prepare('SELECT * FROM tenants ORDER BY id').all() as TenantRow[]).map(tenantOfRow);
    },
    get: async (id) => one(id),
    async add(tenant, actor, action = 'tenant.added') {
      const values = rowValues(tenant).map(sqlValue);
      try {
        db.transaction(() => {
          db.prepare(
            `INSERT INTO tenants (${INSERT_COLUMNS}) VALUES (${values.map(() => '?').join(', ')})`,
          ).run(...values);
          write(actor, action, tenant);
        })();
      } catch (err) {
        const field = (err as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT')
          ? conflictField((err as Error).message)
          : undefined;
        if (field) throw new TenantConflict(field, `${field}: already a tenant's`);
        throw err;
      }
    },
    async setEnabled(id, enabled, actor) {
      return db.transaction(() => {
        const before = one(id);
        if (!before) return undefined;
        if (before.enabled === enabled) return before;
        db.prepare('UPDATE tenants SET enabled = ?, updated_at = ? WHERE id = ?').run(
          Number(enabled),
          new Date().toISOString(),
          id,
        );
        write(actor, enabled ? 'tenant.enabled' : 'tenant.disabled', before);
        return one(id);
      })();
    },
    async change(id, next, actor) {
      return db.transaction(() => {
        const before = one(id);
        if (!before) return undefined;
        const { record, changed } = next(before);
        if (changed.length === 0) return before;
        db.prepare(update.sql).run(...update.values(record).map(sqlValue));
        write(actor, 'tenant.changed', record, { changed });
        return one(id);
      })();
    },
    async remove(id, actor) {
      return db.transaction(() => {
        const before = one(id);
        if (!before) return 'absent' as const;
        if (before.enabled) return 'enabled' as const;
        db.prepare('DELETE FROM tenants WHERE id = ?').run(id);
        write(actor, 'tenant.removed', before);
        return 'removed' as const;
      })();
    },
    async version() {
      // As PostgreSQL's: the count moves with every change (rows are never deleted).
      const row = db
        .prepare('SELECT count(*) * 4294967296 + coalesce(max(id), 0) AS v FROM tenant_audit')
        .get() as { v: number };
      return row.v;
    },
    async audit(limit) {
      return (
        db.prepare('SELECT * FROM tenant_audit ORDER BY id DESC LIMIT ?').all(limit) as Parameters<
          typeof auditOfRow
        >[0][]
      ).map(auditOfRow);
    },
    consoleSessions: new SqliteConsoleSessionStore(db, OPERATOR_SESSIONS_TABLE),
    async close() {
      db.close();
    },
  };
}
