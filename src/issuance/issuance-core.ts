import { randomUUID } from 'node:crypto';
import { type ClaimsAnswer, ClaimsSourceError, isPending, type ProviderAnswer } from '../claims/index.js';
import { type Envelope, sealEnvelope } from '../envelope/index.js';
import { AppError, upstreamUnavailable } from '../errors.js';
import { credentialIssuedEvent } from '../events/builders.js';
import type { Issuer } from '../formats/issuer.js';
import type { IssuerCatalog, IssuerIdentity } from '../identity/issuer-identity.js';
import type { Channel as IssuanceChannel, IssuanceOutcome, Logger, ProofType, Telemetry } from '../model.js';
import type { LoadedSchema } from '../schemas/schema-registry.js';
import { DatabaseUnavailableError } from '../store/database-unavailable.js';
import type { IssuanceRecord, IssuanceStore, NewIssuance, StatusSlot } from '../store/store.js';
import { issuanceSubjectHash, randomRevocationNonce, wholeSeconds } from './issuance-identity.js';
import type { UploadOutbox } from './outbox.js';
import type { IssuancePhase, SignedForResponse, SignRequest } from './sign-request.js';

export type { IssuancePhase, SignedForResponse, SignRequest } from './sign-request.js';

export interface IssuanceCoreDeps {
  /**
   * The issuer: its schemas and their claims sources (read at each issuance: a reload swaps them),
   * its status-list space, and where the lists its credentials point at are published.
   */
  identity: Pick<IssuerIdentity, 'urls' | 'statusLists'> & {
    readonly catalog: Pick<IssuerCatalog, 'schemas' | 'claimsProviders'>;
  };
  issuers: Map<ProofType, Issuer>;
  store: IssuanceStore;
  /** Only the in-request attempt is the core's; the outbox's worker runs on its own. */
  outbox: Pick<UploadOutbox, 'uploadNow'>;
  uploadTimeoutMs: number;
  now?: () => Date;
  log?: Logger;
  /** Reports issuances and claims lookups (logs and metrics). */
  telemetry?: Telemetry;
}

/**
 * What every issuance does, whoever asked: look up claims, sign, seal, record, upload within the
 * request. The hosted flow (hosted-issuance.ts) and the direct one (direct-issuance.ts) sit above
 * it; route handlers call those and never see a credential format.
 */
export class IssuanceCore {
  private readonly now: () => Date;
  /** Records this core has just inserted: their insert holds the upload lease. */
  private readonly leasedByInsert = new WeakSet<IssuanceRecord>();
  /** Optional probe for scripts/bench: how long each phase of each issuance took, in ms. */
  phaseTimer: ((phase: IssuancePhase, ms: number) => void) | undefined;

  constructor(private readonly deps: IssuanceCoreDeps) {
    this.now = deps.now ?? (() => new Date());
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

  mark(phase: IssuancePhase, since: number): void {
    this.phaseTimer?.(phase, performance.now() - since);
  }

  /** The issuer of `proofType` for `schema`; 400 naming `proofType` when the schema is not issued so. */
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

  /** Whether `schema` is issued as `proofType` by a configured issuer. */
  issues(schema: LoadedSchema, proofType: ProofType): boolean {
    return (
      schema.proofTypes.includes(proofType) && this.deps.issuers.get(proofType)?.supports(schema) === true
    );
  }

  /**
   * The claims provider's answer. A pending one (not ready yet) is a 503 here: only the OpenID4VCI
   * channel can wait for the claims, and it asks `lookupClaimsOrPending`.
   */
  async lookupClaims(schema: LoadedSchema, userId: string, proofType: ProofType): Promise<ClaimsAnswer> {
    const answer = await this.lookupClaimsOrPending(schema, userId, proofType);
    if (!isPending(answer)) return answer;
    throw new AppError(
      'UNAVAILABLE',
      `the claims source for ${schema.schemaId} has this user's claims pending: try again later`,
    );
  }

  /** The claims provider's answer, a pending one included (OpenID4VCI deferred issuance). */
  async lookupClaimsOrPending(
    schema: LoadedSchema,
    userId: string,
    proofType: ProofType,
  ): Promise<ProviderAnswer> {
    const provider = this.deps.identity.catalog.claimsProviders.get(schema.schemaId);
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
      // The built-in claims table is in the kit's own database: its outage answers 503 like any
      // other route's (docs/operations.md "Database unreachable").
      if (err instanceof DatabaseUnavailableError) throw err;
      // docs/schemas-and-claims.md: a provider that cannot answer is an upstream error, never
      // "not eligible". Our own providers' messages are safe to pass on; a custom module's may hold internals.
      const reason = err instanceof ClaimsSourceError ? `: ${err.message}` : '';
      if (!reason) this.deps.log?.error({ event: 'claims_provider_error', schemaId: schema.schemaId, err });
      throw upstreamUnavailable(`claims source for ${schema.schemaId} is unavailable${reason}`);
    }
  }

