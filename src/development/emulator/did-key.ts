const BASE58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/** Base58 (Bitcoin alphabet), small enough to keep a dependency out of the kit for one DID. */
export function base58btcEncode(bytes: Uint8Array): string {
  const digits: number[] = [];
  for (const byte of bytes) {
    let carry = byte;
    for (let i = 0; i < digits.length; i++) {
      carry += (digits[i] ?? 0) << 8;
      digits[i] = carry % 58;
      carry = Math.floor(carry / 58);
    }
    while (carry > 0) {
      digits.push(carry % 58);
      carry = Math.floor(carry / 58);
    }
  }
  let out = '';
  for (const byte of bytes) {
    if (byte !== 0) break;
    out += '1';
  }
  for (let i = digits.length - 1; i >= 0; i--) out += BASE58_ALPHABET[digits[i] ?? 0];
  return out;
}

// multicodec x25519-pub (0xec) as an unsigned varint
const X25519_PUB_MULTICODEC = Uint8Array.of(0xec, 0x01);

/** `did:key` of a raw 32-byte X25519 public key (did:key spec: multicodec 0xec, multibase base58btc). */
export function x25519DidKey(rawPublicKey: Uint8Array): string {
  if (rawPublicKey.length !== 32) throw new Error('x25519 public key must be 32 bytes');
  const prefixed = new Uint8Array(X25519_PUB_MULTICODEC.length + rawPublicKey.length);
  prefixed.set(X25519_PUB_MULTICODEC, 0);
  prefixed.set(rawPublicKey, X25519_PUB_MULTICODEC.length);
  return `did:key:z${base58btcEncode(prefixed)}`;
}
