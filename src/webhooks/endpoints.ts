import { randomUUID } from 'node:crypto';
import type { WebhookStore } from '../store/webhook-store.js';
import { newWebhookSecret } from './signature.js';
import type { WebhookSigningKeys } from './signing-keys.js';
import type { WebhookEndpointView } from './views.js';

/** How long a replaced secret keeps signing beside the new one. */
export const ROTATION_OVERLAP_MS = 24 * 3600_000;

/** Registers an endpoint; answers it with its secret, which is shown this once. */
export async function addEndpoint(
  store: WebhookStore,
  keys: WebhookSigningKeys,
  input: { url: string; events: string[]; description?: string | undefined },
): Promise<WebhookEndpointView & { secret: string }> {
  const id = `wh_${randomUUID()}`;
  const secret = newWebhookSecret();
  const createdAt = new Date();
  const description = input.description ?? null;
  await store.addEndpoint({
    id,
    url: input.url,
    events: input.events,
    description,
    secret: keys.seal(id, secret),
    createdAt,
  });
  return {
    id,
    url: input.url,
    events: input.events,
    description,
    createdAt: createdAt.toISOString(),
    secret,
  };
}

/**
 * A new secret for the endpoint, shown this once; the old one keeps signing beside it (a second
 * `v1,` signature) for `ROTATION_OVERLAP_MS`, so receivers can switch without a gap. Undefined
 * when there is no such endpoint.
 */
export async function rotateEndpointSecret(
  store: WebhookStore,
  keys: WebhookSigningKeys,
  id: string,
): Promise<{ id: string; secret: string; previousValidUntil: string } | undefined> {
  const secret = newWebhookSecret();
  const until = new Date(Date.now() + ROTATION_OVERLAP_MS);
  if (!(await store.rotateSecret(id, keys.seal(id, secret), until))) return undefined;
  return { id, secret, previousValidUntil: until.toISOString() };
}
