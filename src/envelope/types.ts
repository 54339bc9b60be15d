import type { KeyObject } from 'node:crypto';

/** DESIGN §2 / spec 2.7 encrypted envelope: four standard-base64 fields. */
export interface Envelope {
  /** AES-256-GCM ciphertext of the UTF-8 of `JSON.stringify(value)`. */
  data: string;
  /** 12-byte AES-GCM IV. */
  iv: string;
  /** 16-byte AES-GCM tag. */
  authTag: string;
  /** DER SubjectPublicKeyInfo of the ephemeral ECDH public key. */
  encryptedKey: string;
}

/** spec 4.6 `/available-vc` names for the same four fields. */
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
