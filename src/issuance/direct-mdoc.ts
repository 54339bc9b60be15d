import { randomUUID } from 'node:crypto';
import { MSO_MDOC } from '../formats/mso-mdoc/names.js';
import { didJwk, type HolderBindingJwk } from '../formats/sd-jwt-vc/holder-binding-key.js';
import type { IssuerCatalog } from '../identity/issuer-identity.js';
import type { AuditActor } from '../model.js';
import type { IssuanceRecord } from '../store/store.js';
import { type DirectClaims, directClaims, notEligible } from './direct-claims.js';
import type { EmailHasher } from './email-hash.js';
import type { IssuanceCore } from './issuance-core.js';

/** The one format direct issuance gives to a holder key instead of uploading it. */
export const DIRECT_TO_KEY = MSO_MDOC;

export type DirectToKeyRequest = DirectClaims & {
  /** The recipient's email: kept only as its keyed hash (history `--email`); nothing is sent upstream. */
  email: string;
  schemaId: string;
  /** The holder's device key, the MSO's `deviceKeyInfo`. */
  holderJwk: HolderBindingJwk;
  expiresAt: Date;
  /** The credential id, derived from an Idempotency-Key; random otherwise. */
  credentialId?: string | undefined;
  audit?: AuditActor | undefined;
  batchId?: string | undefined;
};

export interface DirectToKeyResult {
  record: IssuanceRecord;
  /** The signed credential; undefined when the credential id was recorded before (nothing signed). */
  credential: string | undefined;
}

/**
 * Direct issuance of an ISO mdoc to a holder key (docs/interface.md "admin issue-vc"): the
 * hosting service's interface knows SD-JWT VC and BJJ only, so the mdoc is neither sealed nor
 * uploaded (no initialize-user either): it is signed with the given key as its device key,
 * recorded (upload state `none`, the holder its key's did:jwk) and handed back to the admin, who
 * delivers it. Revocation, history, audit and events are every credential's.
 */
export class DirectToKeyIssuance {
  constructor(
    private readonly deps: {
      core: IssuanceCore;
      identity: { readonly catalog: Pick<IssuerCatalog, 'schemas'> };
      hashEmail: EmailHasher;
    },
  ) {}

  issue(req: DirectToKeyRequest): Promise<DirectToKeyResult> {
    const { core } = this.deps;
    return core.untilRecorded(DIRECT_TO_KEY, 'direct', async () => {
      const schema = this.deps.identity.catalog.schemas.require(req.schemaId);
      const issuer = core.requireIssuer(schema, DIRECT_TO_KEY);
      const claims = await directClaims(core, req, schema, DIRECT_TO_KEY);
      if (!claims) throw notEligible(schema.schemaId);
      this.deps.identity.catalog.schemas.assertClaims(schema, claims);
      const emailHash = await this.deps.hashEmail(req.email);
      const { record, credential } = await core.signForResponse({
        issuer,
        credentialId: req.credentialId ?? randomUUID(),
        channel: 'direct',
        userId: 'claimsUserId' in req ? req.claimsUserId : `email:${emailHash}`,
        holderDid: didJwk(req.holderJwk),
        schema,
        proofType: DIRECT_TO_KEY,
        claims,
        claimsChecked: true,
        expiresAt: req.expiresAt,
        holderJwk: req.holderJwk,
        dedupe: false,
        emailHash,
        batchId: req.batchId,
        audit: req.audit,
      });
      return { record, credential: typeof credential === 'string' ? credential : undefined };
    });
  }
}