  /**
   * Validates, signs, encrypts and commits one issuance: the record, its nonce and its status slot
   * commit together, before any upload. A hosted repeat (`issuanceSubjectHash`) returns the live original.
   */
  async signAndRecord(req: SignRequest): Promise<IssuanceRecord> {
    return (await this.signRecord(req)).record;
  }

  /**
   * Signs and commits one issuance that is not sealed or uploaded (no `encryptTo`): the oid4vci
   * channel, whose credential goes to the wallet in the credential response. The record commits
   * before the credential is handed back, so a credential given out is always one revocable.
   */
  async signForResponse(
    req: SignRequest & { encryptTo?: undefined; dedupe: false },
  ): Promise<SignedForResponse> {
    return this.signRecord(req);
  }

  /** The request's claims checked (unless its caller did) and its times, in whole seconds. */
  private checked(req: SignRequest): { now: Date; expiresAt: Date } {
    if (!req.claimsChecked) this.deps.identity.catalog.schemas.assertClaims(req.schema, req.claims);
    // Whole seconds: JWT `iat`/`exp` are NumericDates, and the record must say the same instant.
    const now = wholeSeconds(this.now());
    const expiresAt = wholeSeconds(req.expiresAt);
    if (expiresAt.getTime() <= now.getTime())
      throw new AppError('CLAIMS_INVALID', 'expiresAt: the credential would already be expired', {
        field: 'expiresAt',
      });
    return { now, expiresAt };
  }

