import { pageOf } from '../keyset.js';
import {
  DELIVERY_COLUMNS,
  type WebhookDeliveryColumns,
  type WebhookEndpointColumns,
  webhookRowReaders,
} from '../webhook-row.js';
import {
  type DeliveredMarks,
  type DeliveryQuery,
  type NewWebhookEndpoint,
  type NewWebhookEvent,
  newWebhookDeliveryId,
  type PruneStep,
  pruneRange,
  subscribes,
  type WebhookDeliveryRecord,
  type WebhookEndpointRecord,
  type WebhookStore,
} from '../webhook-store.js';
import { type PgClient, type PgPool, withTransaction } from './database.js';

type EndpointRow = WebhookEndpointColumns<Date, Date>;
type DeliveryRow = WebhookDeliveryColumns<Date, Date, string>;

const { endpoint: toEndpoint, delivery: toDelivery } = webhookRowReaders<Date, Date, string>({
  time: (d) => d,
  epoch: (d) => d,
  seq: Number,
});

/**
 * The SQL that writes one event inside the statement of its change, while an endpoint exists:
 * `$id`, `$type`, `$data` and `$at` are the caller's parameter numbers.
 */
export function insertEventSql(id: string, type: string, data: string, at: string, from = ''): string {
  return `INSERT INTO webhook_events (id, type, data, created_at)
    SELECT ${id}, ${type}, ${data}, ${at} ${from} ${from ? 'AND' : 'WHERE'} EXISTS (SELECT 1 FROM webhook_endpoints)`;
}

/** Writes one built event on its own statement (in the caller's transaction when `db` is its client). */
export async function insertEvent(db: PgPool | PgClient, event: NewWebhookEvent, at: Date): Promise<void> {
  await db.query(insertEventSql('$1::text', '$2::text', '$3::text', '$4::timestamptz'), [
    event.id,
    event.type,
    event.data,
    at,
  ]);
}

/** Events fanned out per transaction. */
const FAN_OUT_BATCH = 100;

export class PostgresWebhookStore implements WebhookStore {
  constructor(private readonly pool: PgPool) {}

  async recordEvent(event: NewWebhookEvent, at: Date): Promise<void> {
    await insertEvent(this.pool, event, at);
  }

