import { randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { type ClaimsAnswer, type ClaimsProvider, ClaimsSourceError } from '../claims/index.js';
import { type Envelope, type HolderPublicKey, sealEnvelope, toPreviewFields } from '../envelope/index.js';
import { AppError, upstreamUnavailable } from '../errors.js';
import type { Issuer } from '../issuers/issuer.js';
import type {
  AuditActor,
  Channel as IssuanceChannel,
  IssuanceOutcome,
  Logger,
  ProofType,
  Telemetry,
} from '../model.js';
import { pooledRandomBytes } from '../random-pool.js';
import type { LoadedSchema, SchemaRegistry } from '../schemas/schema-registry.js';
import type { Channel, IssuanceRecord, IssuanceStore, NewIssuance, StatusSlot } from '../store/store.js';
import { canonicalJson, sha256Hex } from './canonical.js';
import type { UploadOutbox } from './outbox.js';

export interface IssuanceServiceDeps {
  issuerOrigin: string;
  schemas: SchemaRegistry;
  claimsProviders: ReadonlyMap<string, ClaimsProvider>;
  issuers: Map<ProofType, Issuer>;
  store: IssuanceStore;
  /** Only the in-request attempt is the service's; the outbox's worker runs on its own. */
  outbox: Pick<UploadOutbox, 'uploadNow'>;
  statusList: { partitionSize: number; bits: 1 | 2 };
  uploadTimeoutMs: number;
  now?: () => Date;
  log?: Logger;
  /** Reports issuances and claims lookups (logs and metrics). */
  telemetry?: Telemetry;
}

export interface PreviewEntry {
  holderDID: string;
  schemaId: string;
  credentialSubject: ReturnType<typeof toPreviewFields>;
  proofType: ProofType;
}

/** What any issuance (hosted or direct) hands to `signAndRecord`. */
export interface SignRequest {
  /** A caller-chosen credential id (derived from an Idempotency-Key); random by default. */
  credentialId?: string | undefined;
  channel: Channel;
  userId: string;
  holderDid: string;
  schema: LoadedSchema;
  proofType: ProofType;
  claims: Record<string, unknown>;
  expiresAt: Date;
  encryptTo: HolderPublicKey;
  holderJwk?: JWK | undefined;
  vct?: string | undefined;
  disclosureFrame?: Record<string, unknown> | undefined;
  dedupe: boolean;
  /** A direct issuance's keyed recipient-email hash (store.ts NewIssuance.emailHash). */
  emailHash?: string | undefined;
  /** An admin's issuance: recorded in the audit log with the credential. */
  audit?: AuditActor | undefined;
}

/** The phases `IssuanceService.phaseTimer` reports, in order (claims and upload: hosted only). */
export type IssuancePhase = 'claims' | 'sign' | 'envelope' | 'record' | 'upload';

const wholeSeconds = (d: Date): Date => new Date(Math.floor(d.getTime() / 1000) * 1000);

// DESIGN §8: nonces are random, unique, below 2^53 (exact as a JSON number). 0 is the Iden3 auth claim's.
export function randomRevocationNonce(): number {
  const n = Number(pooledRandomBytes(8).readBigUInt64BE() & 0x1f_ffff_ffff_ffffn);
  return n === 0 ? 1 : n;
}

/**
 * The issuance flows of DESIGN §1. Route handlers call these; they never see a credential format.
 */
export class IssuanceService {
  private readonly now: () => Date;
  /** Records this service has just inserted: their insert holds the upload lease. */
  private readonly leasedByInsert = new WeakSet<IssuanceRecord>();
  /** Optional probe for scripts/bench: how long each phase of each issuance took, in ms. */
  phaseTimer: ((phase: IssuancePhase, ms: number) => void) | undefined;

  constructor(private readonly deps: IssuanceServiceDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  /** spec 4.6 available-vc: one encrypted preview per eligible schema and proof type. */
  async availableVc(req: {
    holderDid: string;
    userId: string;
    pubKey: HolderPublicKey;
    schemaId?: string | undefined;
    proofType?: ProofType | undefined;
  }): Promise<PreviewEntry[]> {
    const candidates = this.deps.schemas
      .select({ schemaId: req.schemaId, proofType: req.proofType })
      .filter(({ schema, proofType }) => this.deps.issuers.get(proofType)?.supports(schema));
    const answers = new Map<string, Promise<ClaimsAnswer>>();
    const out: PreviewEntry[] = [];
    for (const { schema, proofType } of candidates) {
      // One lookup per schema and proof type (providers may answer per proof type).
      const key = `${schema.schemaId}\u0000${proofType}`;
      if (!answers.has(key)) answers.set(key, this.lookupClaims(schema, req.userId, proofType));
      const answer = await answers.get(key)!;
      if (!answer.eligible) continue;
      const { id: _id, ...subject } = answer.credentialSubject;
      out.push({
        holderDID: req.holderDid,
        schemaId: schema.schemaId,
        credentialSubject: toPreviewFields(sealEnvelope(req.pubKey, subject)),
        proofType,
      });
    }
    return out;
  }

  /**
   * spec 4.6 issue-vc: authoritative claims, sign, encrypt, record, upload. Resolves when the
   * envelope is stored upstream; throws 502 (after recording) when it is not, and the outbox retries.
   */
  async issueHosted(req: {
    holderDid: string;
    userId: string;
    schemaId: string;
    proofType: ProofType;
    encryptTo: HolderPublicKey;
    holderJwk?: JWK | undefined;
  }): Promise<IssuanceRecord> {
    const schema = this.deps.schemas.require(req.schemaId);
    const record = await this.untilRecorded(req.proofType, 'hosted', () => this.recordHosted(schema, req));
    const uploadStart = performance.now();
    const uploaded = await this.uploadWithinRequest(record);
    this.mark('upload', uploadStart);
    return uploaded;
  }

  private async recordHosted(
    schema: LoadedSchema,
    req: {
      holderDid: string;
      userId: string;
      proofType: ProofType;
      encryptTo: HolderPublicKey;
      holderJwk?: JWK | undefined;
    },
  ): Promise<IssuanceRecord> {
    this.requireIssuer(schema, req.proofType);
    const claimsStart = performance.now();
    const answer = await this.lookupClaims(schema, req.userId, req.proofType);
    this.mark('claims', claimsStart);
    if (!answer.eligible) {
      throw new AppError('NOT_FOUND', `userId: no ${schema.schemaId} credential is available for this user`, {
        field: 'userId',
      });
    }
    const { id: _id, ...claims } = answer.credentialSubject;
    const expiresAt = answer.expiresAt ?? new Date(this.now().getTime() + schema.expiresInSeconds * 1000);
    return this.signAndRecord({
      channel: 'hosted',
      userId: req.userId,
      holderDid: req.holderDid,
      schema,
      proofType: req.proofType,
      claims,
      expiresAt,
      encryptTo: req.encryptTo,
      holderJwk: req.holderJwk,
      dedupe: true,
    });
  }

  /** Counts one issuance outcome (`issuer_issuances_total`). */
  report(proofType: ProofType, channel: IssuanceChannel, outcome: IssuanceOutcome): void {
    this.deps.telemetry?.emit('issuance', { proofType, channel, outcome });
  }

  /** Runs an issuance up to its committed record; a throw before it counts as `failed`. */
  async untilRecorded<T>(proofType: ProofType, channel: IssuanceChannel, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      this.report(proofType, channel, 'failed');
      throw err;
    }
  }

  private mark(phase: IssuancePhase, since: number): void {
    this.phaseTimer?.(phase, performance.now() - since);
  }

  requireIssuer(schema: LoadedSchema, proofType: ProofType): Issuer {
    const issuer = this.deps.issuers.get(proofType);
    if (!schema.proofTypes.includes(proofType) || !issuer?.supports(schema)) {
      throw new AppError(
        'INVALID_PARAMETER',
        `proofType: schema ${schema.schemaId} is not issued as ${proofType}`,
        {
          field: 'proofType',
        },
      );
    }
    return issuer;
  }

  async lookupClaims(schema: LoadedSchema, userId: string, proofType: ProofType): Promise<ClaimsAnswer> {
    const provider = this.deps.claimsProviders.get(schema.schemaId);
    if (!provider) throw new AppError('INTERNAL', `no claims provider for ${schema.schemaId}`);
    const started = performance.now();
    const done = (outcome: 'eligible' | 'not_eligible' | 'error') =>
      this.deps.telemetry?.emit('claimsLookup', {
        schemaId: schema.schemaId,
        provider: schema.claims.provider,
        outcome,
        seconds: (performance.now() - started) / 1000,
      });
    try {
      const answer = await provider.lookup({ userId, schemaId: schema.schemaId, proofType });
      done(answer.eligible ? 'eligible' : 'not_eligible');
      return answer;
    } catch (err) {
      done('error');
      // DESIGN §8: a provider that cannot answer is an upstream error, never "not eligible".
      // Our own providers' messages are safe to pass on; a custom module's may hold internals.
      const reason = err instanceof ClaimsSourceError ? `: ${err.message}` : '';
      if (!reason) this.deps.log?.error({ event: 'claims_provider_error', schemaId: schema.schemaId, err });
      throw upstreamUnavailable(`claims source for ${schema.schemaId} is unavailable${reason}`);
    }
  }

  /**
   * Validates, signs, encrypts and commits one issuance (DESIGN §9): the record, its nonce and its
   * status slot commit together, before any upload. A hosted repeat returns the live original.
   */
  async signAndRecord(req: SignRequest): Promise<IssuanceRecord> {
    const issuer = this.requireIssuer(req.schema, req.proofType);
    this.deps.schemas.assertClaims(req.schema, req.claims);
    // Whole seconds: JWT `iat`/`exp` are NumericDates, and the record must say the same instant.
    const now = wholeSeconds(this.now());
    const expiresAt = wholeSeconds(req.expiresAt);
    if (expiresAt.getTime() <= now.getTime()) {
      throw new AppError('CLAIMS_INVALID', 'expiresAt: the credential would already be expired', {
        field: 'expiresAt',
      });
    }
    const subjectHash = sha256Hex(
      canonicalJson({
        claims: req.claims,
        cnf: req.holderJwk ? await calculateJwkThumbprint(req.holderJwk) : null,
      }),
    );
    if (req.dedupe) {
      const existing = await this.deps.store.findLiveDuplicate({
        holderDid: req.holderDid,
        schemaId: req.schema.schemaId,
        proofType: req.proofType,
        subjectHash,
        now,
      });
      if (existing) {
        this.report(req.proofType, req.channel, 'existing');
        return existing;
      }
    }
    const credentialId = req.credentialId ?? randomUUID();
    for (let attempt = 0; attempt < 16; attempt++) {
      const revocationNonce = randomRevocationNonce();
      const slot: StatusSlot | null = issuer.usesStatusList
        ? await this.deps.store.proposeStatusSlot(
            this.deps.statusList.partitionSize,
            this.deps.statusList.bits,
          )
        : null;
      const signStart = performance.now();
      const signed = await issuer.issue({
        credentialId,
        holderDid: req.holderDid,
        schema: req.schema,
        claims: req.claims,
        issuedAt: now,
        expiresAt,
        revocationNonce,
        status: slot ? { idx: slot.index, uri: this.statusListUri(slot.partition) } : undefined,
        holderJwk: req.holderJwk,
        vct: req.vct,
        disclosureFrame: req.disclosureFrame,
      });
      this.mark('sign', signStart);
      const sealStart = performance.now();
      const sealed: Envelope = sealEnvelope(req.encryptTo, signed.credential);
      this.mark('envelope', sealStart);
      const issuance: NewIssuance = {
        credentialId,
        channel: req.channel,
        userId: req.userId,
        holderDid: req.holderDid,
        schemaId: req.schema.schemaId,
        proofType: req.proofType,
        revocationNonce,
        statusSlot: slot,
        subjectHash,
        kid: signed.kid,
        createdAt: now,
        expiresAt,
        uploadDueAt: new Date(Date.now() + this.deps.uploadTimeoutMs + 1000),
        emailHash: req.emailHash,
        envelope: {
          holderDid: req.holderDid,
          schemaId: req.schema.schemaId,
          expiresAt: expiresAt.toISOString(),
          ...sealed,
          externalId: credentialId,
        },
      };
      const recordStart = performance.now();
      const outcome = await this.deps.store.insertIssuance(issuance, {
        dedupe: req.dedupe,
        audit: req.audit,
      });
      this.mark('record', recordStart);
      if (outcome.kind === 'inserted') this.leasedByInsert.add(outcome.record);
      if (outcome.kind === 'inserted' || outcome.kind === 'duplicate') {
        this.report(req.proofType, req.channel, outcome.kind === 'inserted' ? 'issued' : 'existing');
        return outcome.record;
      }
      // A concurrent issuance took the slot or nonce between proposal and commit: sign again.
    }
    throw new AppError('INTERNAL', 'could not allocate a status slot and nonce');
  }

  statusListUri(partition: number): string {
    return `${this.deps.issuerOrigin}/statuslist/${partition}`;
  }

  /**
   * The upload inside the request, bounded by UPLOAD_TIMEOUT_MS and by the caller's `deadline`
   * (epoch ms) if sooner; the outbox keeps retrying after a failure. An identical request already
   * uploading the same credential is waited for, not reported as a failure.
   */
  async uploadWithinRequest(record: IssuanceRecord, deadline?: number): Promise<IssuanceRecord> {
    if (record.uploadState === 'uploaded') return record;
    const until = Math.min(Date.now() + this.deps.uploadTimeoutMs, deadline ?? Number.POSITIVE_INFINITY);
    const waitMs = Math.max(0, until - Date.now());
    let timer: NodeJS.Timeout | undefined;
    try {
      const storagePath = await Promise.race([
        this.deps.outbox.uploadNow(record, { leased: this.leasedByInsert.delete(record), deadline: until }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`upload did not finish within ${waitMs} ms`)), waitMs);
        }),
      ]);
      return { ...record, uploadState: 'uploaded', storagePath };
    } catch (err) {
      throw upstreamUnavailable(
        `the credential was issued and recorded but the hosting service did not store it yet (${(err as Error).message}); it is retried in the background`,
        { credentialId: record.credentialId },
        err,
      );
    } finally {
      clearTimeout(timer);
    }
  }
}