  private async signRecord(req: SignRequest): Promise<SignedForResponse> {
    const { now, expiresAt } = this.checked(req);
    const subjectHash = await issuanceSubjectHash(req.claims, req.holderJwk, req.encryptTo);
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
        return { record: existing, credential: undefined };
      }
    }
    const credentialId = req.credentialId ?? randomUUID();
    for (let attempt = 0; attempt < 16; attempt++) {
      const { issuance, credential } = await this.signOne(req, { credentialId, now, expiresAt, subjectHash });
      const recordStart = performance.now();
      const outcome = await this.deps.store.insertIssuance(issuance, {
        dedupe: req.dedupe,
        audit: req.audit,
      });
      this.mark('record', recordStart);
      if (outcome.kind === 'inserted') this.leasedByInsert.add(outcome.record);
      if (outcome.kind === 'inserted' || outcome.kind === 'duplicate') {
        this.report(req.proofType, req.channel, outcome.kind === 'inserted' ? 'issued' : 'existing');
        return {
          record: outcome.record,
          credential: outcome.kind === 'inserted' ? credential : undefined,
        };
      }
      // A concurrent issuance took the slot or nonce between proposal and commit: sign again.
    }
    throw new AppError('INTERNAL', 'could not allocate a status slot and nonce');
  }

  /**
   * Signs a batch of credentials for one response (OpenID4VCI batch issuance: one request per
   * holder key, the same claims), each with its own random status slot and nonce, and records them
   * in one transaction: every one is recorded, or none (a signing failure midway records nothing).
   * Undefined when the batch was recorded before (its first credential id is taken).
   */
  async signBatchForResponse(
    reqs: ReadonlyArray<SignRequest & { encryptTo?: undefined; dedupe: false; credentialId: string }>,
  ): Promise<Array<SignedForResponse & { credential: string | Record<string, unknown> }> | undefined> {
    const first = reqs[0];
    if (!first) return [];
    const { now, expiresAt } = this.checked(first);
    for (let attempt = 0; attempt < 16; attempt++) {
      const signed: Array<{ issuance: NewIssuance; credential: string | Record<string, unknown> }> = [];
      const taken = new Set<string>();
      for (const req of reqs) {
        const subjectHash = await issuanceSubjectHash(req.claims, req.holderJwk, undefined);
        const ids = { credentialId: req.credentialId, now, expiresAt, subjectHash };
        signed.push(await this.signOne(req, ids, taken));
      }
      const recordStart = performance.now();
      const outcome = await this.deps.store.insertIssuances(
        signed.map((s) => s.issuance),
        { audit: first.audit },
      );
      this.mark('record', recordStart);
      if (outcome.kind === 'duplicate') return undefined;
      if (outcome.kind === 'inserted') {
        for (const req of reqs) this.report(req.proofType, req.channel, 'issued');
        return outcome.records.map((record, i) => ({ record, credential: signed[i]!.credential }));
      }
    }
    throw new AppError('INTERNAL', 'could not allocate status slots and nonces');
  }

  /**
   * One signed credential and what records it, with a freshly proposed status slot and nonce;
   * `taken` (slots as `partition:index`, and nonces) keeps a batch's own proposals apart.
   */
  private async signOne(
    req: SignRequest,
    ids: { credentialId: string; now: Date; expiresAt: Date; subjectHash: string },
    taken = new Set<string>(),
  ): Promise<{ issuance: NewIssuance; credential: string | Record<string, unknown> }> {
    const { issuer } = req;
    const { credentialId, now, expiresAt, subjectHash } = ids;
    let revocationNonce = randomRevocationNonce();
    while (taken.has(`n${revocationNonce}`)) revocationNonce = randomRevocationNonce();
    taken.add(`n${revocationNonce}`);
    let slot: StatusSlot | null = null;
    if (issuer.usesStatusList) {
      do {
        slot = await this.deps.store.proposeStatusSlot(
          this.deps.identity.statusLists.partitionSize,
          this.deps.identity.statusLists.bits,
        );
      } while (taken.has(`${slot.partition}:${slot.index}`));
      taken.add(`${slot.partition}:${slot.index}`);
    }
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
      options: req.options,
    });
    this.mark('sign', signStart);
    const sealStart = performance.now();
    const sealed: Envelope | undefined = req.encryptTo
      ? sealEnvelope(req.encryptTo, signed.credential)
      : undefined;
    if (sealed) this.mark('envelope', sealStart);
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
      uploadDueAt: sealed ? new Date(Date.now() + this.deps.uploadTimeoutMs + 1000) : undefined,
      emailHash: req.emailHash,
      batchId: req.batchId,
      renewedFrom: req.renewedFrom,
      // docs/operations.md "Webhooks": no claim values, ciphertext, keys or tokens.
      event: credentialIssuedEvent({
        credentialId,
        schemaId: req.schema.schemaId,
        proofType: req.proofType,
        channel: req.channel,
        holderDid: req.holderDid,
        revocationNonce,
        ...(slot ? { status: { uri: this.statusListUri(slot.partition), idx: slot.index } } : {}),
        expiresAt: expiresAt.toISOString(),
      }),
      envelope: sealed
        ? {
            holderDid: req.holderDid,
            schemaId: req.schema.schemaId,
            expiresAt: expiresAt.toISOString(),
            ...sealed,
            externalId: credentialId,
          }
        : null,
    };
    return { issuance, credential: signed.credential };
  }

  statusListUri(partition: number): string {
    return this.deps.identity.urls.statusList(partition);
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
