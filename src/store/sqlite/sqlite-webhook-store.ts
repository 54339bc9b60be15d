import type {
  NewWebhookEndpoint,
  NewWebhookEvent,
  WebhookDeliveryRecord,
  WebhookDeliveryState,
  WebhookEndpointRecord,
  WebhookStore,
} from '../webhook-store.js';
import type { SqliteDatabase } from './database.js';

interface EndpointRow {
  id: string;
  url: string;
  events: string;
  description: string | null;
  secret: string;
  previous_secret: string | null;
  previous_until: number | null;
  created_at: string;
}

interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  type: string;
  data: string;
  seq: number;
  event_at: number;
  state: WebhookDeliveryState;
  attempts: number;
  next_attempt_at: number | null;
  last_status: number | null;
  last_error: string | null;
  delivered_at: string | null;
  created_at: string;
}

const toEndpoint = (r: EndpointRow): WebhookEndpointRecord => ({
  id: r.id,
  url: r.url,
  events: JSON.parse(r.events) as string[],
  description: r.description,
  secret: r.secret,
  previousSecret: r.previous_secret,
  previousUntil: r.previous_until === null ? null : new Date(r.previous_until),
  createdAt: new Date(r.created_at),
});

const toDelivery = (r: DeliveryRow): WebhookDeliveryRecord => ({
  id: r.id,
  endpointId: r.endpoint_id,
  eventId: r.event_id,
  type: r.type,
  data: r.data,
  sequence: r.seq,
  eventAt: new Date(r.event_at),
  state: r.state,
  attempts: r.attempts,
  nextAttemptAt: r.next_attempt_at === null ? null : new Date(r.next_attempt_at),
  lastStatus: r.last_status,
  lastError: r.last_error,
  deliveredAt: r.delivered_at === null ? null : new Date(r.delivered_at),
  createdAt: new Date(r.created_at),
});

const DELIVERY_COLUMNS = `d.id, d.endpoint_id, e.id AS event_id, e.type, e.data, e.seq, e.created_at AS event_at,
  d.state, d.attempts, d.next_attempt_at, d.last_status, d.last_error, d.delivered_at, d.created_at`;

/**
 * The webhook tables. `insertEvent` is synchronous so that the issuance and status stores write
 * an event inside their own transaction on the same connection.
 */
export class SqliteWebhookStore implements WebhookStore {
  private readonly stmts;