  async addEndpoint(e: NewWebhookEndpoint): Promise<void> {
    await this.pool.query(
      `INSERT INTO webhook_endpoints (id, url, events, description, secret, created_at)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [e.id, e.url, JSON.stringify(e.events), e.description, e.secret, e.createdAt],
    );
  }

  async listEndpoints(): Promise<WebhookEndpointRecord[]> {
    const { rows } = await this.pool.query<EndpointRow>(
      'SELECT * FROM webhook_endpoints ORDER BY created_at, id',
    );
    return rows.map(toEndpoint);
  }

  async getEndpoint(id: string): Promise<WebhookEndpointRecord | undefined> {
    const { rows } = await this.pool.query<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = $1', [
      id,
    ]);
    return rows[0] ? toEndpoint(rows[0]) : undefined;
  }

  async removeEndpoint(id: string): Promise<boolean> {
    // ON DELETE CASCADE takes its deliveries.
    const { rowCount } = await this.pool.query('DELETE FROM webhook_endpoints WHERE id = $1', [id]);
    return rowCount === 1;
  }

  async fanOut(now: Date, newId: () => string, limit: number): Promise<number> {
    return withTransaction(this.pool, async (client) => {
      // SKIP LOCKED: instances sweeping at once each fan out different events.
      const { rows: events } = await client.query<{ seq: string; type: string }>(
        'SELECT seq, type FROM webhook_events WHERE fanned_out = 0 ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED',
        [limit],
      );
      if (events.length === 0) return 0;
      const { rows: endpoints } = await client.query<EndpointRow>('SELECT * FROM webhook_endpoints');
      const ids: string[] = [];
      const seqs: string[] = [];
      const targets: string[] = [];
      for (const ev of events)
        for (const ep of endpoints.map(toEndpoint))
          if (subscribes(ep.events, ev.type)) {
            ids.push(newId());
            seqs.push(ev.seq);
            targets.push(ep.id);
          }
      if (ids.length > 0)
        await client.query(
          `INSERT INTO webhook_deliveries (id, event_seq, endpoint_id, next_attempt_at, created_at)
           SELECT i, s, t, $4, $4 FROM unnest($1::text[], $2::bigint[], $3::text[]) AS u(i, s, t)
           ON CONFLICT DO NOTHING`,
          [ids, seqs, targets, now],
        );
      await client.query('UPDATE webhook_events SET fanned_out = 1 WHERE seq = ANY($1::bigint[])', [
        events.map((e) => e.seq),
      ]);
      return events.length;
    });
  }

  async leaseDueDeliveries(
    now: Date,
    leaseMs: number,
    limit: number,
    delivered?: DeliveredMarks,
  ): Promise<WebhookDeliveryRecord[]> {
    if (delivered && delivered.marks.length > 0) await this.markDelivered(delivered.marks, delivered.at);
    // Events are written without their deliveries (in the statement of their change): fan them all
    // out first, a batch per transaction, then lease.
    while ((await this.fanOut(now, newWebhookDeliveryId, FAN_OUT_BATCH)) > 0);
    const { rows } = await this.pool.query<DeliveryRow>(
      `WITH due AS (
         UPDATE webhook_deliveries d SET lease_until = $2
         FROM (SELECT id FROM webhook_deliveries
               WHERE state = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until < $1)
               ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED) pick
         WHERE d.id = pick.id RETURNING d.*)
       SELECT ${DELIVERY_COLUMNS} FROM due d JOIN webhook_events e ON e.seq = d.event_seq ORDER BY d.next_attempt_at`,
      [now, new Date(now.getTime() + leaseMs), limit],
    );
    return rows.map(toDelivery);
  }

  async markDelivered(marks: ReadonlyArray<{ id: string; status: number }>, at: Date): Promise<void> {
    await this.pool.query(
      `UPDATE webhook_deliveries d SET state = 'delivered', attempts = attempts + 1, last_status = m.status,
         last_error = NULL, delivered_at = $3, next_attempt_at = NULL, lease_until = NULL
       FROM unnest($1::text[], $2::int[]) AS m(id, status) WHERE d.id = m.id`,
      [marks.map((m) => m.id), marks.map((m) => m.status), at],
    );
  }

  async markDeliveryFailed(
    id: string,
    status: number | null,
    error: string,
    nextAttemptAt: Date,
    giveUpAfter: number,
  ): Promise<{ attempts: number; gaveUp: boolean }> {
    const { rows } = await this.pool.query<{ attempts: number; state: string }>(
      `UPDATE webhook_deliveries SET last_status = $1, last_error = $2, lease_until = NULL,
         attempts = attempts + 1,
         state = CASE WHEN attempts + 1 >= $5 THEN 'failed' ELSE 'pending' END,
         next_attempt_at = CASE WHEN attempts + 1 >= $5 THEN NULL ELSE $3::timestamptz END
       WHERE id = $4 AND state = 'pending' RETURNING attempts, state`,
      [status, error, nextAttemptAt, id, giveUpAfter],
    );
    return { attempts: rows[0]?.attempts ?? 0, gaveUp: rows[0]?.state === 'failed' };
  }

  async rotateSecret(id: string, secret: string, previousUntil: Date): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      'UPDATE webhook_endpoints SET previous_secret = secret, previous_until = $1, secret = $2 WHERE id = $3',
      [previousUntil, secret, id],
    );
    return rowCount === 1;
  }

  async retryDelivery(id: string, now: Date): Promise<boolean> {
    return (await this.requeueFailed('id', id, now)) === 1;
  }

  async retryFailedDeliveries(endpointId: string, now: Date): Promise<number> {
    return this.requeueFailed('endpoint_id', endpointId, now);
  }

  /** Failed deliveries (one by id, or an endpoint's) pending again from attempt 0, due `now`. */
  private async requeueFailed(column: 'id' | 'endpoint_id', value: string, now: Date): Promise<number> {
    const { rowCount } = await this.pool.query(
      `UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = $1, lease_until = NULL
       WHERE ${column} = $2 AND state = 'failed'`,
      [now, value],
    );
    return rowCount ?? 0;
  }

  async countFailedDeliveries(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM webhook_deliveries WHERE state = 'failed'",
    );
    return rows[0]?.n ?? 0;
  }

  async listDeliveries(q: DeliveryQuery): Promise<{ records: WebhookDeliveryRecord[]; next: number | null }> {
    // Read through webhook_deliveries_page (endpoint_id[, state], event_seq) in sort order.
    const values: unknown[] = [q.endpointId, q.limit + 1];
    const where = ['d.endpoint_id = $1'];
    if (q.state) where.push(`d.state = $${values.push(q.state)}`);
    if (q.before !== undefined) where.push(`d.event_seq < $${values.push(q.before)}`);
    const { rows } = await this.pool.query<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq
       WHERE ${where.join(' AND ')} ORDER BY d.event_seq DESC LIMIT $2`,
      values,
    );
    const { rows: kept, next } = pageOf(
      rows,
      q.limit,
      (r) => Number(r.seq),
      () => null,
    );
    return { records: kept.map(toDelivery), next };
  }

  async pruneDelivered(before: Date, after: number, limit: number): Promise<PruneStep> {
    return withTransaction(this.pool, async (client) => {
      const { rows } = await client.query<{ seq: string; at: Date }>(
        'SELECT seq, created_at AS at FROM webhook_events WHERE seq > $1 ORDER BY seq LIMIT $2',
        [after, limit],
      );
      const range = pruneRange(
        rows.map((r) => ({ seq: Number(r.seq), at: r.at.getTime() })),
        before.getTime(),
        limit,
      );
      if (!range) return { deliveries: 0, events: 0, next: null };
      // Through the (event_seq, endpoint_id) unique index.
      const deliveries = await client.query(
        `DELETE FROM webhook_deliveries WHERE event_seq BETWEEN $1 AND $2 AND state = 'delivered'
           AND delivered_at < $3`,
        [range.first, range.last, before],
      );
      // The newest event stays, as on SQLite (one rule for both engines).
      const events = await client.query(
        `DELETE FROM webhook_events e WHERE e.seq BETWEEN $1 AND $2 AND e.fanned_out = 1
           AND e.seq < (SELECT max(seq) FROM webhook_events)
           AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = e.seq)`,
        [range.first, range.last],
      );
      return {
        deliveries: deliveries.rowCount ?? 0,
        events: events.rowCount ?? 0,
        next: range.more ? range.last : null,
      };
    });
  }

  async hasNewEvents(): Promise<boolean> {
    // Through the partial index webhook_events_pending: one index page.
    const { rows } = await this.pool.query<{ found: boolean }>({
      name: 'pg-webhook-new-events',
      text: 'SELECT EXISTS (SELECT 1 FROM webhook_events WHERE fanned_out = 0) AS found',
    });
    return rows[0]?.found === true;
  }

  async listCredentialDeliveries(credentialId: string, limit: number): Promise<WebhookDeliveryRecord[]> {
    // The expression and its IS NOT NULL name the partial index of migration 015.
    const { rows } = await this.pool.query<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_events e JOIN webhook_deliveries d ON d.event_seq = e.seq
       WHERE ((e.data::jsonb) ->> 'credentialId') = $1 AND ((e.data::jsonb) ->> 'credentialId') IS NOT NULL
       ORDER BY e.seq DESC, d.created_at DESC LIMIT $2`,
      [credentialId, limit],
    );
    return rows.map(toDelivery);
  }
}
