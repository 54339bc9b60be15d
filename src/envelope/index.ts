/**
 * Envelope encryption (docs/security.md, docs/interface.md): ECDH with a fresh ephemeral key on the holder
 * key's curve, HKDF-SHA256 to an AES-256-GCM key, standard-base64 fields. Issuer side seals;
 * the holder side (emulator, demo, tests) opens.
 */
export { openEnvelope, sealEnvelope } from './cipher.js';
export { EnvelopeError, type EnvelopeErrorCode } from './envelope-error.js';
export {
  generateHolderKeyPair,
  holderKeyFingerprint,
  parseHolderPublicKey,
  privateKeyFromPkcs8Hex,
} from './keys.js';
export { fromPreviewFields, toPreviewFields } from './preview.js';
export type { Envelope, HolderCurve, HolderPublicKey, PreviewFields } from './types.js';
