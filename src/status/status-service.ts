import { createHash } from 'node:crypto';
import { decodeJwt } from 'jose';
import { AppError, notFound } from '../errors.js';
import { statusListPublishedEvent } from '../events/builders.js';
import type { IssuerIdentity, SigningIdentity } from '../identity/issuer-identity.js';
import type { AuditActor, StatusChange, Telemetry } from '../model.js';
import type { IssuanceRecord, PartitionRecord, StatusChangeRequest, StatusStore } from '../store/store.js';
import { StatusList, signStatusListToken } from './status-list.js';

export interface PublishedPartition {
  partition: number;
  uri: string;
  size: number;
  iat: number;
  token: string;
  etag: string;
}

/**
 * Revokes a credential of a back-end that keeps its own status (Iden3 revocation tree), committing
 * `statusChange` with its own change; answers the record after, or undefined when the back-end had
 * it revoked already and applied nothing (the caller applies the change then).
 */
export type ExternalRevoker = (
  record: IssuanceRecord,
  statusChange: StatusChangeRequest,
) => Promise<IssuanceRecord | undefined>;

/**
 * Token status lists (draft-ietf-oauth-status-list) and status changes (docs/interface.md, docs/several-instances.md). The
 * statuses live on the issuance rows; a partition's signed token is cached in the store and
 * dropped on every change to that partition, so both processes sharing a database see it.
 */
export class StatusService {
  constructor(
    private readonly deps: {
      /**
       * The issuer whose lists these are: where a partition is published (`status_list.uri`), its
       * lists' `ttl`, the key that signs them, and its identification (the token's `iss`, when the
       * mode gives one, and `kid`/`x5c`, as the credentials' do).
       */
      identity: SigningIdentity & Pick<IssuerIdentity, 'urls' | 'statusLists'>;
      store: StatusStore;
      /** Back-ends with their own revocation registry, by proof type. */
      externalRevokers?: Map<string, ExternalRevoker>;
      lookup: (nonce: number) => Promise<IssuanceRecord | undefined>;
      now?: () => Date;
      /** Reports status changes and list builds and reads (logs, metrics). */
      telemetry?: Telemetry;
      /**
       * Whether a webhook endpoint receives `status_list.published`: then a status change re-signs
       * its partition at once, so that the event follows the change (docs/operations.md
       * "Webhooks"); otherwise the list is signed at its next read.
       */
      publishedSubscribed?: () => Promise<boolean>;
    },
  ) {}

  /** The `sub` of each cached token seen, by its etag (signedFor). */
  private readonly subByEtag = new Map<string, string>();

  get ttlSeconds(): number {
    return this.deps.identity.statusLists.ttlSeconds;
  }

  uri(partition: number): string {
    return this.deps.identity.urls.statusList(partition);
  }

  /** The partition's current token: the cached one while fresh, else a newly signed one. */
  async partitionToken(partition: number): Promise<PublishedPartition> {
    const record = await this.deps.store.getPartition(partition);
    if (!record) throw notFound(`no status list partition ${partition}`);
    const now = this.now();
    // A cached token is served while it has at least one ttl of life left, so a verifier
    // that caches it for ttl never holds an expired one.
    if (
      record.token &&
      record.etag &&
      record.publishedAt &&
      now.getTime() - record.publishedAt.getTime() < this.ttlSeconds * 1000 &&
      this.signedFor(record.token, record.etag, partition)
    ) {
      this.deps.telemetry?.emit('statusListServed', { partition, builtAt: record.publishedAt });
      return this.describe(record, record.token, record.etag, record.publishedAt);
    }
    const published = await this.publish(partition, now);
    if (!published) throw notFound(`no status list partition ${partition}`);
    this.deps.telemetry?.emit('statusListServed', { partition, builtAt: now });
    return published;
  }

  /**
   * Whether a cached token names this issuer's URL of the partition as its `sub`: one signed
   * under another origin (ISSUER_ORIGIN changed over the same database) is signed again rather than
   * served, since verifiers refuse a list whose `sub` is not the URL they fetched
   * (draft-ietf-oauth-status-list: the token's `sub` is the URI it is served at). Each token is
   * decoded once per process.
   */
  private signedFor(token: string, etag: string, partition: number): boolean {
    let sub = this.subByEtag.get(etag);
    if (sub === undefined) {
      try {
        sub = String(decodeJwt(token).sub);
      } catch {
        sub = '';
      }
      if (this.subByEtag.size >= 1024) this.subByEtag.clear();
      this.subByEtag.set(etag, sub);
    }
    return sub === this.uri(partition);
  }

  /** Rebuilds and re-signs every partition (e.g. after a key rotation). */
  async publishAll(): Promise<PublishedPartition[]> {
    const now = this.now();
    const out: PublishedPartition[] = [];
    for (const { partition } of await this.deps.store.listPartitions()) {
      const published = await this.publish(partition, now);
      if (published) out.push(published);
    }
    return out;
  }

