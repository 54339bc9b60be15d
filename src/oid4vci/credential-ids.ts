import { createHash } from 'node:crypto';

/** The names the credential endpoint gives what it issues: credential ids, holders, batches. */

/**
 * The credential id of an offer's credential: one offer, one credential (or one batch), whoever
 * asks twice. The `n`th of a batch (from 1) has its own; the first is the single credential's.
 */
export function credentialIdOf(offerHash: string, n = 0): string {
  const h = createHash('sha256')
    .update(`oid4vci credential\u0000${offerHash}${n === 0 ? '' : `\u0000${n}`}`)
    .digest();
  h[6] = (h[6]! & 0x0f) | 0x80;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export { didJwk } from '../formats/sd-jwt-vc/holder-binding-key.js';

/**
 * The batch id an offer's batch is recorded under (`batch-` and hex, like a CSV run's): history's
 * `batchId` filter and the bulk status changes' `batchId` selector find the whole batch by it.
 */
export function batchIdOf(offerHash: string): string {
  return `batch-${createHash('sha256').update(`oid4vci batch\u0000${offerHash}`).digest('hex').slice(0, 32)}`;
}
