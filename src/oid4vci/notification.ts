import { timingSafeEqual } from 'node:crypto';
import type { RequestLike } from '@openid4vc/oauth2';
import { z } from 'zod';
import { type WalletNotification, walletNotificationEvent } from '../events/builders.js';
import { invalidNotificationId, invalidNotificationRequest } from './errors.js';
import { random, sha256 } from './library.js';
import type { ChannelParts, ProtocolAnswer } from './parts.js';

/**
 * Notification endpoint (OpenID4VCI 1.0 §11): the wallet tells the issuer what became of a
 * credential it received (`credential_accepted`, `credential_failure`, `credential_deleted`).
 * Each credential response carries a `notification_id` (kept as its SHA-256 with the offer); a
 * notification is recorded in the credential's audit trail (`oid4vci.notification`, actor
 * `wallet`) and sent as a `credential.wallet_*` webhook event, in one transaction, once per
 * distinct event in a row. Off with OID4VCI_NOTIFICATIONS=off: no id, no endpoint, no metadata.
 */

/** The wallet's own words are kept short: they go into the audit log and a webhook event. */
const MAX_DESCRIPTION = 500;

const NotificationRequestSchema = z.object({
  notification_id: z.string().min(1).max(200),
  event: z.enum([
    'credential_accepted',
    'credential_failure',
    'credential_deleted',
  ] satisfies Array<WalletNotification>),
  // §11.1: printable ASCII without `"` and `\` (%x20-21 / %x23-5B / %x5D-7E).
  event_description: z
    .string()
    .max(MAX_DESCRIPTION)
    .regex(/^[\x20\x21\x23-\x5B\x5D-\x7E]*$/)
    .optional(),
});

/** A fresh notification id and the digest stored with the offer; none when notifications are off. */
export function newNotificationId(parts: ChannelParts): { id: string; hash: string } | undefined {
  if (parts.deps.notifications === false) return undefined;
  const id = random(24);
  return { id, hash: sha256(id) };
}

function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** `POST /oid4vci/notification` with the access token the credential was issued for: 204. */
export async function notification(
  parts: ChannelParts,
  request: RequestLike,
  body: Record<string, unknown>,
): Promise<ProtocolAnswer> {
  const offer = await parts.authorize(request, ['token', 'deferred', 'issued']);
  const parsed = NotificationRequestSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalidNotificationRequest(
      `${issue?.path.join('.') || 'body'}: ${
        issue?.path[0] === 'event'
          ? 'must be credential_accepted, credential_failure or credential_deleted'
          : (issue?.message ?? 'invalid')
      }`,
    );
  }
  const { notification_id: id, event, event_description: description } = parsed.data;
  const hash = sha256(id);
  if (
    offer.state !== 'issued' ||
    offer.credentialId === null ||
    offer.notificationHash === null ||
    !sameDigest(hash, offer.notificationHash)
  )
    throw invalidNotificationId('no credential of this access token has this notification_id');
  const at = parts.now();
  await parts.deps.store.recordNotification({
    offerHash: offer.offerHash,
    notificationHash: offer.notificationHash,
    event,
    audit: {
      at,
      actor: 'wallet',
      action: 'oid4vci.notification',
      target: offer.credentialId,
      reason: description === undefined ? event : `${event}: ${description}`,
    },
    webhookEvent: walletNotificationEvent(event, {
      credentialId: offer.credentialId,
      schemaId: offer.schemaId,
      ...(description === undefined ? {} : { eventDescription: description }),
    }),
  });
  return { body: {}, headers: {}, status: 204 };
}
