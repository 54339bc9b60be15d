import type { EventEmitter } from 'node:events';
import type { Logger, Telemetry } from '../model.js';
import type { IssuerMetrics } from './metrics.js';

/** What the observer reads of a credential whose upload an outbox reports. */
export interface ReportedUpload {
  credentialId: string;
  uploadAttempts: number;
}

/**
 * The events an upload outbox reports (src/issuance/outbox.ts emits them). Declared here, so that
 * observability depends on no service: the outbox fits this shape.
 */
export interface UploadEvents {
  uploaded: [record: ReportedUpload, storagePath: string | null];
  failed: [record: ReportedUpload, error: Error, nextAttemptAt: Date];
  gave_up: [record: ReportedUpload, error: Error, attempts: number];
}

/**
 * Turns what the services report (`Telemetry`, the outbox's events) into log lines and metric
 * samples: the one place that knows both pino and prom-client names.
 */
export function observe(
  telemetry: Telemetry,
  outbox: Pick<EventEmitter<UploadEvents>, 'on'>,
  metrics: IssuerMetrics,
  log: Logger,
): void {
  telemetry.on('issuance', (e) => {
    metrics.issuances.inc({ proof_type: e.proofType, channel: e.channel, outcome: e.outcome });
  });
  telemetry.on('claimsLookup', (e) => {
    metrics.claimsLookup.observe({ provider: e.provider, outcome: e.outcome }, e.seconds);
    if (e.outcome === 'error')
      log.warn(
        { event: 'claims_provider_failed', schemaId: e.schemaId, provider: e.provider },
        'claims provider failed',
      );
  });
  telemetry.on('upstreamCall', (e) => {
    metrics.upstreamCalls.inc({ call: e.call, outcome: e.outcome });
    if (e.outcome === 'failed') {
      log.warn(
        { event: 'upstream_failed', call: e.call, failure: e.failure, status: e.status, attempt: e.attempt },
        `hosting service ${e.call} failed`,
      );
    }
  });
  telemetry.on('rateLimited', (e) => metrics.rateLimited.inc({ group: e.group }));
  telemetry.on('rateLimitFailOpen', () => metrics.rateLimitFailOpen.inc());

  // issuer_revocation_visible_seconds: per partition, the earliest change not yet seen served.
  const unseen = new Map<number, Date>();
  telemetry.on('statusChange', (e) => {
    metrics.statusChanges.inc({ change: e.change });
    log.info(
      { event: 'status_change', nonce: e.nonce, change: e.change, actor: e.actor, partition: e.partition },
      `credential ${e.change}`,
    );
    if (e.partition !== null && !unseen.has(e.partition)) unseen.set(e.partition, e.at);
  });
  telemetry.on('statusListBuilt', (e) => metrics.statusListBuild.observe(e.seconds));
  telemetry.on('statusListServed', (e) => {
    const changedAt = unseen.get(e.partition);
    if (changedAt === undefined || e.builtAt.getTime() < changedAt.getTime()) return;
    unseen.delete(e.partition);
    metrics.revocationVisible.observe(Math.max(0, (Date.now() - changedAt.getTime()) / 1000));
  });

  outbox.on('uploaded', () => metrics.uploads.inc({ outcome: 'stored' }));
  outbox.on('failed', (record, error, nextAttemptAt) => {
    metrics.uploads.inc({ outcome: 'retry' });
    log.warn(
      {
        event: 'upload_retry',
        credentialId: record.credentialId,
        attempt: record.uploadAttempts + 1,
        reason: error.message,
        nextAttemptAt: nextAttemptAt.toISOString(),
      },
      'upload failed; retry scheduled',
    );
  });
  outbox.on('gave_up', (record, error, attempts) => {
    metrics.uploads.inc({ outcome: 'gave_up' });
    log.error(
      {
        event: 'upload_gave_up',
        credentialId: record.credentialId,
        attempts,
        reason: error.message,
        retry: `npm run admin -- uploads retry ${record.credentialId}`,
      },
      'upload failed for good; state failed until an admin retries it',
    );
  });
}
