import { EventEmitter } from 'node:events';
import { backoffWithJitter } from '../issuance/backoff.js';
import type {
  WebhookDeliveryRecord,
  WebhookDeliveryState,
  WebhookEndpointRecord,
  WebhookStore,
} from '../store/webhook-store.js';
import { BackingOffLook } from '../workers/backing-off-look.js';
import { LeasedSweeper } from '../workers/leased-sweeper.js';
import { type DeliveryResult, type OutgoingDelivery, WebhookSender } from './deliver.js';
import { EndpointPresence } from './endpoint-presence.js';
import { addEndpoint, rotateEndpointSecret } from './endpoints.js';
import { WebhookPruner } from './prune.js';
import { webhookHeaders } from './signature.js';
import { WebhookSigningKeys } from './signing-keys.js';
import { deliveryView, endpointView, type WebhookDeliveryView, type WebhookEndpointView } from './views.js';
import { DEFAULT_RETENTION_DAYS, NEW_EVENT_LOOK_MS, type WebhookOptions } from './webhook-options.js';

export { ROTATION_OVERLAP_MS } from './endpoints.js';

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

/**
 * Webhook endpoints and the delivery worker. Events come from the event outbox the stores write
 * beside each change; every instance sweeps it every `sweepMs` (fan-out, then due deliveries under
 * a lease), so a delivery is attempted by one instance at a time and survives a restart.
 */
export class Webhooks extends EventEmitter<WebhookEvents> {
  /**
   * A sweep every `sweepMs` once started, one at a time; a new event announced during a sweep,
   * possibly after its last look, makes it sweep once more.
   */
  private readonly loop: LeasedSweeper;
  private looker: BackingOffLook | undefined;
  private readonly endpoints: EndpointPresence;
  private looking = false;
  private pruner: NodeJS.Timeout | undefined;
  private readonly purge: WebhookPruner;
  private readonly maxBackoffMs: number;
  private readonly baseBackoffMs: number;
  private readonly leaseMs: number;
  private readonly batchSize: number;
  /** WEBHOOK_RETENTION_DAYS in ms; 0 keeps everything. */
  private readonly retentionMs: number;
  private readonly sender: WebhookSender;
  private readonly signingKeys: WebhookSigningKeys;
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
    this.endpoints = new EndpointPresence(() => store.listEndpoints(), options.sweepMs);
    this.loop = new LeasedSweeper(
      () => this.sweepOnce(),
      options.sweepMs,
      () => this.sweep(),
      options.idleSweepMaxMs,
    );
    // About a day over 15 attempts: 30 s doubling, capped at 3 h.
    this.baseBackoffMs = options.baseBackoffMs ?? 30_000;
    this.maxBackoffMs = options.maxBackoffMs ?? 3 * 3600_000;
    // A delivery attempt lasts at most DELIVERY_TIMEOUT_MS (10 s); the lease outlasts it.
    this.leaseMs = options.leaseMs ?? 60_000;
    this.batchSize = options.batchSize ?? 64;
    this.retentionMs = options.retentionMs ?? DEFAULT_RETENTION_DAYS * 86_400_000;
    this.sender = new WebhookSender(options.policy, options.deliveryTimeoutMs);
    this.signingKeys = new WebhookSigningKeys(options.kek);
    this.purge = new WebhookPruner(
      store,
      { retentionMs: this.retentionMs, batch: options.pruneBatch, locks: options.locks, log: options.log },
      () => this.loop.running,
    );
  }

  /** Registers an endpoint; answers it with its secret, which is shown this once (endpoints.ts). */
  async add(input: { url: string; events: string[]; description?: string | undefined }) {
    const added = await addEndpoint(this.store, this.signingKeys, input);
    this.endpoints.added();
    return added;
  }

  async list(): Promise<WebhookEndpointView[]> {
    return (await this.store.listEndpoints()).map(endpointView);
  }

  remove(id: string): Promise<boolean> {
    this.endpoints.removed();
    return this.store.removeEndpoint(id);
  }

  /** A new secret for the endpoint, the old one signing beside it for a while (endpoints.ts). */
  rotateSecret(id: string) {
    return rotateEndpointSecret(this.store, this.signingKeys, id);
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
    this.loop.start();
    const lookMs = this.options.lookMs ?? NEW_EVENT_LOOK_MS;
    this.looker ??= new BackingOffLook(
      () => this.look(),
      lookMs,
      this.options.lookIdleMaxMs ?? lookMs,
      LeasedSweeper.IDLE_AFTER,
    );
    this.looker.start();
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
    const swept = this.loop.stop();
    this.poke();
    if (this.pruner) clearInterval(this.pruner);
    this.pruner = undefined;
    this.looker?.stop();
    this.looker = undefined;
    await this.purge.settled();
    await swept;
    await this.sender.close();
  }

  /**
   * One look at a time; none while a sweep leases (it fans out what it finds anyway), but one while
   * the sweep waits for answers, so that a receiver holding its request does not keep a new event
   * from the other endpoints until the sweep interval.
   */
  private async look(): Promise<boolean | undefined> {
    if (this.looking || !this.loop.running || (this.loop.busy && this.nudge === undefined)) return undefined;
    this.looking = true;
    try {
      if (!(await this.endpoints.mayHaveSome())) return false;
      const found = await this.store.hasNewEvents();
      if (found) this.wake();
      return found;
    } catch {
      // The database is away: the sweep logs and retries.
      return false;
    } finally {
      this.looking = false;
    }
  }

  /**
   * A change was served that may have written an event: a look within the look interval, however
   * far the look has backed off (a tenant's, docs/several-issuers.md "Idle tenants").
   */
  lookSoon(): void {
    this.looker?.soon();
  }

  /** A new event or a queued retry: sweep now, or once more after the sweep under way. */
  wake(): void {
    if (!this.loop.running) return;
    if (this.loop.busy) this.poke();
    this.loop.wake();
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
   * One retention purge (docs/operations.md "Webhooks", prune.ts); a stopping worker ends it after
   * the current step. `now`: the clock the age is measured against.
   */
  prune(now = new Date()): Promise<{ deliveries: number; events: number }> {
    return this.purge.prune(now);
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
    if (this.loop.busy) this.poke();
    return this.loop.run();
  }

  private async sweepOnce(): Promise<void> {
    const most = this.batchSize * BATCHES_IN_FLIGHT;
    try {
      for (;;) {
        if (!this.loop.running) break;
        this.poked = false;
        await this.endpoints.refresh();
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
    }
  }

  /** The answered deliveries not yet marked, taken for the next write. */
  private takeAnswered(): Answered | undefined {
    const answered = this.answered;
    this.answered = undefined;
    return answered;
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
        headers: webhookHeaders(this.signingKeys.keys(endpoint, now), d.id, now, body),
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
