import type { JWK } from 'jose';
import type { ClaimsAnswer } from '../claims/index.js';
import { type HolderPublicKey, sealEnvelope, toPreviewFields } from '../envelope/index.js';
import { AppError } from '../errors.js';
import { formatsServing } from '../formats/index.js';
import type { IssuerCatalog } from '../identity/issuer-identity.js';
import type { ProofType } from '../model.js';
import type { LoadedSchema } from '../schemas/schema-registry.js';
import type { IssuanceRecord } from '../store/store.js';
import type { IssuanceCore } from './issuance-core.js';

export interface HostedIssuanceDeps {
  core: IssuanceCore;
  /** The issuer whose schemas these are (its catalogue, read at each request: a reload swaps it). */
  identity: { readonly catalog: Pick<IssuerCatalog, 'schemas'> };
  now?: () => Date;
}

export interface PreviewEntry {
  holderDID: string;
  schemaId: string;
  credentialSubject: ReturnType<typeof toPreviewFields>;
  proofType: ProofType;
}

export interface HostedIssueRequest {
  holderDid: string;
  userId: string;
  schemaId: string;
  proofType: ProofType;
  encryptTo: HolderPublicKey;
  holderJwk?: JWK | undefined;
}

/** The proof types the hosted door issues. */
const HOSTED: readonly ProofType[] = formatsServing('hosted').map((f) => f.proofType);
/**
 * The holder's flow (docs/interface.md "available-vc", "issue-vc"): the claims provider decides
 * what the user may have; the core signs, seals, records and uploads it.
 */
export class HostedIssuanceService {
  private readonly core: IssuanceCore;
  private readonly now: () => Date;

  constructor(private readonly deps: HostedIssuanceDeps) {
    this.core = deps.core;
    this.now = deps.now ?? (() => new Date());
  }

  /** docs/interface.md "available-vc": one encrypted preview per eligible schema and proof type. */
  async availableVc(req: {
    holderDid: string;
    userId: string;
    pubKey: HolderPublicKey;
    schemaId?: string | undefined;
    proofType?: ProofType | undefined;
  }): Promise<PreviewEntry[]> {
    const candidates = this.deps.identity.catalog.schemas
      .select({ schemaId: req.schemaId, proofType: req.proofType })
      // Only the formats of this door (docs/interface.md): an mdoc is offered through OpenID4VCI.
      .filter(({ schema, proofType }) => HOSTED.includes(proofType) && this.core.issues(schema, proofType));
    const answers = new Map<string, Promise<ClaimsAnswer>>();
    const out: PreviewEntry[] = [];
    for (const { schema, proofType } of candidates) {
      // One lookup per schema and proof type (providers may answer per proof type).
      const key = `${schema.schemaId}\u0000${proofType}`;
      if (!answers.has(key)) answers.set(key, this.core.lookupClaims(schema, req.userId, proofType));
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
   * docs/interface.md "issue-vc": authoritative claims, sign, encrypt, record, upload. Resolves when
   * the envelope is stored upstream; throws 502 (after recording) when it is not, and the outbox retries.
   */
  async issueHosted(req: HostedIssueRequest): Promise<IssuanceRecord> {
    const schema = this.deps.identity.catalog.schemas.require(req.schemaId);
    const record = await this.core.untilRecorded(req.proofType, 'hosted', () => this.record(schema, req));
    const uploadStart = performance.now();
    const uploaded = await this.core.uploadWithinRequest(record);
    this.core.mark('upload', uploadStart);
    return uploaded;
  }

  private async record(schema: LoadedSchema, req: HostedIssueRequest): Promise<IssuanceRecord> {
    const issuer = this.core.requireIssuer(schema, req.proofType);
    const claimsStart = performance.now();
    const answer = await this.core.lookupClaims(schema, req.userId, req.proofType);
    this.core.mark('claims', claimsStart);
    if (!answer.eligible) {
      throw new AppError('NOT_FOUND', `userId: no ${schema.schemaId} credential is available for this user`, {
        field: 'userId',
      });
    }
    const { id: _id, ...claims } = answer.credentialSubject;
    const expiresAt = answer.expiresAt ?? new Date(this.now().getTime() + schema.expiresInSeconds * 1000);
    return this.core.signAndRecord({
      issuer,
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
}
