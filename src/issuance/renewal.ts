import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { AppError, notFound } from '../errors.js';
import { credentialRenewedEvent } from '../events/builders.js';
import { channelFormat } from '../formats/index.js';
import type { IssuerCatalog } from '../identity/issuer-identity.js';
import type { RecipientSealing } from '../keys/recipient-sealing.js';
import type { AuditActor, Logger } from '../model.js';
import type { LoadedSchema } from '../schemas/schema-registry.js';
import type { StatusService } from '../status/status-service.js';
import type { RenewalOutcome, RenewalRecord, RenewalStore } from '../store/renewal-store.js';
import type { IssuanceRecord, IssuanceStore, IssuanceSummary, NamedLockStore } from '../store/store.js';
import { LeasedSweeper } from '../workers/leased-sweeper.js';
import { credentialIdFor, type DirectIssuanceService } from './direct-issuance.js';
import type { IssuanceCore } from './issuance-core.js';

/** Renewal re-issues direct credentials: the direct channel's format. */
const RENEWED = channelFormat('direct');

/**
 * The Idempotency-Key a renewal issues under: the renewing credential's id is derived from it, so
 * a renewal repeated (a crash, a second instance, the next sweep) finds the credential the first
 * made instead of signing another. Starts with NUL, which no HTTP header can carry.
 */
export const renewalKey = (credentialId: string): string => `\u0000renewal\u0000${credentialId}`;

/** The actor of the sweep's audit rows. */
export const RENEWAL_SWEEP_ACTOR = 'renewal-sweep';

const SWEEP_LOCK = 'renewal-sweep';

/** RENEWAL_FINISH_GRACE_DAYS' default, in ms. */
export const RENEWAL_FINISH_GRACE_MS = 30 * 86_400_000;

export interface RenewalDeps {
  core: IssuanceCore;
  direct: DirectIssuanceService;
  /** The issuer whose schemas these are (its catalogue, read at each request: a reload swaps it). */
  identity: { readonly catalog: Pick<IssuerCatalog, 'schemas'> };
  issuances: Pick<IssuanceStore, 'get'>;
  renewals: RenewalStore;
  status: StatusService;
  /** Undefined: no key to open sealed recipients with (nothing is renewable). */
  sealing: RecipientSealing | undefined;
  /** Shared by every process on one database: one sweeps at a time. Absent: this process only. */
  locks?: NamedLockStore | undefined;
  /** RENEWAL_SWEEP_INTERVAL_MS. */
  sweepMs: number;
  /** Credentials one sweep takes per schema (the rest wait for the next sweep). */
  batchSize?: number;
  /** How long a sweep holds the lock; it takes no new credential past half of it. */
  leaseMs?: number;
  /**
   * RENEWAL_FINISH_GRACE_DAYS in ms: how long after a credential expired the sweep still finishes
   * a renewal of it that was cut short (never starts one). Bounds what one sweep reads.
   */
  finishGraceMs?: number;
  log?: Logger | undefined;
  now?: () => Date;
}

/** What one renewal did. */
export interface RenewResult {
  outcome: 'renewed';
  previous: IssuanceRecord;
  record: IssuanceSummary;
  previousRevoked: boolean;
}

/** What one sweep did, by outcome (failures are retried by the next sweep). */
export interface SweepReport {
  /** False when another instance held the sweep. */
  ran: boolean;
  renewed: number;
  skipped: number;
  failed: number;
}

export interface RenewalEvents {
  swept: [report: SweepReport];
}

/** A credential renewal refuses (409), with what the sweep records for it, if anything. */
class NotRenewed extends AppError {
  constructor(
    message: string,
    readonly outcome?: Exclude<RenewalOutcome, 'renewed'>,
  ) {
    super('CONFLICT', message, { field: 'credentialId' });
  }
}

/**
 * Renewal (docs/operations.md "Renewal"): a direct credential re-issued to the same holder with
 * claims looked up again, by the sweep for schemas that declare `renewal`, or on demand
 * (`POST /admin/renew`). The holder is found again by the recipient email kept sealed at issuance
 * (initialize-user is the hosting service's only key to its user); the claims come from the
 * schema's claims provider for the user id kept at issuance, else the holder's user id.
 */
export class RenewalService extends EventEmitter<RenewalEvents> {
  readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly batchSize: number;
  private readonly leaseMs: number;
  private readonly finishGraceMs: number;
  private readonly now: () => Date;
  /** A sweep every `sweepMs` once started; stopped, a sweep does nothing. */
  private readonly loop: LeasedSweeper<SweepReport>;

  constructor(private readonly deps: RenewalDeps) {
    super();
    this.batchSize = Math.max(1, deps.batchSize ?? 100);
    this.leaseMs = deps.leaseMs ?? 300_000;
    this.finishGraceMs = Math.max(0, deps.finishGraceMs ?? RENEWAL_FINISH_GRACE_MS);
    this.now = deps.now ?? (() => new Date());
    this.loop = new LeasedSweeper(() => this.sweepOnce(), deps.sweepMs);
  }