  constructor(private readonly db: SqliteDatabase) {
    this.stmts = {
      insertEvent: db.prepare(
        `INSERT INTO webhook_events (id, type, data, created_at)
         SELECT @id, @type, @data, @at WHERE EXISTS (SELECT 1 FROM webhook_endpoints)`,
      ),
      addEndpoint: db.prepare(
        `INSERT INTO webhook_endpoints (id, url, events, description, secret, created_at)
         VALUES (@id, @url, @events, @description, @secret, @createdAt)`,
      ),
      endpoints: db.prepare<[], EndpointRow>('SELECT * FROM webhook_endpoints ORDER BY created_at, id'),
      endpoint: db.prepare<[string], EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = ?'),
      removeDeliveries: db.prepare('DELETE FROM webhook_deliveries WHERE endpoint_id = ?'),
      removeEndpoint: db.prepare('DELETE FROM webhook_endpoints WHERE id = ?'),
      waiting: db.prepare<[number], { seq: number; type: string }>(
        'SELECT seq, type FROM webhook_events WHERE fanned_out = 0 ORDER BY seq LIMIT ?',
      ),
      fanned: db.prepare('UPDATE webhook_events SET fanned_out = 1 WHERE seq = ?'),
      addDelivery: db.prepare(
        `INSERT OR IGNORE INTO webhook_deliveries (id, event_seq, endpoint_id, next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, ?)`,
      ),
      due: db.prepare<[number, number, number], DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq
         WHERE d.state = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?)
         ORDER BY d.next_attempt_at LIMIT ?`,
      ),
      lease: db.prepare('UPDATE webhook_deliveries SET lease_until = ? WHERE id = ?'),
      delivered: db.prepare(
        `UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, last_status = ?,
           last_error = NULL, delivered_at = ?, next_attempt_at = NULL, lease_until = NULL WHERE id = ?`,
      ),
      rotate: db.prepare(
        'UPDATE webhook_endpoints SET previous_secret = secret, previous_until = ?, secret = ? WHERE id = ?',
      ),
      retry: db.prepare(
        `UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ?, lease_until = NULL
         WHERE id = ? AND state = 'failed'`,
      ),
      failedCount: db.prepare<[], { n: number }>(
        "SELECT count(*) AS n FROM webhook_deliveries WHERE state = 'failed'",
      ),
      failed: db.prepare<
        { status: number | null; error: string; next: number; id: string; giveUpAfter: number },
        { attempts: number; state: string }
      >(
        `UPDATE webhook_deliveries SET last_status = @status, last_error = @error, lease_until = NULL,
           attempts = attempts + 1,
           state = CASE WHEN attempts + 1 >= @giveUpAfter THEN 'failed' ELSE 'pending' END,
           next_attempt_at = CASE WHEN attempts + 1 >= @giveUpAfter THEN NULL ELSE @next END
         WHERE id = @id AND state = 'pending' RETURNING attempts, state`,
      ),
    };
  }

  /** Writes `event` when an endpoint exists; call inside the transaction of the change. */
  insertEvent(event: NewWebhookEvent, at: Date): void {
    this.stmts.insertEvent.run({ ...event, at: at.getTime() });
  }

  async recordEvent(event: NewWebhookEvent, at: Date): Promise<void> {
    this.insertEvent(event, at);
  }

  async addEndpoint(e: NewWebhookEndpoint): Promise<void> {
    this.stmts.addEndpoint.run({
      id: e.id,
      url: e.url,
      events: JSON.stringify(e.events),
      description: e.description,
      secret: e.secret,
      createdAt: e.createdAt.toISOString(),
    });
  }

  async listEndpoints(): Promise<WebhookEndpointRecord[]> {
    return this.stmts.endpoints.all().map(toEndpoint);
  }

  async getEndpoint(id: string): Promise<WebhookEndpointRecord | undefined> {
    const row = this.stmts.endpoint.get(id);
    return row ? toEndpoint(row) : undefined;
  }

  async removeEndpoint(id: string): Promise<boolean> {
    return this.db
      .transaction(() => {
        this.stmts.removeDeliveries.run(id);
        return this.stmts.removeEndpoint.run(id).changes === 1;
      })
      .immediate();
  }

  async fanOut(now: Date, newId: () => string, limit: number): Promise<number> {
    return this.db
      .transaction(() => {
        const events = this.stmts.waiting.all(limit);
        if (events.length === 0) return 0;
        const endpoints = this.stmts.endpoints.all().map(toEndpoint);
        for (const ev of events) {
          for (const ep of endpoints)
            if (ep.events.includes('*') || ep.events.includes(ev.type))
              this.stmts.addDelivery.run(newId(), ev.seq, ep.id, now.getTime(), now.toISOString());
          this.stmts.fanned.run(ev.seq);
        }
        return events.length;
      })
      .immediate();
  }

  async leaseDueDeliveries(now: Date, leaseMs: number, limit: number): Promise<WebhookDeliveryRecord[]> {
    const t = now.getTime();
    return this.db
      .transaction(() => {
        const rows = this.stmts.due.all(t, t, limit);
        for (const r of rows) this.stmts.lease.run(t + leaseMs, r.id);
        return rows.map(toDelivery);
      })
      .immediate();
  }

  async markDelivered(id: string, status: number, at: Date): Promise<void> {
    this.stmts.delivered.run(status, at.toISOString(), id);
  }

  async markDeliveryFailed(
    id: string,
    status: number | null,
    error: string,
    nextAttemptAt: Date,
    giveUpAfter: number,
  ): Promise<{ attempts: number; gaveUp: boolean }> {
    const row = this.stmts.failed.get({ status, error, next: nextAttemptAt.getTime(), id, giveUpAfter });
    return { attempts: row?.attempts ?? 0, gaveUp: row?.state === 'failed' };
  }

  async rotateSecret(id: string, secret: string, previousUntil: Date): Promise<boolean> {
    return this.stmts.rotate.run(previousUntil.getTime(), secret, id).changes === 1;
  }

  async retryDelivery(id: string, now: Date): Promise<boolean> {
    return this.stmts.retry.run(now.getTime(), id).changes === 1;
  }

  async countFailedDeliveries(): Promise<number> {
    return this.stmts.failedCount.get()?.n ?? 0;
  }

  async listDeliveries(
    endpointId: string,
    state: WebhookDeliveryState | undefined,
    limit: number,
  ): Promise<WebhookDeliveryRecord[]> {
    return this.db
      .prepare<unknown[], DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq
         WHERE d.endpoint_id = ? ${state ? 'AND d.state = ?' : ''} ORDER BY e.seq DESC LIMIT ?`,
      )
      .all(...(state ? [endpointId, state, limit] : [endpointId, limit]))
      .map(toDelivery);
  }

  async listCredentialDeliveries(credentialId: string, limit: number): Promise<WebhookDeliveryRecord[]> {
    // The expression and its IS NOT NULL name the partial index of migration 011.
    return this.db
      .prepare<[string, number], DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_events e JOIN webhook_deliveries d ON d.event_seq = e.seq
         WHERE json_extract(e.data, '$.credentialId') = ? AND json_extract(e.data, '$.credentialId') IS NOT NULL
         ORDER BY e.seq DESC, d.created_at DESC LIMIT ?`,
      )
      .all(credentialId, limit)
      .map(toDelivery);
  }
}
