import { randomUUID } from 'node:crypto';
import { generateEncodedKeyPair } from '../../envelope/keys.js';
import { x25519DidKey } from './did-key.js';
import type { VcUpload } from './schemas.js';

export type EmulatedRoute = 'initialize-user' | 'dstorage';

export interface HolderRecord {
  email: string;
  userId: string;
  did: string;
  /** Hex of the X25519 public key's DER SPKI, as `initialize-user` answers it. */
  publicKey: string;
  /**
   * Hex of the PKCS#8 private key. The real service never lets a partner see this; the emulator
   * keeps it so the demo and the tests can decrypt as the holder's wallet would.
   */
  privateKeyPkcs8Hex: string;
  createdAt: string;
}

/** The 201 answer of `POST /dstorage/vcs` (docs/interface.md "Direct issuance"). */
export interface StoreResponse {
  storagePath: string;
  state: 'stored';
  envelopeVersion: '1';
  createdAt: string;
}

export interface EmulatorStoredVc {
  envelope: VcUpload;
  response: StoreResponse;
  idempotencyKey: string | null;
  partnerId: string;
}

export interface RequestLogEntry {
  at: string;
  route: EmulatedRoute;
  email: string | null;
  externalId: string | null;
  idempotencyKey: string | null;
  /** The caller's `x-request-id`, when it sent one. */
  requestId: string | null;
  /** 0 until the response is written. */
  status: number;
}

// The X25519 DER SPKI is this 12-byte header followed by the raw 32-byte key.
const X25519_SPKI_HEADER_LENGTH = 12;

/** Emails are compared case-insensitively, as account systems do. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/** In-memory state of the emulated hosting service; tests may read and reset it directly. */
export class EmulatorState {
  /** By normalized email. */
  readonly holders = new Map<string, HolderRecord>();
  /** By `externalId`. */
  readonly envelopes = new Map<string, EmulatorStoredVc>();
  readonly requests: RequestLogEntry[] = [];

  holderByEmail(email: string): HolderRecord | undefined {
    return this.holders.get(normalizeEmail(email));
  }

  /** Resolves or creates the holder: the same email always gets the same answer. */
  resolveHolder(email: string, now: Date): { holder: HolderRecord; created: boolean } {
    const key = normalizeEmail(email);
    const existing = this.holders.get(key);
    if (existing) return { holder: existing, created: false };
    // Encoded by the generation itself (never export a just-generated key: keys.ts).
    const { spki, pkcs8 } = generateEncodedKeyPair('x25519');
    const holder: HolderRecord = {
      email: key,
      userId: randomUUID(),
      did: x25519DidKey(spki.subarray(X25519_SPKI_HEADER_LENGTH)),
      publicKey: spki.toString('hex'),
      privateKeyPkcs8Hex: pkcs8.toString('hex'),
      createdAt: now.toISOString(),
    };
    this.holders.set(key, holder);
    return { holder, created: true };
  }

  envelopesOf(holderDid: string | undefined): EmulatorStoredVc[] {
    const all = [...this.envelopes.values()];
    return holderDid === undefined ? all : all.filter((s) => s.envelope.holderDid === holderDid);
  }

  reset(): void {
    this.holders.clear();
    this.envelopes.clear();
    this.requests.length = 0;
  }
}
