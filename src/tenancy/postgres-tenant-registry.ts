import { createPool, withTransaction } from '../store/postgres/database.js';
import { PostgresConsoleSessionStore } from '../store/postgres/postgres-console-session-store.js';
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

/**
 * The registry in the deployment's `public` schema (never a tenant's). Its own two connections:
 * the tenants' shared pool sets each connection's search_path, this one never does.
 */
export async function postgresTenantRegistry(url: string): Promise<TenantRegistry> {
  const pool = createPool(url, { poolMax: 2 });
  // Several instances starting at once: the second CREATE waits for the first's row lock.
  await withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', ['issuer-kit tenant registry']);
    for (const ddl of registryTables('BIGSERIAL PRIMARY KEY', 'BOOLEAN', 'BIGINT')) await client.query(ddl);
    await client.query(`ALTER TABLE tenants ADD COLUMN IF NOT EXISTS ${SECRETS_COLUMN}`);
  });
  const update = updateOf((n) => `$${n}`);
  const write = (
    q: { query: typeof pool.query },
    actor: string,
    action: TenantAuditRow['action'],
    t: Pick<TenantRecord, 'id' | 'origin' | 'namespace'>,
    more: Record<string, unknown> = {},
  ) =>
    q.query('INSERT INTO tenant_audit (at, actor, action, tenant_id, detail) VALUES ($1, $2, $3, $4, $5)', [
      new Date().toISOString(),
      actor,
      action,
      t.id,
      JSON.stringify({ origin: t.origin, namespace: t.namespace, ...more }),
    ]);
  const one = async (q: { query: typeof pool.query }, id: string, lock = '') => {
    const { rows } = await q.query<TenantRow>(`SELECT * FROM tenants WHERE id = $1${lock}`, [id]);
    return rows[0] && tenantOfRow(rows[0]);
  };
  return {
    async list() {
      return (await pool.query<TenantRow>('SELECT * FROM tenants ORDER BY id')).rows.map(tenantOfRow);
    },
    get: (id) => one(pool, id),
    async add(tenant, actor, action = 'tenant.added') {
      try {
        await withTransaction(pool, async (client) => {
          await client.query(
            `INSERT INTO tenants (${INSERT_COLUMNS}) VALUES (${rowValues(tenant)
              .map((_, i) => `$${i + 1}`)
              .join(', ')})`,
            rowValues(tenant),
          );
          await write(client, actor, action, tenant);
        });
      } catch (err) {
        const e = err as { code?: string; constraint?: string; message: string };
        const field = e.code === '23505' ? conflictField(e.constraint ?? e.message) : undefined;
        if (field) throw new TenantConflict(field, `${field}: already a tenant's`);
        throw err;
      }
    },
    setEnabled: (id, enabled, actor) =>
      withTransaction(pool, async (client) => {
        const before = await one(client, id, ' FOR UPDATE');
        if (!before) return undefined;
        if (before.enabled === enabled) return before;
        await client.query('UPDATE tenants SET enabled = $1, updated_at = $2 WHERE id = $3', [
          enabled,
          new Date().toISOString(),
          id,
        ]);
        await write(client, actor, enabled ? 'tenant.enabled' : 'tenant.disabled', before);
        return one(client, id);
      }),
    change: (id, next, actor) =>
      withTransaction(pool, async (client) => {
        const before = await one(client, id, ' FOR UPDATE');
        if (!before) return undefined;
        const { record, changed } = next(before);
        if (changed.length === 0) return before;
        await client.query(update.sql, update.values(record));
        await write(client, actor, 'tenant.changed', record, { changed });
        return one(client, id);
      }),
    remove: (id, actor) =>
      withTransaction(pool, async (client) => {
        const before = await one(client, id, ' FOR UPDATE');
        if (!before) return 'absent' as const;
        if (before.enabled) return 'enabled' as const;
        await client.query('DELETE FROM tenants WHERE id = $1', [id]);
        await write(client, actor, 'tenant.removed', before);
        return 'removed' as const;
      }),
    async version() {
      // Rows are never deleted: their count moves with every change, also one that commits after a
      // change with a higher id (two operators at once), which max(id) alone would not show.
      const { rows } = await pool.query<{ v: string }>(
        'SELECT count(*) * 4294967296 + coalesce(max(id), 0) AS v FROM tenant_audit',
      );
      return Number(rows[0]?.v ?? 0);
    },
    async audit(limit) {
      const { rows } = await pool.query('SELECT * FROM tenant_audit ORDER BY id DESC LIMIT $1', [limit]);
      return rows.map(auditOfRow);
    },
    consoleSessions: new PostgresConsoleSessionStore(pool, OPERATOR_SESSIONS_TABLE),
    close: () => pool.end(),
  };
}
