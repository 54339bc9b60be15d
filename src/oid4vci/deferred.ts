import { timingSafeEqual } from 'node:crypto';
import type { RequestLike } from '@openid4vc/oauth2';
import type { Openid4vciIssuer } from '@openid4vc/openid4vci';
import { AppError, ProtocolError } from '../errors.js';
import { credentialDeferredEvent } from '../events/builders.js';
import type { HolderBindingJwk } from '../formats/sd-jwt-vc/holder-binding-key.js';
import type { AuditActor } from '../model.js';
import type { Oid4vciOffer } from '../store/store.js';
import { issueBatch, issueSingle } from './batch.js';
import { denied, providerClaimsOrPending } from './claims.js';
import { credentialIdOf, didJwk } from './credential-ids.js';
import { answerWith, requestedEncryption } from './encryption.js';
import {
  credentialRequestDenied,
  fromLibrary,
  invalidCredentialRequest,
  invalidTransactionId,
} from './errors.js';
import { random, sha256 } from './library.js';
import { newNotificationId } from './notification.js';
import type { ChannelParts, ProtocolAnswer } from './parts.js';
import { credentialRequestBody } from './request-encryption.js';

/**
 * Deferred issuance (OpenID4VCI 1.0 §9). When the claims provider answers "pending" (eligible,
 * not ready yet) the credential endpoint answers 202 with a `transaction_id` and an `interval`
 * instead of a credential, and the offer moves to `deferred`, keeping the proof's key. The wallet
 * polls the deferred credential endpoint with the same access token (its lifetime is extended to
 * the transaction's) and the transaction id: each poll asks the provider again, unless an admin
 * supplied the claims (`POST /admin/deferred-credentials/:credentialId/claims`); once they are
 * there the credential is signed for the kept key, recorded and answered, and the transaction is
 * used up. A transaction unknown, lapsed (OID4VCI_DEFERRED_SECONDS), used or another access
 * token's is `invalid_transaction_id`.
 */

/** The wallet's wait between polls when the provider names none. */
export const DEFAULT_INTERVAL_SECONDS = 30;
/** OID4VCI_DEFERRED_SECONDS's default: how long a transaction waits for its claims. */
export const DEFAULT_DEFERRED_SECONDS = 86_400;

const sameDigest = (a: string, b: string): boolean => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** What the credential endpoint hands over when the provider answered "pending". */
export interface Deferral {
  offer: Oid4vciOffer;
  /** The proofs' keys: one credential each (more than one: a batch, batch.ts). */
  holderJwks: readonly HolderBindingJwk[];
  answer: { retryAfterSeconds?: number | undefined };
}

const pendingAnswer = (
  issuer: Openid4vciIssuer,
  transactionId: string,
  interval: number,
): ProtocolAnswer => ({
  body: issuer.createDeferredCredentialResponse({ transactionId, interval }),
  headers: {},
  status: 202,
});

/** The credential endpoint's 202: the transaction is stored and `credential.deferred` written with it. */
export async function defer(parts: ChannelParts, d: Deferral): Promise<ProtocolAnswer> {
  const { deps } = parts;
  const now = parts.now();
  const transactionId = random(32);
  const interval = d.answer.retryAfterSeconds ?? DEFAULT_INTERVAL_SECONDS;
  const expiresAt = new Date(now.getTime() + (deps.deferredSeconds ?? DEFAULT_DEFERRED_SECONDS) * 1000);
  // The id the (first) credential will have: what `credential.deferred` names and an admin supplies
  // the claims by.
  const credentialId = credentialIdOf(d.offer.offerHash);
  const deferred = await deps.store.deferTransaction(d.offer.offerHash, {
    transactionHash: sha256(transactionId),
    expiresAt,
    holderJwks: JSON.stringify(d.holderJwks),
    interval,
    credentialId,
    event: credentialDeferredEvent({
      credentialId,
      schemaId: d.offer.schemaId,
      channel: 'oid4vci',
      holderDid: didJwk(d.holderJwks[0]!),
      transactionExpiresAt: expiresAt.toISOString(),
      interval,
    }),
    now,
  });
  // Another request with the same access token issued or deferred it in between.
  if (!deferred) throw invalidCredentialRequest('the credential of this access token was already requested');
  return pendingAnswer(parts.issuer, transactionId, interval);
}

/**
 * `POST /oid4vci/deferred-credential`: the credential once its claims are there, else 202 again.
 * §9.1, §10: the request may come encrypted (request-encryption.ts) and may name a key for the
 * answer (encryption.ts); neither is required here, so a wallet polling as before is served.
 */
export async function deferredCredential(
  parts: ChannelParts,
  request: RequestLike,
  sent: Record<string, unknown>,
  encrypted?: string,
): Promise<ProtocolAnswer> {
  const offer = await parts.authorize(request, ['deferred', 'issued']);
  const decryption = parts.deps.requestDecryption;
  const body = await credentialRequestBody(decryption && { ...decryption, required: false }, sent, encrypted);
  const { encryption, request: deferredRequest } = await requestedEncryption(body, false);
  const answer = await serveDeferred(parts, offer, deferredRequest);
  return {
    ...(await answerWith(answer.body, encryption)),
    ...(answer.status ? { status: answer.status } : {}),
  };
}

