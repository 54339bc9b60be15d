import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { type HolderPublicKey, parseHolderPublicKey } from '../envelope/index.js';
import { AppError, type ErrorCode, invalidParameter, upstreamUnavailable } from '../errors.js';
import { channelFormat } from '../formats/index.js';
import type { IssuerCatalog } from '../identity/issuer-identity.js';
import { type AuditActor, HolderDidSchema } from '../model.js';
import { unknownSchema } from '../schemas/schema-file.js';
import type { LoadedSchema } from '../schemas/schema-registry.js';
import { type InitializedUser, UpstreamError } from '../service-client/service-client.js';
import type { StatusService } from '../status/status-service.js';
import type { RenewalStore } from '../store/renewal-store.js';
import type { IssuanceHistoryStore, IssuanceSummary, NamedLockStore } from '../store/store.js';
import { backoffWithJitter } from './backoff.js';
import { type DirectClaims, directClaims, NOT_ELIGIBLE, notEligible } from './direct-claims.js';
import { disclosureFrameProblems, type InputProblem, type OnDuplicate } from './direct-input.js';
import { DirectToKeyIssuance } from './direct-mdoc.js';
import type { EmailHasher } from './email-hash.js';
import type { IssuanceCore } from './issuance-core.js';

export type { DirectClaims } from './direct-claims.js';

export type DirectIssueRequest = DirectClaims & {
  email: string;
  schemaId: string;
  vct: string;
  expiresAt: Date;
  disclosureFrame?: Record<string, unknown> | undefined;
  onDuplicate: OnDuplicate;
  /**
   * The request's Idempotency-Key: the credential id is derived from it, so a request re-run after
   * a crash (between recording and answering) finds its credential instead of signing another.
   */
  idempotencyKey?: string | undefined;
  /** Who asked: recorded with the new credential (and with each revocation onDuplicate makes). */
  audit?: AuditActor | undefined;
  /** The batch-issue run this row belongs to (a bulk status change may select by it). */
  batchId?: string | undefined;
  /** The credential this one renews. */
  renewedFrom?: string | undefined;
  /**
   * With caller-given claims: the claims provider's user id they came from (a renewal), kept so
   * that the next renewal asks the provider for the same user.
   */
  claimsFrom?: string | undefined;
};

export interface DirectIssueResult {
  /** `existing`: onDuplicate=ignore found a valid credential and issued nothing. */
  outcome: 'issued' | 'existing';
  record: IssuanceSummary;
}

export interface DirectIssuanceDeps {
  core: IssuanceCore;
  /** The issuer whose schemas these are (its catalogue, read at each request: a reload swaps it). */
  identity: { readonly catalog: Pick<IssuerCatalog, 'schemas'> };
  service: {
    initializeUser(
      email: string,
      options?: { timeoutMs?: number; attempt?: number },
    ): Promise<InitializedUser>;
  };
  history: IssuanceHistoryStore;
  /** The recipient's email is recorded as this keyed hash, for `history --email`. */
  hashEmail: EmailHasher;
  /**
   * What renewal needs of each direct credential, kept before it is signed (docs/operations.md
   * "Renewal"): the recipient sealed by `sealRecipient` (absent: no key to seal with, so the
   * credential will not be renewable) and the claims provider's user id.
   */
  renewals?: Pick<RenewalStore, 'addSource' | 'dropSource'> | undefined;
  sealRecipient?: ((credentialId: string, email: string) => string) | undefined;
  status: StatusService;
  /**
   * Shared by every process on one database (PostgreSQL instances, SQLite workers): the onDuplicate
   * decision per holder and schema then holds across them, not only within this process.
   */
  locks?: NamedLockStore | undefined;
  /** initialize-user retries on 5xx, timeouts and network errors (default 3 attempts from 200 ms). */
  retry?: { attempts?: number; baseDelayMs?: number } | undefined;
  /**
   * ADMIN_ISSUE_DEADLINE_MS: one bound for the whole request, initialize-user retries and the
   * upload wait together (default 15 s). Past it, initialize-user is a 502 and an upload pending.
   */
  deadlineMs?: number | undefined;
  now?: () => Date;
}

