import type { KeyObject } from 'node:crypto';

export type { Envelope } from '../model.js';

/** docs/interface.md `/available-vc` names for the same four fields. */
export interface PreviewFields {
  encryptedData: string;
  iv: string;
  authTag: string;
  dataEncPublicKey: string;
}

export type HolderCurve = 'x25519' | 'p256' | 'secp256k1';

/** A validated holder public key, as returned by `parseHolderPublicKey`. */
export interface HolderPublicKey {
  curve: HolderCurve;
  /** The DER SubjectPublicKeyInfo as received (EC points may be compressed). */
  spkiDer: Buffer;
  keyObject: KeyObject;
}