async function serveDeferred(
  parts: ChannelParts,
  offer: Oid4vciOffer,
  body: Record<string, unknown>,
): Promise<ProtocolAnswer> {
  const { deps } = parts;
  let transactionId: string;
  try {
    transactionId = parts.issuer.parseDeferredCredentialRequest({ deferredCredentialRequest: body })
      .deferredCredentialRequest.transaction_id;
  } catch (err) {
    throw fromLibrary(err, 'invalid deferred credential request');
  }
  const d = offer.deferral;
  if (d === null || !sameDigest(sha256(transactionId), d.transactionHash))
    throw invalidTransactionId('no transaction of this access token has this transaction_id');
  if (offer.state !== 'deferred' || offer.credentialId === null)
    throw invalidTransactionId('this transaction_id was already used');
  if (d.expiresAt <= parts.now()) throw invalidTransactionId('this transaction_id has expired');

  const proofType = parts.metadata.proofTypeOf(offer.configurationId, offer.schemaId);
  const schema = deps.identity.catalog.schemas.get(offer.schemaId);
  if (!schema || !parts.metadata.offers(schema, proofType))
    throw credentialRequestDenied('this credential is no longer issued');
  let claims = d.pushedClaims;
  if (claims === null) {
    const answer = await providerClaimsOrPending(parts, schema, offer.userId, proofType).catch(denied);
    if (answer.pending)
      return pendingAnswer(parts.issuer, transactionId, answer.retryAfterSeconds ?? d.interval);
    claims = answer.claims;
  }
  const ready = claims;
  const credentialId = offer.credentialId;
  const holderJwks = JSON.parse(d.holderJwks) as HolderBindingJwk[];
  if (holderJwks.length > 1) {
    const notification = newNotificationId(parts);
    const credentials = await issueBatch(parts, {
      offer,
      proofType,
      schema,
      claims: ready,
      holderJwks,
      notificationHash: notification?.hash ?? null,
    }).catch((err: unknown) => {
      // A concurrent poll recorded the batch: this one is a use of a used transaction.
      if (err instanceof ProtocolError && err.error === 'invalid_credential_request')
        throw invalidTransactionId('this transaction_id was already used');
      throw err;
    });
    return deferredAnswer(credentials, notification?.id);
  }
  const { credential, notificationId } = await issueSingle(parts, {
    offer,
    proofType,
    schema,
    claims: ready,
    holderJwk: holderJwks[0]!,
    credentialId,
    // The provider's claims were checked by providerClaimsOrPending; an admin's are checked as it signs.
    claimsChecked: d.pushedClaims === null,
    reason: 'OpenID4VCI deferred credential',
    now: parts.now(),
  });
  // A concurrent poll signed it: this one is a use of a used transaction.
  if (credential === undefined) throw invalidTransactionId('this transaction_id was already used');
  return deferredAnswer([credential], notificationId);
}

/**
 * §9.2: `credentials` and `notification_id` as in the credential response. Written here, not by
 * the library's createDeferredCredentialResponse: in @openid4vc/openid4vci 0.4.6 its check refuses
 * `notification_id` beside `credentials`, the reverse of what §9.2 allows.
 */
function deferredAnswer(
  credentials: Array<string | Record<string, unknown>>,
  notificationId: string | undefined,
): ProtocolAnswer {
  return {
    body: {
      credentials: credentials.map((credential) => ({ credential })),
      ...(notificationId === undefined ? {} : { notification_id: notificationId }),
    },
    headers: {},
  };
}

/** An admin's claims for a deferred credential, by the credential id `credential.deferred` named. */
export interface SuppliedClaims {
  credentialId: string;
  claims: Record<string, unknown>;
  audit: AuditActor;
}

/**
 * Stores an admin's claims for a deferred credential whose transaction waits: checked against
 * its schema now (422 to the admin, not the wallet), given to the wallet at its next poll.
 */
export async function supplyDeferredClaims(
  parts: ChannelParts,
  req: SuppliedClaims,
): Promise<{ credentialId: string; transactionExpiresAt: Date }> {
  const { deps } = parts;
  const now = parts.now();
  const none = () =>
    new AppError('NOT_FOUND', 'credentialId: no deferred OpenID4VCI credential waits with this id', {
      field: 'credentialId',
    });
  const waiting = await deps.store.deferredByCredential(req.credentialId);
  if (!waiting?.deferral || waiting.deferral.expiresAt <= now) throw none();
  deps.identity.catalog.schemas.assertClaims(
    deps.identity.catalog.schemas.require(waiting.schemaId),
    req.claims,
  );
  const offer = await deps.store.supplyClaims(req.credentialId, req.claims, now, {
    at: now,
    actor: req.audit.actor,
    action: 'oid4vci.claims',
    target: req.credentialId,
    reason: req.audit.reason,
  });
  if (!offer?.deferral) throw none();
  return { credentialId: req.credentialId, transactionExpiresAt: offer.deferral.expiresAt };
}