  /** Rebuilds and re-signs the given partitions, once each (the end of a bulk status change). */
  async publishPartitions(partitions: readonly number[]): Promise<PublishedPartition[]> {
    const now = this.now();
    const out: PublishedPartition[] = [];
    for (const partition of new Set(partitions)) {
      const published = await this.publish(partition, now);
      if (published) out.push(published);
    }
    return out;
  }

  /**
   * Builds and signs a partition's token from a snapshot of its statuses, and caches it unless a
   * status change landed meanwhile: then this token still answers the request that started before
   * the change, but the next read builds again and sees it.
   */
  private async publish(partition: number, now: Date): Promise<PublishedPartition | undefined> {
    const started = performance.now();
    const snapshot = await this.deps.store.snapshotPartition(partition);
    if (!snapshot) return undefined;
    const { record, statuses, ticket } = snapshot;
    const list = new StatusList(record.size, record.bits);
    for (const { index, status } of statuses) list.set(index, status);
    const iat = Math.floor(now.getTime() / 1000);
    const { identification, keys } = this.deps.identity;
    const key = keys.current().signing;
    const iss = identification.statusListIssuer;
    const token = await signStatusListToken(
      {
        ...(iss ? { iss } : {}),
        sub: this.uri(partition),
        iat,
        exp: iat + 2 * this.ttlSeconds,
        ttl: this.ttlSeconds,
        bits: record.bits,
        lst: list.encode(),
      },
      { sign: key.sign, ...identification.header(key) },
    );
    const etag = `"${createHash('sha256').update(token).digest('base64url').slice(0, 32)}"`;
    await this.deps.store.savePartitionToken(
      partition,
      token,
      etag,
      now,
      ticket,
      statusListPublishedEvent(partition, this.uri(partition)),
    );
    this.deps.telemetry?.emit('statusListBuilt', {
      partition,
      seconds: (performance.now() - started) / 1000,
      builtAt: now,
    });
    return this.describe(record, token, etag, now);
  }

  private describe(
    record: PartitionRecord,
    token: string,
    etag: string,
    publishedAt: Date,
  ): PublishedPartition {
    return {
      partition: record.partition,
      uri: this.uri(record.partition),
      size: record.size,
      iat: Math.floor(publishedAt.getTime() / 1000),
      token,
      etag,
    };
  }

  /**
   * Revoke, suspend or unsuspend by revocation nonce; the change is visible at once. With `audit`,
   * the change is recorded in the audit log in its own transaction, and its actor named in the log
   * line.
   */
  async change(
    nonce: number,
    change: StatusChange,
    proofType?: string,
    audit?: AuditActor,
  ): Promise<IssuanceRecord> {
    const after = await this.apply(nonce, change, proofType, audit);
    // Taken after the commit: a list whose snapshot began at or after this instant carries it.
    const at = this.now();
    this.deps.telemetry?.emit('statusChange', {
      nonce,
      change,
      actor: audit?.actor ?? 'system',
      partition: after.statusSlot?.partition ?? null,
      at,
    });
    if (after.statusSlot && (await this.deps.publishedSubscribed?.().catch(() => false))) {
      // The change is committed whatever comes of this: a list not signed now is signed at its next read.
      await this.publish(after.statusSlot.partition, at).catch(() => undefined);
    }
    return after;
  }

  private async apply(
    nonce: number,
    change: StatusChange,
    proofType: string | undefined,
    audit: AuditActor | undefined,
  ): Promise<IssuanceRecord> {
    const record = await this.deps.lookup(nonce);
    if (!record || (proofType !== undefined && record.proofType !== proofType)) {
      throw notFound(
        `revocationNonce: no credential with nonce ${nonce}${proofType ? ` and proofType ${proofType}` : ''}`,
      );
    }
    if (change !== 'revoke') {
      if (!record.statusSlot) {
        throw new AppError(
          'INVALID_PARAMETER',
          `revocationNonce: ${record.proofType} credentials cannot be suspended`,
          { field: 'revocationNonce' },
        );
      }
      const partition = await this.deps.store.getPartition(record.statusSlot.partition);
      if (partition?.bits !== 2) {
        throw new AppError('INVALID_PARAMETER', 'suspension needs a 2-bit status list (STATUS_LIST_BITS=2)', {
          field: 'revocationNonce',
        });
      }
      if (record.status === 1) throw revokedIsFinal();
    }
    const at = this.now();
    const external = change === 'revoke' ? this.deps.externalRevokers?.get(record.proofType) : undefined;
    if (external && record.status !== 1) {
      const after =
        (await external(record, { nonce, change, at, audit })) ??
        (await this.deps.store.changeStatus(nonce, change, at, audit));
      if (!after) throw new AppError('INTERNAL', 'status change did not apply');
      return after;
    }
    const after = await this.deps.store.changeStatus(nonce, change, at, audit);
    if (!after) throw notFound(`revocationNonce: no credential with nonce ${nonce}`);
    // Revoked by someone else between the check above and the update (which then changed nothing).
    if (change !== 'revoke' && after.status === 1) throw revokedIsFinal();
    return after;
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }
}

const revokedIsFinal = () =>
  new AppError('CONFLICT', 'revocationNonce: the credential is revoked, which is final', {
    field: 'revocationNonce',
  });