// The locked part (duplicate check, sign, record, revoke the old ones) takes milliseconds; the
// lease only matters when an instance dies holding it.
const SHARED_LOCK_LEASE_MS = 30_000;
const SHARED_LOCK_WAIT_MS = 30_000;

// docs/interface.md "admin issue-vc": these upstream answers are final and passed on with the same status.
const PASSED_ON: Readonly<Record<number, ErrorCode>> = {
  400: 'INVALID_PARAMETER',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
};

/** The format direct issuance signs (SD-JWT VC: the request's `vct` and `disclosureFrame` are its). */
const DIRECT = channelFormat('direct');

/**
 * Direct issuance (docs/interface.md "admin issue-vc"): resolve the holder by email, sign an
 * SD-JWT VC with no `cnf`, encrypt it to the holder's key, record it with a status slot and nonce,
 * upload it through the durable outbox. The claims are the caller's, or the schema's claims
 * provider's for a user id. Signing, sealing, recording and uploading are the core's.
 */
export class DirectIssuanceService {
  private readonly attempts: number;
  private readonly baseDelayMs: number;
  private readonly deadlineMs: number;
  private readonly now: () => Date;
  /** Per holder and schema, so onDuplicate decisions do not race within this process. */
  private readonly locks = new Map<string, Promise<void>>();

  /** An ISO mdoc given to a holder key, not uploaded (docs/interface.md "admin issue-vc"). */
  readonly toKey: DirectToKeyIssuance;

  constructor(private readonly deps: DirectIssuanceDeps) {
    this.toKey = new DirectToKeyIssuance(deps);
    this.attempts = Math.max(1, deps.retry?.attempts ?? 3);
    this.baseDelayMs = deps.retry?.baseDelayMs ?? 200;
    this.deadlineMs = deps.deadlineMs ?? 15_000;
    this.now = deps.now ?? (() => new Date());
  }

