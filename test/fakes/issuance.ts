import { fileURLToPath } from 'node:url';
import type { ClaimsAnswer, ClaimsProvider, ClaimsQuery } from '../../src/claims/index.js';
import type { IssuedCredential, IssueInput, Issuer } from '../../src/formats/issuer.js';
import { loadSchemas } from '../../src/formats/schema-file.js';
import { IssuerUrls } from '../../src/identity/issuer-identity.js';
import type { UploadOutbox } from '../../src/issuance/outbox.js';
import type { ProofType } from '../../src/model.js';
import type { SchemaRegistry } from '../../src/schemas/schema-registry.js';
import { envelopeSha256, insertedRecord } from '../../src/store/issuance-row.js';
import type {
  BatchInsertOutcome,
  InsertOutcome,
  IssuanceRecord,
  IssuanceStore,
  NewIssuance,
  StatusSlot,
} from '../../src/store/store.js';

/**
 * Hand-written fakes of the parts `IssuanceCore` talks to, for tests of the service itself.
 * Each appends what it was asked to one shared `events` list, so a test can assert the order.
 */

let bundled: SchemaRegistry | undefined;
/** The repository's own schemas folder (membership-v1), loaded once per test file. */
export function bundledSchemas(): SchemaRegistry {
  bundled ??= loadSchemas(
    fileURLToPath(new URL('../../schemas', import.meta.url)),
    new IssuerUrls('https://issuer.example'),
  );
  return bundled;
}

/** Valid membership-v1 claims. */
export const MEMBER_CLAIMS = {
  givenName: 'Ada',
  familyName: 'Lovelace',
  memberSince: '2020-01-15',
  tier: 'gold',
  memberNumber: 7,
};

/** An `Issuer` that does not sign: it answers a readable string naming what it was given. */
export class FakeIssuer implements Issuer {
  readonly usesStatusList: boolean;
  readonly inputs: IssueInput[] = [];

  constructor(
    readonly proofType: ProofType,
    private readonly events: string[] = [],
  ) {
    this.usesStatusList = proofType === 'SD_JWT_VC';
  }

  supports(): boolean {
    return true;
  }

  async issue(input: IssueInput): Promise<IssuedCredential> {
    this.inputs.push(input);
    this.events.push('sign');
    return { credential: `signed:${input.credentialId}:${input.revocationNonce}`, kid: 'fake-kid' };
  }
}

/** A claims source answering from a map by userId; `fail` makes it throw as an outage would. */
export class FakeClaimsProvider implements ClaimsProvider {
  readonly answers = new Map<string, ClaimsAnswer>();
  fail: Error | undefined;

  constructor(private readonly events: string[] = []) {}

  async lookup(query: ClaimsQuery): Promise<ClaimsAnswer> {
    this.events.push('claims');
    if (this.fail) throw this.fail;
    return this.answers.get(query.userId) ?? { eligible: false };
  }
}

/**
 * An in-memory `IssuanceStore` with the commit rules of docs/several-instances.md "Storage engines" (a slot and a nonce are used
 * once; a live hosted repeat is a duplicate). `forced` outcomes are answered by the next inserts
 * first, as a concurrent issuer winning the race would. The outbox's bulk methods are not used by
 * `IssuanceCore` and throw.
 */
export class MemoryIssuanceStore implements IssuanceStore {
  readonly records = new Map<string, IssuanceRecord>();
  readonly forced: Array<'slot-taken' | 'nonce-taken'> = [];
  private proposed = 0;

  constructor(private readonly events: string[] = []) {}

  async proposeStatusSlot(partitionSize: number): Promise<StatusSlot> {
    const n = this.proposed++;
    return { partition: Math.floor(n / partitionSize), index: n % partitionSize };
  }

  async nonceInUse(nonce: number): Promise<boolean> {
    return (await this.getByNonce(nonce)) !== undefined;
  }

  async findLiveDuplicate(q: {
    holderDid: string;
    schemaId: string;
    proofType: ProofType;
    subjectHash: string;
    now: Date;
  }): Promise<IssuanceRecord | undefined> {
    return [...this.records.values()].find(
      (r) =>
        r.channel === 'hosted' &&
        r.holderDid === q.holderDid &&
        r.schemaId === q.schemaId &&
        r.proofType === q.proofType &&
        r.subjectHash === q.subjectHash &&
        r.revokedAt === null &&
        r.expiresAt > q.now,
    );
  }

  async insertIssuance(issuance: NewIssuance, options: { dedupe: boolean }): Promise<InsertOutcome> {
    this.events.push('insert');
    const forced = this.forced.shift();
    if (forced) return { kind: forced };
    const same = this.records.get(issuance.credentialId);
    if (same) return { kind: 'duplicate', record: same };
    const live =
      options.dedupe &&
      issuance.channel === 'hosted' &&
      (await this.findLiveDuplicate({ ...issuance, now: issuance.createdAt }));
    if (live) return { kind: 'duplicate', record: live };
    const slot = issuance.statusSlot;
    if (
      slot &&
      [...this.records.values()].some(
        (r) => r.statusSlot?.partition === slot.partition && r.statusSlot.index === slot.index,
      )
    )
      return { kind: 'slot-taken' };
    if (await this.nonceInUse(issuance.revocationNonce)) return { kind: 'nonce-taken' };
    const record = insertedRecord(issuance, issuance.envelope ? envelopeSha256(issuance.envelope) : null);
    this.records.set(record.credentialId, record);
    return { kind: 'inserted', record };
  }

