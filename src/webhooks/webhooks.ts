import { type KeyObject, randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { backoffWithJitter } from '../issuance/backoff.js';
import { openSealedKey, sealJson } from '../keys/sealed-key.js';
import type { Logger } from '../model.js';
import type { NamedLockStore } from '../store/store.js';
import {
  WEBHOOK_SECRET_PURPOSE,
  type WebhookDeliveryRecord,
  type WebhookDeliveryState,
  type WebhookEndpointRecord,
  type WebhookStore,
} from '../store/webhook-store.js';
import { type DeliveryResult, type OutgoingDelivery, WebhookSender } from './deliver.js';
import type { EndpointPolicy } from './endpoint-address.js';
import { newWebhookSecret, webhookHeaders, webhookSigningKey } from './signature.js';

const SEAL_PURPOSE = WEBHOOK_SECRET_PURPOSE;
/** How long a replaced secret keeps signing beside the new one. */
export const ROTATION_OVERLAP_MS = 24 * 3600_000;

export interface WebhookOptions {
  policy: EndpointPolicy;
  /** Seals secrets at rest (PostgreSQL, like the keys); undefined: stored as they are. */
  kek: Buffer | undefined;
  /** WEBHOOK_MAX_ATTEMPTS: attempts before a delivery is `failed`. */
  maxAttempts: number;
  /** Retry delays: doubling from `baseBackoffMs` up to `maxBackoffMs`, with jitter. */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** The sweep interval, shared with the upload outbox (OUTBOX_SWEEP_MS). */
  sweepMs: number;
  leaseMs?: number;
  batchSize?: number;
  /**
   * WEBHOOK_RETENTION_DAYS in ms: delivered deliveries, and events with no delivery left, older
   * than this are deleted; 0 keeps them. Default 30 days.
   */
  retentionMs?: number;
  /** How often the purge runs (default hourly), and the events per purge step (default 200). */
  pruneEveryMs?: number;
  pruneBatch?: number;
  /** How often the worker looks for new events between sweeps (default `NEW_EVENT_LOOK_MS`). */
  lookMs?: number;
  /** How long a receiver has to answer (default `DELIVERY_TIMEOUT_MS`, docs/operations.md "Webhooks"). */
  deliveryTimeoutMs?: number;
  /** Shared by every process on the database: one purge at a time among them. */
  locks?: NamedLockStore | undefined;
  log?: Logger;
}

/**
 * The worker's look for new events: a committed event goes out within about this long, from
 * whichever process wrote it (another instance, a worker, the admin CLI), instead of at the next
 * sweep. One index page per look. Not LISTEN/NOTIFY: PostgreSQL serialises the commits of every
 * transaction that notifies (a lock held through the commit's WAL flush), and the kit's writes of
 * every instance would then commit one at a time.
 */
export const NEW_EVENT_LOOK_MS = 250;
/** The purge's lock, and its lease (renewed at each step). */
const PRUNE_LOCK = 'webhook-prune';
const PRUNE_LEASE_MS = 60_000;
/** The pause between two purge steps, so that the purge never holds the database's writes for long. */
const PRUNE_PAUSE_MS = 20;

/** WEBHOOK_RETENTION_DAYS' default. */
export const DEFAULT_RETENTION_DAYS = 30;

/**
 * How many batches of deliveries may wait on their answers at once: a receiver that does not
 * answer keeps its deliveries out for up to its timeout, while the others' next ones go out.
 */
const BATCHES_IN_FLIGHT = 4;

/** Deliveries answered 2xx (`deliveries[i]` got `marks[i]`), not yet marked. */
interface Answered {
  marks: Array<{ id: string; status: number }>;
  deliveries: WebhookDeliveryRecord[];
  at: Date;
}

export interface WebhookEvents {
  delivered: [delivery: WebhookDeliveryRecord, status: number];
  failed: [delivery: WebhookDeliveryRecord, error: string, attempts: number];
  gave_up: [delivery: WebhookDeliveryRecord, error: string, attempts: number];
}

/** An endpoint as the admin API shows it: never its secret. */
export interface WebhookEndpointView {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  createdAt: string;
}

/** A delivery as the admin API shows it. */
export interface WebhookDeliveryView {
  id: string;
  eventId: string;
  type: string;
  sequence: number;
  state: WebhookDeliveryState;
  attempts: number;
  nextAttemptAt: string | null;
  lastStatus: number | null;
  lastError: string | null;
  deliveredAt: string | null;
  createdAt: string;
}

const deliveryView = (d: WebhookDeliveryRecord): WebhookDeliveryView => ({
  id: d.id,
  eventId: d.eventId,
  type: d.type,
  sequence: d.sequence,
  state: d.state,
  attempts: d.attempts,
  nextAttemptAt: d.nextAttemptAt?.toISOString() ?? null,
  lastStatus: d.lastStatus,
  lastError: d.lastError,
  deliveredAt: d.deliveredAt?.toISOString() ?? null,
  createdAt: d.createdAt.toISOString(),
});

const view = (e: WebhookEndpointRecord): WebhookEndpointView => ({
  id: e.id,
  url: e.url,
  events: e.events,
  description: e.description,
  createdAt: e.createdAt.toISOString(),
});

/**
 * Webhook endpoints and the delivery worker. Events come from the event outbox the stores write
 * beside each change; every instance sweeps it every `sweepMs` (fan-out, then due deliveries under
 * a lease), so a delivery is attempted by one instance at a time and survives a restart.
 */
export class Webhooks extends EventEmitter<WebhookEvents> {
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  /** A new event was announced during a sweep, possibly after its last look: sweep once more. */
  private again = false;
  private looker: NodeJS.Timeout | undefined;
  private looking = false;
  private pruner: NodeJS.Timeout | undefined;
  private pruning: Promise<{ deliveries: number; events: number }> | undefined;
  private running = false;
  private readonly maxBackoffMs: number;
  private readonly baseBackoffMs: number;
  private readonly leaseMs: number;
  private readonly batchSize: number;
  /** WEBHOOK_RETENTION_DAYS in ms; 0 keeps everything. */
  private readonly retentionMs: number;
  private readonly sender: WebhookSender;
  private readonly signingKeys = new Map<string, KeyObject>();
  /** Deliveries sent and not yet settled (answered, and a failure's mark written), in all and per endpoint. */
  private inFlight = 0;
  private readonly inFlightTo = new Map<string, number>();
  /** Deliveries answered 2xx whose marks are not yet written (by the next lease). */
  private answered: Answered | undefined;
  /** Something the sweep waits for happened (see `poke`); `nudge` ends its wait. */
  private poked = false;
  private nudge: (() => void) | undefined;

  constructor(
    private readonly store: WebhookStore,
    private readonly options: WebhookOptions,
  ) {
    super();
    // About a day over 15 attempts: 30 s doubling, capped at 3 h.
    this.baseBackoffMs = options.baseBackoffMs ?? 30_000;
    this.maxBackoffMs = options.maxBackoffMs ?? 3 * 3600_000;
    // A delivery attempt lasts at most DELIVERY_TIMEOUT_MS (10 s); the lease outlasts it.
    this.leaseMs = options.leaseMs ?? 60_000;
    this.batchSize = options.batchSize ?? 64;
    this.retentionMs = options.retentionMs ?? DEFAULT_RETENTION_DAYS * 86_400_000;
    this.sender = new WebhookSender(options.policy, options.deliveryTimeoutMs);
  }

  /** Registers an endpoint; answers it with its secret, which is shown this once. */
  async add(input: {
    url: string;
    events: string[];
    description?: string | undefined;
  }): Promise<WebhookEndpointView & { secret: string }> {
    const id = `wh_${randomUUID()}`;
    const secret = newWebhookSecret();
    const createdAt = new Date();
    await this.store.addEndpoint({
      id,
      url: input.url,
      events: input.events,
      description: input.description ?? null,
      secret: this.options.kek ? sealJson(this.options.kek, id, SEAL_PURPOSE, secret) : secret,
      createdAt,
    });
    return {
      id,
      url: input.url,
      events: input.events,
      description: input.description ?? null,
      createdAt: createdAt.toISOString(),
      secret,
    };
  }

  async list(): Promise<WebhookEndpointView[]> {
    return (await this.store.listEndpoints()).map(view);
  }

  remove(id: string): Promise<boolean> {
    return this.store.removeEndpoint(id);
  }

  /**
   * A new secret for the endpoint, shown this once; the old one keeps signing beside it (a
   * second `v1,` signature) for `ROTATION_OVERLAP_MS`, so receivers can switch without a gap.
   * Undefined when there is no such endpoint.
   */
  async rotateSecret(
    id: string,
  ): Promise<{ id: string; secret: string; previousValidUntil: string } | undefined> {
    const secret = newWebhookSecret();
    const until = new Date(Date.now() + ROTATION_OVERLAP_MS);
    const stored = this.options.kek ? sealJson(this.options.kek, id, SEAL_PURPOSE, secret) : secret;
    if (!(await this.store.rotateSecret(id, stored, until))) return undefined;
    return { id, secret, previousValidUntil: until.toISOString() };
  }

  /**
   * A page of an endpoint's deliveries (newest event first; `before`: the previous page's `next`),
   * or undefined when there is no such endpoint.
   */
  async deliveries(
    id: string,
    query: { state?: WebhookDeliveryState | undefined; limit: number; before?: number | undefined },
  ): Promise<{ deliveries: WebhookDeliveryView[]; next: number | null } | undefined> {
    if (!(await this.store.getEndpoint(id))) return undefined;
    const { records, next } = await this.store.listDeliveries({ endpointId: id, ...query });
    return { deliveries: records.map(deliveryView), next };
  }

  /** Queues a `failed` delivery again, with the same webhook-id; false when it is not `failed`. */
  async retry(deliveryId: string): Promise<boolean> {
    const resumed = await this.store.retryDelivery(deliveryId, new Date());
    if (resumed) this.wake();
    return resumed;
  }

  /**
   * Queues every `failed` delivery of an endpoint again (same webhook-ids, attempts from 0): the
   * receiver is back after an outage. Answers how many, or undefined when there is no such endpoint.
   */
  async retryFailed(endpointId: string): Promise<number | undefined> {
    if (!(await this.store.getEndpoint(endpointId))) return undefined;
    const resumed = await this.store.retryFailedDeliveries(endpointId, new Date());
    if (resumed > 0) this.wake();
    return resumed;
  }

  countFailed(): Promise<number> {
    return this.store.countFailedDeliveries();
  }

  /**
   * Starts the worker: sweeps every `sweepMs`, and at once when its look (every `lookMs`) finds a
   * new event written by any process; purges old deliveries hourly. Resolves after its first sweep
   * (deliveries left by a previous run go out).
   */
  async start(): Promise<void> {
    this.running = true;
    this.sweeper ??= setInterval(() => void this.sweep(), this.options.sweepMs);
    this.sweeper.unref();
    this.looker ??= setInterval(() => void this.look(), this.options.lookMs ?? NEW_EVENT_LOOK_MS);
    this.looker.unref();
    if (this.retentionMs > 0 && !this.pruner) {
      this.pruner = setInterval(
        () => void this.prune().catch(() => undefined),
        this.options.pruneEveryMs ?? 3_600_000,
      );
      this.pruner.unref();
      // Once at start too: an instance restarted more often than hourly still purges.
      void this.prune().catch(() => undefined);
    }
    await this.sweep();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.poke();
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    if (this.pruner) clearInterval(this.pruner);
    this.pruner = undefined;
    if (this.looker) clearInterval(this.looker);
    this.looker = undefined;
    await this.pruning?.catch(() => undefined);
    await this.sweeping;
    await this.sender.close();
  }

  /** One look at a time, none while a sweep runs (it fans out what it finds anyway). */
  private async look(): Promise<void> {
    if (this.looking || this.sweeping || !this.running) return;
    this.looking = true;
    try {
      if (await this.store.hasNewEvents()) this.wake();
    } catch {
      // The database is away: the sweep logs and retries.
    } finally {
      this.looking = false;
    }
  }

  /** A new event or a queued retry: sweep now, or once more after the sweep under way. */
  wake(): void {
    if (!this.running) return;
    if (this.sweeping) {
      this.again = true;
      this.poke();
    } else void this.sweep();
  }

  /** Ends the sweep's wait for answers: it leases again (new events, due retries, an endpoint free). */
  private poke(): void {
    this.poked = true;
    const nudge = this.nudge;
    this.nudge = undefined;
    nudge?.();
  }

  /** Resolves at the next `poke` (at once when one came since the last lease). */
  private async nudged(): Promise<void> {
    if (!this.poked) await new Promise<void>((resolve) => (this.nudge = resolve));
    this.poked = false;
  }

  /**
   * Deletes delivered deliveries older than the retention, and the events left with no delivery
   * (docs/operations.md "Webhooks"), a bounded step (one short transaction) at a time, pausing
   * between steps so that other writes go in between. Failed and pending deliveries stay. One purge
   * at a time among the processes sharing `locks` (another's running purge: this one does nothing);
   * a stopping worker ends its purge after the current step, and the next run goes on from the
   * oldest event. `now`: the clock the age is measured against.
   */
  prune(now = new Date()): Promise<{ deliveries: number; events: number }> {
    if (this.pruning) return this.pruning;
    const total = { deliveries: 0, events: 0 };
    if (this.retentionMs <= 0) return Promise.resolve(total);
    const before = new Date(now.getTime() - this.retentionMs);
    const locks = this.options.locks;
    const owner = randomUUID();
    this.pruning = (async () => {
      let locked = false;
      try {
        let after: number | null = 0;
        while (after !== null && this.running) {
          if (locks) {
            // Taken, then renewed at each step, so that a long purge keeps it; released at the end.
            locked = locked
              ? await locks.renew(PRUNE_LOCK, owner, PRUNE_LEASE_MS)
              : await locks.tryAcquire(PRUNE_LOCK, owner, PRUNE_LEASE_MS);
            if (!locked) break;
          }
          const step = await this.store.pruneDelivered(before, after, this.options.pruneBatch ?? 200);
          total.deliveries += step.deliveries;
          total.events += step.events;
          after = step.next;
          if (after !== null) await delay(PRUNE_PAUSE_MS);
        }
      } catch (err) {
        this.options.log?.error(
          { event: 'webhook_prune_error', err },
          'webhook retention purge failed; retried at the next run',
        );
        throw err;
      } finally {
        if (locked) await locks?.release(PRUNE_LOCK, owner).catch(() => undefined);
        this.pruning = undefined;
        if (total.deliveries + total.events > 0)
          this.options.log?.info(
            { event: 'webhook_pruned', ...total, before: before.toISOString() },
            'old webhook deliveries deleted',
          );
      }
      return total;
    })();
    return this.pruning;
  }

  /**
   * Fans out new events and attempts every due delivery, a leased batch at a time; one sweep at a
   * time per process (a call during one makes it lease again). Endpoints are delivered
   * independently (docs/operations.md "Webhooks"): the sweep leases again, without waiting for the
   * rest of the batch, as soon as one endpoint has all its deliveries answered, a new event or a
   * due retry is announced, or the sweep interval passes; so a receiver that does not answer holds
   * only its own deliveries, up to their timeout.
   */
  sweep(): Promise<void> {
    if (this.sweeping) {
      this.poke();
      return this.sweeping;
    }
    this.again = false;
    this.sweeping = (async () => {
      const most = this.batchSize * BATCHES_IN_FLIGHT;
      try {
        for (;;) {
          if (!this.running) break;
          this.poked = false;
          // The answered deliveries' "delivered" marks are written by the next lease, in its
          // transaction (one commit for both; docs/benchmarks.md "Webhooks"). Until then their
          // leases keep other instances off them.
          const answered = this.takeAnswered();
          const room = Math.min(this.batchSize, most - this.inFlight);
          let batch: WebhookDeliveryRecord[] = [];
          if (room > 0) batch = await this.store.leaseDueDeliveries(new Date(), this.leaseMs, room, answered);
          else if (answered) await this.store.markDelivered(answered.marks, answered.at);
          this.announce(answered);
          if (batch.length > 0) {
            // One read of the endpoints per batch, not one per delivery.
            const endpoints = new Map((await this.store.listEndpoints()).map((e) => [e.id, e]));
            this.deliver(batch, endpoints);
          }
          if (this.inFlight === 0 && !this.answered) {
            if (batch.length === 0) return;
            continue;
          }
          await this.nudged();
        }
        // Stopping: the deliveries out get their answers (or time out), then the last marks on their own.
        while (this.inFlight > 0) await this.nudged();
        const answered = this.takeAnswered();
        if (answered) {
          await this.store.markDelivered(answered.marks, answered.at);
          this.announce(answered);
        }
      } catch (err) {
        this.options.log?.error({ event: 'webhook_worker_error', err }, 'webhook worker failed; retrying');
      } finally {
        this.sweeping = undefined;
        if (this.again) this.wake();
      }
    })();
    return this.sweeping;
  }

  /** The answered deliveries not yet marked, taken for the next write. */
  private takeAnswered(): Answered | undefined {
    const answered = this.answered;
    this.answered = undefined;
    return answered;
  }

  /** The signing keys of `endpoint` now: its secret's, then a replaced one's while it still signs. */
  private keys(endpoint: WebhookEndpointRecord, now: Date): KeyObject[] {
    const keys = [this.keyOf(endpoint.id, endpoint.secret)];
    if (endpoint.previousSecret && endpoint.previousUntil && endpoint.previousUntil > now)
      keys.push(this.keyOf(endpoint.id, endpoint.previousSecret));
    return keys;
  }

  /** A stored (maybe sealed) secret's HMAC key, opened once and kept while the secret is in use. */
  private keyOf(endpointId: string, stored: string): KeyObject {
    const cacheKey = `${endpointId} ${stored}`;
    let key = this.signingKeys.get(cacheKey);
    if (!key) {
      const secret =
        this.options.kek && !stored.startsWith('whsec_')
          ? (openSealedKey(this.options.kek, endpointId, SEAL_PURPOSE, stored) as string)
          : stored;
      // Rotated and removed endpoints leave stale entries: start afresh rather than grow.
      if (this.signingKeys.size >= 1024) this.signingKeys.clear();
      key = webhookSigningKey(secret);
      this.signingKeys.set(cacheKey, key);
    }
    return key;
  }

  /** Emits `delivered` for marks once they are written. */
  private announce(answered: Answered | undefined): void {
    if (!answered) return;
    for (const [i, d] of answered.deliveries.entries()) this.emit('delivered', d, answered.marks[i]!.status);
  }

  /**
   * Sends a leased batch, every request at once; each answer is settled as it comes (`settle`),
   * not once the whole batch has answered.
   */
  private deliver(
    batch: readonly WebhookDeliveryRecord[],
    endpoints: ReadonlyMap<string, WebhookEndpointRecord>,
  ): void {
    const now = new Date();
    const sent: WebhookDeliveryRecord[] = [];
    const outgoing: OutgoingDelivery[] = [];
    for (const d of batch) {
      const endpoint = endpoints.get(d.endpointId);
      // Removed since the lease: its deliveries went with it.
      if (!endpoint) continue;
      // `{ type, timestamp, sequence, data }`, with `data` as stored (it is JSON already).
      const body = `{"type":${JSON.stringify(d.type)},"timestamp":"${d.eventAt.toISOString()}","sequence":${d.sequence},"data":${d.data}}`;
      outgoing.push({
        url: endpoint.url,
        headers: webhookHeaders(this.keys(endpoint, now), d.id, now, body),
        body,
      });
      sent.push(d);
      this.inFlight++;
      this.inFlightTo.set(d.endpointId, (this.inFlightTo.get(d.endpointId) ?? 0) + 1);
    }
    void this.sender.postEach(outgoing, (i, result) => this.settle(sent[i]!, result));
  }

  /**
   * One delivery's answer: a 2xx waits for the next lease to write its mark; a failure is counted
   * at once (retried after a backoff, or `failed`).
   */
  private settle(d: WebhookDeliveryRecord, result: DeliveryResult): void {
    if (result.ok) {
      this.answered ??= { marks: [], deliveries: [], at: new Date() };
      this.answered.marks.push({ id: d.id, status: result.status ?? 200 });
      this.answered.deliveries.push(d);
      this.answered.at = new Date();
      this.settled(d);
      return;
    }
    this.failed(d, result.status ?? null, result.error ?? 'failed')
      .catch((err: unknown) =>
        this.options.log?.error(
          { event: 'webhook_worker_error', err },
          'webhook attempt not counted; retried once its lease passes',
        ),
      )
      .finally(() => this.settled(d));
  }

  /** A delivery is settled: its endpoint, once it has none left out, gets its next ones now. */
  private settled(d: WebhookDeliveryRecord): void {
    this.inFlight--;
    const left = (this.inFlightTo.get(d.endpointId) ?? 1) - 1;
    if (left > 0) this.inFlightTo.set(d.endpointId, left);
    else {
      this.inFlightTo.delete(d.endpointId);
      this.poke();
    }
  }

  /** Counts a failed attempt: retried after a backoff, or `failed` after the last attempt. */
  private async failed(d: WebhookDeliveryRecord, status: number | null, reason: string): Promise<void> {
    const error = reason.slice(0, 500);
    const next = new Date(
      Date.now() + backoffWithJitter(d.attempts + 1, this.baseBackoffMs, this.maxBackoffMs),
    );
    const { attempts, gaveUp } = await this.store.markDeliveryFailed(
      d.id,
      status,
      error,
      next,
      this.options.maxAttempts,
    );
    this.emit(gaveUp ? 'gave_up' : 'failed', d, error, attempts);
  }
}
