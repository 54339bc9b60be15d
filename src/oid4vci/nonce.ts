import { random } from './library.js';
import type { ChannelParts } from './parts.js';

const NONCE_SECONDS = 300;

/** Nonce endpoint (OpenID4VCI 1.0 §7): a fresh `c_nonce`, kept until a proof takes it. */
export async function nonce(parts: ChannelParts): Promise<Record<string, unknown>> {
  const cNonce = random(24);
  await parts.deps.store.createNonce(cNonce, new Date(parts.now().getTime() + NONCE_SECONDS * 1000));
  return parts.issuer.createNonceResponse({ cNonce, cNonceExpiresIn: NONCE_SECONDS });
}