  /** All or none: each is tried on a copy of the records, kept only when every one was inserted. */
  async insertIssuances(batch: readonly NewIssuance[]): Promise<BatchInsertOutcome> {
    const before = new Map(this.records);
    const records: IssuanceRecord[] = [];
    for (const n of batch) {
      const outcome = await this.insertIssuance(n, { dedupe: false });
      if (outcome.kind !== 'inserted') {
        this.records.clear();
        for (const [id, r] of before) this.records.set(id, r);
        return outcome.kind === 'duplicate' ? { kind: 'duplicate' } : { kind: outcome.kind };
      }
      records.push(outcome.record);
    }
    return { kind: 'inserted', records };
  }

  async get(credentialId: string): Promise<IssuanceRecord | undefined> {
    return this.records.get(credentialId);
  }

  async getByNonce(nonce: number): Promise<IssuanceRecord | undefined> {
    return [...this.records.values()].find((r) => r.revocationNonce === nonce);
  }

  async latestExpiryForKid(kid: string): Promise<Date | undefined> {
    const expiries = [...this.records.values()].filter((r) => r.kid === kid).map((r) => r.expiresAt);
    return expiries.length === 0 ? undefined : new Date(Math.max(...expiries.map((d) => d.getTime())));
  }

  async markUploaded(credentialId: string, storagePath: string | null, at: Date): Promise<void> {
    // Delivered: the envelope goes, its digest stays (docs/architecture.md "Envelopes until delivered").
    this.update(credentialId, {
      uploadState: 'uploaded',
      storagePath,
      uploadedAt: at,
      nextAttemptAt: null,
      envelope: null,
    });
  }

  async markUploadFailed(
    credentialId: string,
    error: string,
    nextAttemptAt: Date,
    giveUpAfter = Number.POSITIVE_INFINITY,
  ): Promise<{ attempts: number; gaveUp: boolean }> {
    const attempts = (this.records.get(credentialId)?.uploadAttempts ?? 0) + 1;
    const gaveUp = attempts >= giveUpAfter;
    this.update(credentialId, {
      lastError: error,
      nextAttemptAt: gaveUp ? null : nextAttemptAt,
      uploadAttempts: attempts,
      uploadState: gaveUp ? 'failed' : 'pending',
    });
    return { attempts, gaveUp };
  }

  private update(credentialId: string, change: Partial<IssuanceRecord>): void {
    const record = this.records.get(credentialId);
    if (!record) throw new Error(`no issuance ${credentialId}`);
    this.records.set(credentialId, { ...record, ...change });
  }

  leaseDueUploads(): Promise<IssuanceRecord[]> {
    throw new Error('MemoryIssuanceStore: leaseDueUploads is the outbox worker’s, not used here');
  }
  leaseUpload(): Promise<boolean> {
    throw new Error('MemoryIssuanceStore: leaseUpload is the outbox’s, not used here');
  }
  repairUnseenUploads(): Promise<number> {
    throw new Error('MemoryIssuanceStore: repairUnseenUploads is the outbox’s, not used here');
  }
  makePendingDue(): Promise<void> {
    throw new Error('MemoryIssuanceStore: makePendingDue is the outbox’s, not used here');
  }
  nextUploadDue(): Promise<Date | undefined> {
    throw new Error('MemoryIssuanceStore: nextUploadDue is the outbox’s, not used here');
  }
  countPendingUploads(): Promise<number> {
    throw new Error('MemoryIssuanceStore: countPendingUploads is the outbox’s, not used here');
  }
  oldestPendingUpload(): Promise<Date | undefined> {
    throw new Error('MemoryIssuanceStore: oldestPendingUpload is doctor’s, not used here');
  }
  retryFailedUploads(): Promise<string[]> {
    throw new Error('MemoryIssuanceStore: retryFailedUploads is the outbox’s, not used here');
  }
  countFailedUploads(): Promise<number> {
    throw new Error('MemoryIssuanceStore: countFailedUploads is the outbox’s, not used here');
  }
}

/** What `IssuanceCore` uses of the outbox: one upload attempt inside the request. */
export type Uploader = Pick<UploadOutbox, 'uploadNow'>;

/**
 * `IssuanceCoreDeps.outbox` is typed as the `UploadOutbox` class, whose private members no
 * fake can have; the service only calls `uploadNow`. (Seam asked of src: type that dependency as
 * `Pick<UploadOutbox, 'uploadNow'>`, and this cast goes.)
 */
export const asOutbox = (uploader: Uploader): UploadOutbox => uploader as UploadOutbox;

/** An outbox for callers that never upload (`signAndRecord` alone). */
export const noUploads: Uploader = {
  uploadNow: () => Promise.reject(new Error('this test does not upload')),
};

/**
 * The outbox's in-request attempt against the store, without a hosting service: it marks the
 * record uploaded at `/vcs/<id>`, or, with `fail` set, records the failure and rejects (the
 * record stays pending).
 */
export class FakeOutbox implements Uploader {
  fail: Error | undefined;

  constructor(
    private readonly store: MemoryIssuanceStore,
    private readonly events: string[] = [],
  ) {}

  async uploadNow(record: IssuanceRecord): Promise<string | null> {
    this.events.push('upload');
    if (this.fail) {
      await this.store.markUploadFailed(record.credentialId, this.fail.message, new Date());
      throw this.fail;
    }
    const storagePath = `/vcs/${record.credentialId}`;
    await this.store.markUploaded(record.credentialId, storagePath, new Date());
    return storagePath;
  }
}
