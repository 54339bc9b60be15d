import type { Envelope, PreviewFields } from './types.js';

/** docs/interface.md `/available-vc` preview names: data → encryptedData, encryptedKey → dataEncPublicKey. */
export function toPreviewFields(e: Envelope): PreviewFields {
  return { encryptedData: e.data, iv: e.iv, authTag: e.authTag, dataEncPublicKey: e.encryptedKey };
}

/** The inverse of `toPreviewFields`, for the holder side. */
export function fromPreviewFields(p: PreviewFields): Envelope {
  return { data: p.encryptedData, iv: p.iv, authTag: p.authTag, encryptedKey: p.dataEncPublicKey };
}
