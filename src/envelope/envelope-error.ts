/**
 * Holder-side failure. `ENVELOPE_INVALID`: the envelope cannot be opened with this key (malformed,
 * wrong key, tampered, curve mismatch, non-JSON plaintext). `HOLDER_KEY_INVALID`: the key given is
 * not an X25519, P-256 or secp256k1 private key.
 */
export type EnvelopeErrorCode = 'ENVELOPE_INVALID' | 'HOLDER_KEY_INVALID';

export class EnvelopeError extends Error {
  readonly code: EnvelopeErrorCode;

  constructor(code: EnvelopeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EnvelopeError';
    this.code = code;
  }
}
