import { createHmac, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';

// Standard Webhooks specification, "Signature scheme": HMAC-SHA256 over `id.timestamp.body`,
// keyed with the base64 bytes after `whsec_`, sent as `v1,<base64>`; several signatures (during a
// secret rotation) are separated by spaces and a receiver accepts any one that verifies.

const SECRET_PREFIX = 'whsec_';
/** 24 random bytes, within the 24 to 64 the specification recommends. */
const SECRET_BYTES = 24;

/** A new endpoint secret, `whsec_<base64>`. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/** The HMAC key of a `whsec_` secret. Build it once per secret: it is reused for every delivery. */
export function webhookSigningKey(secret: string): KeyObject {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('a webhook secret starts with whsec_');
  return createSecretKey(Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64'));
}

/** The three headers of one delivery attempt; `keys` sign in order (the newest secret's first). */
export function webhookHeaders(
  keys: readonly KeyObject[],
  id: string,
  timestamp: Date,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const seconds = String(Math.floor(timestamp.getTime() / 1000));
  const signed = `${id}.${seconds}.${body}`;
  const signature = keys
    .map((k) => `v1,${createHmac('sha256', k).update(signed).digest('base64')}`)
    .join(' ');
  return { 'webhook-id': id, 'webhook-timestamp': seconds, 'webhook-signature': signature };
}