  /** Schemas whose direct credentials the sweep renews. */
  renewedSchemas(): LoadedSchema[] {
    return this.deps.identity.catalog.schemas
      .all()
      .filter((s) => s.renewal !== undefined && this.deps.core.issues(s, RENEWED));
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** One sweep (a sweep already running in this process is joined, not doubled). */
  sweep(): Promise<SweepReport> {
    return this.loop.run();
  }

  private async sweepOnce(): Promise<SweepReport> {
    const report: SweepReport = { ran: false, renewed: 0, skipped: 0, failed: 0 };
    const schemas = this.renewedSchemas();
    if (schemas.length === 0 || !this.loop.running) return this.swept(report);
    const locks = this.deps.locks;
    try {
      if (locks && !(await locks.tryAcquire(SWEEP_LOCK, this.owner, this.leaseMs))) return this.swept(report);
    } catch (err) {
      this.deps.log?.warn(
        { event: 'renewal_sweep_failed', error: (err as Error).message },
        'renewal sweep failed',
      );
      return this.swept(report);
    }
    report.ran = true;
    const until = Date.now() + this.leaseMs / 2;
    try {
      for (const schema of schemas) {
        const now = this.now();
        const window = schema.renewal!.beforeExpirySeconds * 1000;
        const due = await this.deps.renewals.due(
          schema.schemaId,
          {
            finishSince: new Date(now.getTime() - this.finishGraceMs),
            from: now,
            until: new Date(now.getTime() + window),
          },
          this.batchSize,
        );
        for (const credentialId of due) {
          if (!this.loop.running || Date.now() > until) break;
          try {
            await this.renewOrFinish(
              credentialId,
              { actor: RENEWAL_SWEEP_ACTOR, reason: 'renewal sweep' },
              // The due read's own now: a credential it took as expired is only finished.
              now,
            );
            report.renewed++;
          } catch (err) {
            if (err instanceof NotRenewed && err.outcome) report.skipped++;
            else {
              report.failed++;
              this.deps.log?.warn(
                { event: 'renewal_failed', credentialId, error: (err as Error).message },
                `renewal of ${credentialId} failed; the next sweep tries again`,
              );
            }
          }
        }
      }
    } catch (err) {
      this.deps.log?.warn(
        { event: 'renewal_sweep_failed', error: (err as Error).message },
        'renewal sweep failed',
      );
    } finally {
      await locks?.release(SWEEP_LOCK, this.owner).catch(() => undefined);
    }
    if (report.renewed + report.skipped + report.failed > 0)
      this.deps.log?.info({ event: 'renewal_sweep', ...report }, 'renewal sweep');
    return this.swept(report);
  }

  private swept(report: SweepReport): SweepReport {
    this.emit('swept', report);
    return report;
  }

  /**
   * Renews one credential: 404 unknown; 409 (`CONFLICT`, naming `credentialId`) when it cannot be
   * renewed: not direct, revoked or suspended, renewed already, no sealed recipient, or a holder
   * the claims provider no longer finds eligible (the last two are recorded, with an audit row).
   */
  renew(credentialId: string, audit: AuditActor): Promise<RenewResult> {
    return this.renewOrFinish(credentialId, audit, undefined);
  }

  /**
   * `renew`, except that a credential expired at `finishOnlyExpiredAt` is only finished (the
   * sweep's renewals cut short, taken up to RENEWAL_FINISH_GRACE_DAYS after expiry): without a
   * renewing credential recorded, nothing is signed and nothing recorded.
   */
  private async renewOrFinish(
    credentialId: string,
    audit: AuditActor,
    finishOnlyExpiredAt: Date | undefined,
  ): Promise<RenewResult> {
    const previous = await this.deps.issuances.get(credentialId);
    if (!previous) throw notFound(`credentialId: no credential ${credentialId}`);
    if (previous.channel !== 'direct')
      throw new NotRenewed(
        `credentialId: a ${previous.channel} credential is issued again only with its holder present (only direct credentials are renewed)`,
      );
    if (previous.proofType !== RENEWED)
      throw new NotRenewed(
        `credentialId: a direct ${previous.proofType} credential went to a holder key, not through the hosting service: issue it again (only ${RENEWED} is renewed)`,
      );
    const source = await this.deps.renewals.get(credentialId);
    if (source?.outcome === 'renewed')
      throw new NotRenewed(`credentialId: already renewed by ${source.renewedBy}`);
    const schema = this.deps.identity.catalog.schemas.get(previous.schemaId);
    if (!schema || !this.deps.core.issues(schema, RENEWED))
      throw new NotRenewed(`credentialId: schema ${previous.schemaId} is not issued as ${RENEWED} any more`);
    // A renewal cut short (a crash after its credential was recorded) is finished, not started again.
    const renewing = credentialIdFor(renewalKey(credentialId));
    const recorded = await this.deps.issuances.get(renewing);
    if (recorded) return this.finish(previous, schema, recorded, audit);
    if (finishOnlyExpiredAt && previous.expiresAt.getTime() <= finishOnlyExpiredAt.getTime())
      throw new NotRenewed('credentialId: the credential has expired and no renewal of it was begun');
    const record = await this.issueRenewal(previous, schema, source, renewing, audit);
    return this.finish(previous, schema, record, audit);
  }

  /** Checks that `previous` may be renewed now, and issues the credential that renews it. */
  private async issueRenewal(
    previous: IssuanceRecord,
    schema: LoadedSchema,
    source: RenewalRecord | undefined,
    renewing: string,
    audit: AuditActor,
  ): Promise<IssuanceSummary> {
    const credentialId = previous.credentialId;
    if (previous.status !== 0)
      throw new NotRenewed(
        `credentialId: the credential is ${previous.status === 1 ? 'revoked' : 'suspended'}`,
      );
    const skip = async (outcome: 'ineligible' | 'not_renewable', detail: string): Promise<never> => {
      await this.deps.renewals.recordOutcome(credentialId, previous.schemaId, previous.expiresAt, {
        outcome,
        detail,
        at: this.now(),
        audit: { ...audit, reason: detail, action: 'renewal.skipped' },
      });
      this.deps.log?.info(
        { event: 'renewal_skipped', credentialId, outcome, actor: audit.actor },
        `renewal of ${credentialId} skipped: ${detail}`,
      );
      throw new NotRenewed(`credentialId: ${detail}`, outcome);
    };
    if (!source?.recipientSealed)
      return skip(
        'not_renewable',
        'no sealed recipient email is kept for it (issued before renewal existed, or without KEY_ENCRYPTION_KEY in production)',
      );
    let email: string;
    try {
      if (!this.deps.sealing) throw new Error('no key');
      email = this.deps.sealing.open(credentialId, source.recipientSealed);
    } catch {
      return skip('not_renewable', 'its sealed recipient email does not open with this KEY_ENCRYPTION_KEY');
    }

    // docs/operations.md "Renewal": the user id the claims came from, else the holder's (as hosted issuance asks).
    const userId = source.claimsUserId ?? previous.userId;
    const answer = await this.deps.core.lookupClaims(schema, userId, RENEWED);
    if (!answer.eligible)
      return skip('ineligible', 'the claims provider no longer finds the holder eligible');
    const { id: _id, ...claims } = answer.credentialSubject;
    const expiresAt = answer.expiresAt ?? new Date(this.now().getTime() + schema.expiresInSeconds * 1000);

    const issued = await this.deps.direct
      .issue({
        credentialSubject: claims,
        claimsFrom: userId,
        email,
        schemaId: schema.schemaId,
        vct: schema.sdJwt.vct,
        expiresAt,
        onDuplicate: 'allow',
        idempotencyKey: renewalKey(credentialId),
        audit,
        renewedFrom: credentialId,
      })
      .catch((err: unknown) => {
        // Recorded, and the hosting service refused the upload for now: the outbox keeps it.
        const recorded = (err as AppError).details as { credentialId?: unknown } | undefined;
        if (!(err instanceof AppError && recorded?.credentialId === renewing)) throw err;
        return undefined;
      });
    const record = issued?.record ?? (await this.deps.issuances.get(renewing));
    if (!record) throw new AppError('INTERNAL', 'the renewing credential is not recorded');
    return record;
  }

  /**
   * After the renewing credential is recorded: the previous one revoked (`revokePrevious`), then
   * the outcome with its audit row and event, last, so that a crash between is finished by the
   * next attempt (the sweep takes a credential with a renewing one and no outcome, until
   * RENEWAL_FINISH_GRACE_DAYS after it expired).
   */
  private async finish(
    previous: IssuanceRecord,
    schema: LoadedSchema,
    record: IssuanceSummary,
    audit: AuditActor,
  ): Promise<RenewResult> {
    const credentialId = previous.credentialId;
    let previousRevoked = false;
    if (schema.renewal?.revokePrevious && previous.status !== 1) {
      await this.deps.status.change(previous.revocationNonce, 'revoke', previous.proofType, audit);
      previousRevoked = true;
    }
    await this.deps.renewals.recordOutcome(credentialId, previous.schemaId, previous.expiresAt, {
      outcome: 'renewed',
      renewedBy: record.credentialId,
      detail: audit.reason ?? 'renewed',
      at: this.now(),
      audit: { ...audit, action: 'renew' },
      // docs/operations.md "Webhooks": no claim values.
      event: credentialRenewedEvent(record.credentialId, credentialId, schema.schemaId),
    });
    this.deps.log?.info(
      { event: 'renewed', credentialId: record.credentialId, renewedFrom: credentialId, actor: audit.actor },
      `${credentialId} renewed by ${record.credentialId}`,
    );
    return { outcome: 'renewed', previous, record, previousRevoked };
  }
}
