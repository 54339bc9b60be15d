import type Database from 'better-sqlite3';
import { pageOf } from '../keyset.js';
import { DELIVERY_COLUMNS } from '../webhook-row.js';
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
import type { SqliteDatabase } from './database.js';
import {
  CREDENTIAL_DELIVERIES_SQL,
  type DeliveryRow,
  deliveriesPageSql,
  type EndpointRow,
  toDelivery,
  toEndpoint,
  WAITING_EVENTS_SQL,
} from './sqlite-webhook-rows.js';

/** Per connection: the endpoints at a `data_version` (shared by every store on the connection). */
const endpointCache = new WeakMap<
  SqliteDatabase,
  { version: number; endpoints: ReadonlyArray<{ id: string; events: string[] }> }
>();

/**
 * The webhook tables. `insertEvent` is synchronous so that the issuance and status stores write
 * an event inside their own transaction on the same connection.
 */
export class SqliteWebhookStore implements WebhookStore {
  private readonly stmts;
  private readonly prune: Database.Transaction<(before: Date, after: number, limit: number) => PruneStep>;
  private readonly markAll: Database.Transaction<
    (marks: ReadonlyArray<{ id: string; status: number }>, when: string) => void
  >;

  constructor(private readonly db: SqliteDatabase) {
    this.stmts = {
      // Fanned out later, by the worker that leases it (leaseDueDeliveries).
      // credential_at: the named credential's created_at, the first key of webhook_events_credential
      // (migration 018), so that an issuance's events go to the tail of that index.
      insertEvent: db.prepare(
        `INSERT INTO webhook_events (id, type, data, created_at, credential_at) VALUES (?, ?, ?, ?,
           (SELECT created_at FROM issuances WHERE credential_id = json_extract(?, '$.credentialId')))`,
      ),
      subscriptions: db.prepare<[], { id: string; events: string }>(
        'SELECT id, events FROM webhook_endpoints',
      ),
      dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
      addEndpoint: db.prepare(
        `INSERT INTO webhook_endpoints (id, url, events, description, secret, created_at)
         VALUES (@id, @url, @events, @description, @secret, @createdAt)`,
      ),
      endpoints: db.prepare<[], EndpointRow>('SELECT * FROM webhook_endpoints ORDER BY created_at, id'),
      endpoint: db.prepare<[string], EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = ?'),
      removeDeliveries: db.prepare('DELETE FROM webhook_deliveries WHERE endpoint_id = ?'),
      removeEndpoint: db.prepare('DELETE FROM webhook_endpoints WHERE id = ?'),
      // Through the partial index webhook_events_pending: one index page.
      newEvents: db
        .prepare<[], number>('SELECT EXISTS (SELECT 1 FROM webhook_events WHERE fanned_out = 0)')
        .pluck(),
      waiting: db.prepare<[number], { seq: number; type: string }>(
        'SELECT seq, type FROM webhook_events WHERE fanned_out = 0 ORDER BY seq LIMIT ?',
      ),
      waitingEvents: db.prepare<
        [number],
        { seq: number; id: string; type: string; data: string; created_at: number }
      >(WAITING_EVENTS_SQL),
      fanned: db.prepare('UPDATE webhook_events SET fanned_out = 1 WHERE seq = ?'),
      addLeasedDelivery: db.prepare(
        `INSERT OR IGNORE INTO webhook_deliveries (id, event_seq, endpoint_id, next_attempt_at, lease_until, created_at)
         VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      addDelivery: db.prepare(
        `INSERT OR IGNORE INTO webhook_deliveries (id, event_seq, endpoint_id, next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, ?)`,
      ),
      credentialDeliveries: db.prepare<{ id: string; limit: number }, DeliveryRow>(CREDENTIAL_DELIVERIES_SQL),
      due: db.prepare<[number, number, number], DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq
         WHERE d.state = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?)
         ORDER BY d.next_attempt_at LIMIT ?`,
      ),
      lease: db.prepare(
        'UPDATE webhook_deliveries SET lease_until = ? WHERE id IN (SELECT value FROM json_each(?))',
      ),
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
      retryEndpoint: db.prepare(
        `UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ?, lease_until = NULL
         WHERE endpoint_id = ? AND state = 'failed'`,
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
      pruneWindow: db.prepare<[number, number], { seq: number; at: number }>(
        'SELECT seq, created_at AS at FROM webhook_events WHERE seq > ? ORDER BY seq LIMIT ?',
      ),
      // Through the (event_seq, endpoint_id) unique index.
      pruneDeliveries: db.prepare(
        `DELETE FROM webhook_deliveries WHERE event_seq BETWEEN ? AND ? AND state = 'delivered'
           AND delivered_at < ?`,
      ),
      // Never the newest event: a new event's seq is the largest rowid plus one (migration 018).
      pruneEvents: db.prepare(
        `DELETE FROM webhook_events WHERE seq BETWEEN ? AND ? AND fanned_out = 1
           AND seq < (SELECT max(seq) FROM webhook_events)
           AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = webhook_events.seq)`,
      ),
    };
    this.prune = db.transaction((before: Date, after: number, limit: number): PruneStep => {
      const range = pruneRange(this.stmts.pruneWindow.all(after, limit), before.getTime(), limit);
      if (!range) return { deliveries: 0, events: 0, next: null };
      const deliveries = this.stmts.pruneDeliveries.run(
        range.first,
        range.last,
        before.toISOString(),
      ).changes;
      const events = this.stmts.pruneEvents.run(range.first, range.last).changes;
      return { deliveries, events, next: range.more ? range.last : null };
    });
    this.markAll = db.transaction((marks: ReadonlyArray<{ id: string; status: number }>, when: string) =>
      this.markRows(marks, when),
    );
  }

  /**
   * Writes `event` when an endpoint exists; call inside the transaction of the change. Only the
   * event row: its deliveries are made by the worker that leases it (`leaseDueDeliveries`), many
   * in one transaction, so a change's commit writes the pages of one table and its indexes, not
   * those of the deliveries' too (a commit writes every page it touched, and a group commit of a
   * few changes touches the same table tails).
   */
  insertEvent(event: NewWebhookEvent, at: Date): void {
    if (this.subscriptions().length === 0) return;
    this.stmts.insertEvent.run(event.id, event.type, event.data, at.getTime(), event.data);
  }

  async hasNewEvents(): Promise<boolean> {
    return this.stmts.newEvents.get() === 1;
  }

  /**
   * The endpoints and their subscriptions, without reading the endpoints table on every change:
   * the list is kept per connection and read again after this connection changed the endpoints,
   * or when `PRAGMA data_version` says another connection (another process on the file) committed.
   */
  private subscriptions(): ReadonlyArray<{ id: string; events: string[] }> {
    const seen = endpointCache.get(this.db);
    const version = this.stmts.dataVersion.get()!;
    if (seen && seen.version === version) return seen.endpoints;
    const endpoints = this.stmts.subscriptions
      .all()
      .map((r) => ({ id: r.id, events: JSON.parse(r.events) as string[] }));
    endpointCache.set(this.db, { version, endpoints });
    return endpoints;
  }

  /** This connection changed the endpoints (its own commits do not move `data_version`). */
  private endpointsChanged(): void {
    endpointCache.delete(this.db);
  }

  async recordEvent(event: NewWebhookEvent, at: Date): Promise<void> {
    this.insertEvent(event, at);
  }

  async addEndpoint(e: NewWebhookEndpoint): Promise<void> {
    this.endpointsChanged();
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
    this.endpointsChanged();
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
            if (subscribes(ep.events, ev.type))
              this.stmts.addDelivery.run(newId(), ev.seq, ep.id, now.getTime(), now.toISOString());
          this.stmts.fanned.run(ev.seq);
        }
        return events.length;
      })
      .immediate();
  }

  /**
   * Fans out events not yet fanned out into deliveries already leased to the caller, then leases
   * due deliveries (retries, and those a dead instance held) up to `limit`: one transaction.
   */
  async leaseDueDeliveries(
    now: Date,
    leaseMs: number,
    limit: number,
    delivered?: DeliveredMarks,
  ): Promise<WebhookDeliveryRecord[]> {
    const t = now.getTime();
    const until = t + leaseMs;
    // Most sweeps have no marks, no waiting event and nothing due: reads (the WAL's snapshot)
    // answer them without the write lock an IMMEDIATE transaction takes.
    if (
      !delivered &&
      this.stmts.waitingEvents.all(1).length === 0 &&
      this.stmts.due.all(t, t, 1).length === 0
    )
      return [];
    return this.db
      .transaction(() => {
        // The previous batch's marks share this commit: the rows they change sit on the pages
        // (table and index tails) that this batch's new deliveries are written to.
        if (delivered) {
          const when = delivered.at.toISOString();
          this.markRows(delivered.marks, when);
        }
        const batch = this.fanOutLeased(now, until, limit);
        if (batch.length >= limit) return batch;
        const rows = this.stmts.due.all(t, t, limit - batch.length);
        if (rows.length > 0) this.stmts.lease.run(until, JSON.stringify(rows.map((r) => r.id)));
        for (const r of rows) batch.push(toDelivery(r));
        return batch;
      })
      .immediate();
  }

  /** Inside a transaction: one delivery per subscribed endpoint of each waiting event, leased until `until`. */
  private fanOutLeased(now: Date, until: number, limit: number): WebhookDeliveryRecord[] {
    const batch: WebhookDeliveryRecord[] = [];
    const endpoints = this.subscriptions();
    const t = now.getTime();
    const created = now.toISOString();
    // An event no endpoint subscribes to makes no delivery: take more until the batch is full.
    while (batch.length < limit) {
      const room = Math.max(1, Math.floor((limit - batch.length) / Math.max(1, endpoints.length)));
      const events = this.stmts.waitingEvents.all(room);
      if (events.length === 0) break;
      for (const ev of events) {
        for (const ep of endpoints) {
          if (!subscribes(ep.events, ev.type)) continue;
          const id = newWebhookDeliveryId();
          if (this.stmts.addLeasedDelivery.run(id, ev.seq, ep.id, t, until, created).changes === 0) continue;
          batch.push({
            id,
            endpointId: ep.id,
            eventId: ev.id,
            type: ev.type,
            data: ev.data,
            sequence: ev.seq,
            eventAt: new Date(ev.created_at),
            state: 'pending',
            attempts: 0,
            nextAttemptAt: now,
            lastStatus: null,
            lastError: null,
            deliveredAt: null,
            createdAt: now,
          });
        }
        this.stmts.fanned.run(ev.seq);
      }
    }
    return batch;
  }

  /** The "delivered" marks, inside the caller's transaction. */
  private markRows(marks: ReadonlyArray<{ id: string; status: number }>, when: string): void {
    for (const m of marks) this.stmts.delivered.run(m.status, when, m.id);
  }

  async markDelivered(marks: ReadonlyArray<{ id: string; status: number }>, at: Date): Promise<void> {
    const when = at.toISOString();
    if (marks.length === 1) this.stmts.delivered.run(marks[0]!.status, when, marks[0]!.id);
    else this.markAll.immediate(marks, when);
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

  async retryFailedDeliveries(endpointId: string, now: Date): Promise<number> {
    return this.stmts.retryEndpoint.run(now.getTime(), endpointId).changes;
  }

  async countFailedDeliveries(): Promise<number> {
    return this.stmts.failedCount.get()?.n ?? 0;
  }

  async listDeliveries(q: DeliveryQuery): Promise<{ records: WebhookDeliveryRecord[]; next: number | null }> {
    // Read through webhook_deliveries_page (endpoint_id[, state], event_seq) in sort order.
    const rows = this.db.prepare<Record<string, string | number>, DeliveryRow>(deliveriesPageSql(q)).all({
      endpointId: q.endpointId,
      take: q.limit + 1,
      ...(q.state ? { state: q.state } : {}),
      ...(q.before === undefined ? {} : { before: q.before }),
    });
    const { rows: kept, next } = pageOf(
      rows,
      q.limit,
      (r) => r.seq,
      () => null,
    );
    return { records: kept.map(toDelivery), next };
  }

  async pruneDelivered(before: Date, after: number, limit: number): Promise<PruneStep> {
    return this.prune.immediate(before, after, limit);
  }

  async listCredentialDeliveries(credentialId: string, limit: number): Promise<WebhookDeliveryRecord[]> {
    return this.stmts.credentialDeliveries.all({ id: credentialId, limit }).map(toDelivery);
  }
}