  async issue(req: DirectIssueRequest): Promise<DirectIssueResult> {
    const deadline = Date.now() + this.deadlineMs;
    const schema = this.deps.identity.catalog.schemas.require(req.schemaId);
    const recorded = await this.deps.core.untilRecorded(DIRECT, 'direct', () =>
      this.record(req, schema, deadline),
    );
    if (recorded.outcome === 'existing') {
      this.deps.core.report(DIRECT, 'direct', 'existing');
      return recorded;
    }
    try {
      return {
        outcome: 'issued',
        record: await this.deps.core.uploadWithinRequest(recorded.record, deadline),
      };
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'UPSTREAM_UNAVAILABLE')) throw err;
      // A final answer of the hosting service (400/401/403/404/409) is passed on with its
      // status and message. The credential stays recorded (details.credentialId) and queued.
      const cause = err.cause;
      const code =
        cause instanceof UpstreamError && !cause.retryable && cause.status !== undefined
          ? PASSED_ON[cause.status]
          : undefined;
      if (cause instanceof UpstreamError && code) {
        throw AppError.fromUpstream(cause.status!, code, cause.upstreamMessage ?? cause.message, {
          upstream: cause.route,
          upstreamStatus: cause.status,
          credentialId: recorded.record.credentialId,
        });
      }
      // Recorded and queued: the outbox retries with the same externalId; the caller sees pending.
      return recorded;
    }
  }

  private claimsOf(req: DirectClaims, schema: LoadedSchema) {
    return directClaims(this.deps.core, req, schema, DIRECT);
  }

  /** Up to the committed record: resolve the holder, then sign and record (or find the existing one). */
  private async record(req: DirectIssueRequest, schema: LoadedSchema, deadline: number) {
    const issuer = this.deps.core.requireIssuer(schema, DIRECT);
    // Known and checked before initialize-user, so a request that cannot succeed creates no account upstream.
    const claims = await this.claimsOf(req, schema);
    if (!claims) throw notEligible(schema.schemaId);
    this.deps.identity.catalog.schemas.assertClaims(schema, claims);
    if (req.disclosureFrame !== undefined && 'claimsUserId' in req) {
      // The caller's own claims had their frame checked with the body; the provider's only now.
      const problem = disclosureFrameProblems(req.disclosureFrame, claims)[0];
      if (problem) throw invalidParameter(problem.field, problem.message);
    }
    const user = await this.initializeUser(req.email, deadline);
    checkHolderDid(user);
    const encryptTo = holderKey(user);
    const emailHash = await this.deps.hashEmail(req.email);

    const credentialId =
      req.idempotencyKey === undefined ? randomUUID() : credentialIdFor(req.idempotencyKey);
    return this.exclusive(`${user.did}\u0000${schema.schemaId}`, async () => {
      const active =
        req.onDuplicate === 'allow'
          ? []
          : // Direct issuance is one format's: a holder's credential of the schema in another is another credential.
            (await this.deps.history.activeFor(user.did, schema.schemaId, DIRECT, this.now())).filter(
              (r) => r.credentialId !== credentialId,
            );
      if (req.onDuplicate === 'ignore') {
        const valid = active.find((r) => r.status === 0);
        if (valid) return { outcome: 'existing' as const, record: valid };
      }
      const renewals = this.deps.renewals;
      // Kept before signing, so no credential is recorded without it (a failed signing drops it).
      await renewals?.addSource({
        credentialId,
        schemaId: schema.schemaId,
        expiresAt: req.expiresAt,
        recipientSealed: this.deps.sealRecipient?.(credentialId, req.email) ?? null,
        claimsUserId: 'claimsUserId' in req ? req.claimsUserId : (req.claimsFrom ?? null),
      });
      const record = await this.deps.core
        .signAndRecord({
          issuer,
          credentialId,
          channel: 'direct',
          userId: user.userId,
          holderDid: user.did,
          schema,
          proofType: DIRECT,
          claims,
          expiresAt: req.expiresAt,
          encryptTo,
          // The format's own options (SD-JWT VC). docs/interface.md "admin issue-vc": the default
          // frame is every top-level claim, whatever the schema file says.
          options: { vct: req.vct, disclosureFrame: req.disclosureFrame ?? { _sd: Object.keys(claims) } },
          dedupe: false,
          emailHash,
          batchId: req.batchId,
          renewedFrom: req.renewedFrom,
          audit: req.audit,
        })
        .catch(async (err: unknown) => {
          // Nothing was recorded under the id: no sealed recipient is kept for it.
          await renewals?.dropSource(credentialId).catch(() => undefined);
          throw err;
        });
      // The new credential is committed first, so a failure here never leaves the holder with none.
      if (req.onDuplicate === 'revoke') {
        for (const old of active)
          await this.deps.status.change(old.revocationNonce, 'revoke', undefined, req.audit);
      }
      return { outcome: 'issued' as const, record };
    });
  }

  // initialize-user answering 500 means "retry with backoff"; resolving an email is idempotent.
  private async initializeUser(email: string, deadline: number): Promise<InitializedUser> {
    const pastDeadline = (last: string, details: object) =>
      upstreamUnavailable(
        `auth/initialize-user did not succeed within ADMIN_ISSUE_DEADLINE_MS (${this.deadlineMs} ms; last: ${last})`,
        details,
      );
    for (let attempt = 1; ; attempt++) {
      const left = deadline - Date.now();
      if (left <= 0) throw pastDeadline('no time left', { upstream: 'auth/initialize-user' });
      try {
        return await this.deps.service.initializeUser(email, { timeoutMs: left, attempt });
      } catch (err) {
        if (!(err instanceof UpstreamError)) throw err;
        const details = { upstream: err.route, upstreamStatus: err.status ?? null };
        if (!err.retryable) {
          const code = err.status === undefined ? undefined : PASSED_ON[err.status];
          if (code)
            throw AppError.fromUpstream(err.status!, code, err.upstreamMessage ?? err.message, details);
          throw upstreamUnavailable(`${err.route} refused the request (${err.message})`, details);
        }
        if (attempt >= this.attempts) {
          throw upstreamUnavailable(`${err.route} failed ${attempt} times (last: ${err.message})`, details);
        }
        const wait = backoffWithJitter(attempt, this.baseDelayMs, 5000);
        if (Date.now() + wait >= deadline) throw pastDeadline(err.message, details);
        await delay(wait);
      }
    }
  }

  private async exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(key) ?? Promise.resolve();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const mine = previous.then(() => gate);
    this.locks.set(key, mine);
    await previous;
    try {
      return await (this.deps.locks ? this.shared(this.deps.locks, key, fn) : fn());
    } finally {
      release();
      if (this.locks.get(key) === mine) this.locks.delete(key);
    }
  }

  private async shared<T>(locks: NamedLockStore, key: string, fn: () => Promise<T>): Promise<T> {
    // Hashed: the key joins holder and schema with a NUL, which PostgreSQL text cannot hold.
    const name = `direct:${createHash('sha256').update(key).digest('base64url')}`;
    const owner = randomUUID();
    const deadline = Date.now() + SHARED_LOCK_WAIT_MS;
    for (let attempt = 1; !(await locks.tryAcquire(name, owner, SHARED_LOCK_LEASE_MS)); attempt++) {
      if (Date.now() > deadline)
        throw new AppError('UNAVAILABLE', 'another instance is issuing to this holder and schema; retry');
      await delay(backoffWithJitter(attempt, 10, 200));
    }
    try {
      return await fn();
    } finally {
      // The issuance's outcome stands whatever the release does: a lock not released (the database
      // busy or gone) frees itself when its lease ends.
      await locks.release(name, owner).catch(() => undefined);
    }
  }

  /** The schema's `sdJwt.vct`, as loaded (the file's, else the default: docs/schemas-and-claims.md "The vct"). */
  defaultVct(schemaId: string): string | undefined {
    return this.deps.identity.catalog.schemas.get(schemaId)?.sdJwt.vct;
  }

  /** The schema's credential lifetime (`expiresInSeconds`): the CLI's default `--expiration`. */
  defaultLifetimeSeconds(schemaId: string): number | undefined {
    return this.deps.identity.catalog.schemas.get(schemaId)?.expiresInSeconds;
  }

  /**
   * Every problem of a would-be issue-vc body that the server can tell without issuing: unknown
   * schema, a user the claims provider has nothing for, reserved or invalid claims, a frame that
   * does not fit the claims (batch pre-check). A claims provider that cannot answer throws (502).
   */
  async checkRequest(
    row: DirectClaims & { schemaId: string; disclosureFrame?: Record<string, unknown> | undefined },
  ): Promise<InputProblem[]> {
    const schema = this.deps.identity.catalog.schemas.get(row.schemaId);
    if (!schema) return [{ field: 'schemaId', message: unknownSchema(row.schemaId) }];
    if (!this.deps.core.issues(schema, DIRECT))
      return [{ field: 'schemaId', message: `schema ${row.schemaId} is not issued as ${DIRECT}` }];
    const claims = await this.claimsOf(row, schema);
    if (!claims) return [{ field: 'claimsUserId', message: NOT_ELIGIBLE(schema.schemaId) }];
    const problems: InputProblem[] = schema
      .claimProblems(claims)
      .map((p) => ({ field: `credentialSubject.${p.claim}`, message: p.message }));
    if (row.disclosureFrame !== undefined)
      problems.push(...disclosureFrameProblems(row.disclosureFrame, claims));
    return problems;
  }
}

/**
 * The holder DID initialize-user answers is signed into `sub`: it follows the rules of
 * `/issue-vc`'s holderDID (src/model.ts, W3C DID Core §3.1, at most MAX_ID_BYTES), or the issuance
 * stops here, before anything is signed or recorded.
 */
function checkHolderDid(user: InitializedUser): void {
  const problem = HolderDidSchema.safeParse(user.did).error?.issues[0]?.message;
  if (problem !== undefined)
    throw upstreamUnavailable(
      `initialize-user answered a holder did that is refused (${problem}); nothing was signed`,
      {
        upstream: 'auth/initialize-user',
        field: 'did',
      },
    );
}

function holderKey(user: InitializedUser): HolderPublicKey {
  try {
    return parseHolderPublicKey(user.publicKey, 'publicKey');
  } catch {
    throw upstreamUnavailable('initialize-user answered a holder publicKey that is not a supported key', {
      upstream: 'auth/initialize-user',
    });
  }
}

/** A UUID (RFC 9562 version 8) derived from an Idempotency-Key: the same key, the same credential. */
export function credentialIdFor(idempotencyKey: string): string {
  const h = createHash('sha256').update(`admin/issue-vc\u0000${idempotencyKey}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x80;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
