import type { HolderBindingJwk } from '../formats/sd-jwt-vc/holder-binding-key.js';
import type { ProofType } from '../model.js';
import type { LoadedSchema } from '../schemas/schema-registry.js';
import type { Oid4vciOffer } from '../store/store.js';
import { batchIdOf, credentialIdOf, didJwk } from './credential-ids.js';
import { invalidCredentialRequest } from './errors.js';
import { newNotificationId } from './notification.js';
import type { ChannelParts } from './parts.js';

/**
 * Batch issuance (OpenID4VCI 1.0 §8.2 `proofs`, §12.2.4 `batch_credential_issuance`): one
 * credential per proven key, the same claims, each with its own salts, random status slot and
 * nonce, recorded in one transaction under the offer's batch id. A failure while signing any of
 * them (a key token down) records none; the offer is then still open.
 */
export async function issueBatch(
  parts: ChannelParts,
  batch: {
    offer: Oid4vciOffer;
    /** The offer's format (its credential configuration's): an mdoc offer's batch is mdocs. */
    proofType: ProofType;
    schema: LoadedSchema;
    claims: Record<string, unknown>;
    holderJwks: readonly HolderBindingJwk[];
    /** The digest of the answer's notification id (notification.ts); null when none is given. */
    notificationHash?: string | null;
  },
): Promise<Array<string | Record<string, unknown>>> {
  const { deps } = parts;
  const { offer, schema, claims, proofType } = batch;
  const issuer = deps.core.requireIssuer(schema, proofType);
  const expiresAt = new Date(parts.now().getTime() + schema.expiresInSeconds * 1000);
  const batchId = batchIdOf(offer.offerHash);
  const signed = await deps.core.untilRecorded(proofType, 'oid4vci', () =>
    deps.core.signBatchForResponse(
      batch.holderJwks.map((holderJwk, n) => ({
        issuer,
        credentialId: credentialIdOf(offer.offerHash, n),
        channel: 'oid4vci' as const,
        userId: offer.userId,
        holderDid: didJwk(holderJwk),
        schema,
        proofType,
        claims,
        claimsChecked: offer.claims === null ? true : undefined,
        expiresAt,
        holderJwk,
        dedupe: false as const,
        emailHash: offer.emailHash ?? undefined,
        batchId,
        audit: { actor: offer.createdBy, reason: 'OpenID4VCI credential offer (batch)' },
      })),
    ),
  );
  if (signed === undefined)
    throw invalidCredentialRequest('the credentials of this offer were already issued');
  await deps.store.markIssued(
    offer.offerHash,
    signed[0]!.record.credentialId,
    batch.notificationHash ?? null,
  );
  return signed.map((s) => s.credential);
}

/**
 * One credential for one proven key (the credential endpoint's, or a deferred transaction's once
 * its claims are there): signed, recorded, then the offer marked issued with a notification id
 * (notification.ts). `credential` is undefined when another request recorded it first; the
 * caller answers that with its own error.
 */
export async function issueSingle(
  parts: ChannelParts,
  single: {
    offer: Oid4vciOffer;
    proofType: ProofType;
    schema: LoadedSchema;
    claims: Record<string, unknown>;
    holderJwk: HolderBindingJwk;
    credentialId: string;
    /** The claims provider's claims were checked already; an admin's are checked as it signs. */
    claimsChecked: boolean;
    reason: string;
    now: Date;
  },
): Promise<{ credential: string | Record<string, unknown> | undefined; notificationId: string | undefined }> {
  const { deps } = parts;
  const { offer, schema, proofType, holderJwk } = single;
  const { record, credential } = await deps.core.untilRecorded(proofType, 'oid4vci', () =>
    deps.core.signForResponse({
      issuer: deps.core.requireIssuer(schema, proofType),
      credentialId: single.credentialId,
      channel: 'oid4vci',
      userId: offer.userId,
      holderDid: didJwk(holderJwk),
      schema,
      proofType,
      claims: single.claims,
      claimsChecked: single.claimsChecked ? true : undefined,
      expiresAt: new Date(single.now.getTime() + schema.expiresInSeconds * 1000),
      holderJwk,
      dedupe: false,
      emailHash: offer.emailHash ?? undefined,
      audit: { actor: offer.createdBy, reason: single.reason },
    }),
  );
  const notification = credential === undefined ? undefined : newNotificationId(parts);
  await deps.store.markIssued(offer.offerHash, record.credentialId, notification?.hash ?? null);
  return { credential, notificationId: notification?.id };
}
