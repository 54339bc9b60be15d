import {
  createCipheriv,
  createPublicKey,
  diffieHellman,
  ECDH,
  generateKeyPairSync,
  type KeyObject,
} from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { deriveContentKey } from '../../../src/envelope/cipher.js';
import {
  type Envelope,
  EnvelopeError,
  fromPreviewFields,
  generateHolderKeyPair,
  type HolderCurve,
  openEnvelope,
  parseHolderPublicKey,
  privateKeyFromPkcs8Hex,
  sealEnvelope,
  toPreviewFields,
} from '../../../src/envelope/index.js';
import { computeSharedSecret, matchSpki } from '../../../src/envelope/keys.js';
import { AppError } from '../../../src/errors.js';

interface VectorCase {
  name: string;
  curve: string;
  holderPrivateKeyPkcs8Hex: string;
  holderPublicKeySpkiHex: string;
  ephemeralPrivateKeyPkcs8Hex: string;
  sharedSecretHex: string;
  aesKeyHex: string;
  plaintextUtf8: string;
  envelope: Envelope;
}

interface RejectCase {
  name: string;
  holderPrivateKeyPkcs8Hex: string;
  envelope: Envelope;
}

// Fixed envelope vectors (docs/security.md "Envelope encryption"), kept in the repo and always used.
const VECTORS_FILE = new URL('../../vectors/envelope.json', import.meta.url);
// A published original of the vectors, where a maintainer has one (ENVELOPE_VECTORS_PUBLISHED names
// its file): compared with the copy here; skipped when unset.
const PUBLISHED_VECTORS = [process.env.ENVELOPE_VECTORS_PUBLISHED]
  .filter((p): p is string => Boolean(p))
  .find(existsSync);
const vectors = JSON.parse(readFileSync(VECTORS_FILE, 'utf8')) as {
  cases: VectorCase[];
  mustReject: RejectCase[];
};

// The vectors name curves as 'x25519', 'P-256', 'secp256k1'.
const VECTOR_CURVE: Record<string, HolderCurve> = {
  x25519: 'x25519',
  'P-256': 'p256',
  secp256k1: 'secp256k1',
};
const CURVES: readonly HolderCurve[] = ['x25519', 'p256', 'secp256k1'];

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

function expectInvalidParameter(fn: () => unknown, field: string): void {
  const err = catchError(fn);
  expect(err).toBeInstanceOf(AppError);
  expect(err).toMatchObject({ status: 400, code: 'INVALID_PARAMETER', details: { field } });
}

function expectEnvelopeError(fn: () => unknown, code = 'ENVELOPE_INVALID'): void {
  const err = catchError(fn);
  expect(err).toBeInstanceOf(EnvelopeError);
  expect((err as EnvelopeError).code).toBe(code);
}

function b64(hex: string): string {
  return Buffer.from(hex, 'hex').toString('base64');
}

describe('envelope vectors', () => {
  it.skipIf(PUBLISHED_VECTORS === undefined)(
    'the copy in test/vectors equals the published vectors (ENVELOPE_VECTORS_PUBLISHED; skipped when unset)',
    () => {
      expect(JSON.parse(readFileSync(VECTORS_FILE, 'utf8'))).toEqual(
        JSON.parse(readFileSync(PUBLISHED_VECTORS!, 'utf8')),
      );
    },
  );

  it('has cases on all three curves and rejection cases', () => {
    const curves = new Set(vectors.cases.map((c) => VECTOR_CURVE[c.curve]));
    expect([...curves].sort()).toEqual(['p256', 'secp256k1', 'x25519']);
    expect(vectors.mustReject.length).toBeGreaterThan(0);
  });

  describe.each(vectors.cases)('$name', (c) => {
    const curve = VECTOR_CURVE[c.curve];
    const holderPrivateKey = privateKeyFromPkcs8Hex(c.holderPrivateKeyPkcs8Hex);
    const ephemeralPrivateKey = privateKeyFromPkcs8Hex(c.ephemeralPrivateKeyPkcs8Hex);

    it('plaintext is JSON.stringify of its own parse (so sealing reproduces it)', () => {
      expect(JSON.stringify(JSON.parse(c.plaintextUtf8))).toBe(c.plaintextUtf8);
    });

    it('holder SPKI parses on the case curve and matches the holder private key', () => {
      const holder = parseHolderPublicKey(c.holderPublicKeySpkiHex, 'pubKey');
      expect(holder.curve).toBe(curve);
      expect(holder.spkiDer.toString('hex')).toBe(c.holderPublicKeySpkiHex);
      expect(createPublicKey(holderPrivateKey).export({ format: 'der', type: 'spki' }).toString('hex')).toBe(
        c.holderPublicKeySpkiHex,
      );
    });

    it('derives the shared secret (both sides) and the AES key', () => {
      const holderPoint = matchSpki(Buffer.from(c.holderPublicKeySpkiHex, 'hex'))!.point;
      const ephemeralPoint = matchSpki(Buffer.from(c.envelope.encryptedKey, 'base64'))!.point;
      const fromEphemeral = computeSharedSecret(ephemeralPrivateKey, curve!, holderPoint);
      const fromHolder = computeSharedSecret(holderPrivateKey, curve!, ephemeralPoint);
      expect(fromEphemeral.toString('hex')).toBe(c.sharedSecretHex);
      expect(fromHolder.toString('hex')).toBe(c.sharedSecretHex);
      // Independent of our helper: node's KeyObject ECDH gives the same bytes.
      const ephemeralPublic = createPublicKey(ephemeralPrivateKey);
      expect(
        diffieHellman({ privateKey: holderPrivateKey, publicKey: ephemeralPublic }).toString('hex'),
      ).toBe(c.sharedSecretHex);
      expect(deriveContentKey(fromHolder).toString('hex')).toBe(c.aesKeyHex);
    });

    it('opens to the plaintext', () => {
      expect(openEnvelope(holderPrivateKey, c.envelope)).toEqual(JSON.parse(c.plaintextUtf8));
    });

    it('seals byte for byte with the given ephemeral key and IV', () => {
      const holder = parseHolderPublicKey(c.holderPublicKeySpkiHex, 'pubKey');
      const sealed = sealEnvelope(holder, JSON.parse(c.plaintextUtf8), {
        ephemeralPrivateKey,
        iv: Buffer.from(c.envelope.iv, 'base64'),
      });
      expect(sealed).toEqual(c.envelope);
    });
  });

  it.each(vectors.mustReject)('rejects: $name', (r) => {
    const holderPrivateKey = privateKeyFromPkcs8Hex(r.holderPrivateKeyPkcs8Hex);
    expectEnvelopeError(() => openEnvelope(holderPrivateKey, r.envelope));
  });
});

describe('sealEnvelope / openEnvelope', () => {
  const values: unknown[] = [
    'eyJhbGciOiJFUzI1NiJ9.e30.c2ln~WyJzIiwiYSIsMV0~',
    { givenName: 'Zoë', city: '東京', nested: { list: [1, 2.5, null, true] } },
    {},
    [],
    0,
    null,
    'x'.repeat(100_000),
  ];

  it.each(CURVES)('round-trips on %s', (curve) => {
    const pair = generateHolderKeyPair(curve);
    const holder = parseHolderPublicKey(pair.publicKeyHex, 'pubKey');
    expect(holder.curve).toBe(curve);
    const restored = privateKeyFromPkcs8Hex(pair.privateKeyPkcs8Hex);
    for (const value of values) {
      const envelope = sealEnvelope(holder, value);
      expect(openEnvelope(pair.privateKey, envelope)).toEqual(value);
      expect(openEnvelope(restored, envelope)).toEqual(value);
    }
  });

  it.each(CURVES)('uses a fresh ephemeral key and IV on every seal (%s)', (curve) => {
    const holder = parseHolderPublicKey(generateHolderKeyPair(curve).publicKeyHex, 'pubKey');
    const envelopes = Array.from({ length: 4 }, () => sealEnvelope(holder, { same: 'value' }));
    for (const field of ['data', 'iv', 'authTag', 'encryptedKey'] as const) {
      expect(new Set(envelopes.map((e) => e[field])).size).toBe(envelopes.length);
    }
  });

  it.each(CURVES)('writes the wire field sizes and an ephemeral SPKI on the holder curve (%s)', (curve) => {
    const holder = parseHolderPublicKey(generateHolderKeyPair(curve).publicKeyHex, 'pubKey');
    const envelope = sealEnvelope(holder, 'abc');
    expect(Buffer.from(envelope.iv, 'base64')).toHaveLength(12);
    expect(Buffer.from(envelope.authTag, 'base64')).toHaveLength(16);
    expect(Buffer.from(envelope.data, 'base64')).toHaveLength(Buffer.byteLength('"abc"'));
    const ephemeralDer = Buffer.from(envelope.encryptedKey, 'base64');
    // What the holder side would do with a generic DER decoder.
    const ephemeral = createPublicKey({ key: ephemeralDer, format: 'der', type: 'spki' });
    expect(ephemeral.export({ format: 'der', type: 'spki' })).toEqual(ephemeralDer);
    expect(parseHolderPublicKey(ephemeralDer.toString('hex'), 'k').curve).toBe(curve);
  });

  it.each(['p256', 'secp256k1'] as const)('accepts a compressed %s holder key', (curve) => {
    const pair = generateHolderKeyPair(curve);
    const der = Buffer.from(pair.publicKeyHex, 'hex');
    const prefixLength = der.length - 65;
    const compressed = ECDH.convertKey(
      der.subarray(prefixLength),
      curve === 'p256' ? 'prime256v1' : 'secp256k1',
      undefined,
      undefined,
      'compressed',
    ) as Buffer;
    // SEQUENCE and BIT STRING lengths shrink by 32 with the point.
    const prefix = Buffer.from(der.subarray(0, prefixLength));
    prefix[1] = prefix[1]! - 32;
    prefix[prefix.length - 2] = 0x22;
    const compressedHex = Buffer.concat([prefix, compressed]).toString('hex');
    const holder = parseHolderPublicKey(compressedHex, 'pubKey');
    expect(holder.curve).toBe(curve);
    expect(holder.spkiDer.toString('hex')).toBe(compressedHex);
    // Same point as the uncompressed key (OpenSSL keeps the compressed form on DER export).
    expect(holder.keyObject.export({ format: 'jwk' })).toEqual(
      createPublicKey(pair.privateKey).export({ format: 'jwk' }),
    );
    expect(openEnvelope(pair.privateKey, sealEnvelope(holder, { ok: 1 }))).toEqual({ ok: 1 });
  });

  it('refuses a value JSON.stringify cannot represent', () => {
    const holder = parseHolderPublicKey(generateHolderKeyPair().publicKeyHex, 'pubKey');
    expect(() => sealEnvelope(holder, undefined)).toThrow(TypeError);
  });

  it('refuses a fixed ephemeral key on another curve or a wrong-size fixed IV', () => {
    const holder = parseHolderPublicKey(generateHolderKeyPair('x25519').publicKeyHex, 'pubKey');
    const other = generateHolderKeyPair('p256').privateKey;
    const same = generateHolderKeyPair('x25519').privateKey;
    expect(() => sealEnvelope(holder, 1, { ephemeralPrivateKey: other, iv: Buffer.alloc(12) })).toThrow(
      TypeError,
    );
    expect(() => sealEnvelope(holder, 1, { ephemeralPrivateKey: same, iv: Buffer.alloc(16) })).toThrow(
      TypeError,
    );
  });
});

describe('openEnvelope rejections', () => {
  const pair = generateHolderKeyPair();
  const holder = parseHolderPublicKey(pair.publicKeyHex, 'pubKey');
  const good = sealEnvelope(holder, { a: 1 });

  /** Encrypts raw bytes the way sealEnvelope would, to build envelopes with bad plaintext. */
  function sealRaw(plaintext: Buffer): Envelope {
    const ephemeral = generateKeyPairSync('x25519');
    const key = deriveContentKey(
      diffieHellman({ privateKey: ephemeral.privateKey, publicKey: holder.keyObject }),
    );
    const iv = Buffer.alloc(12, 7);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const data = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return {
      data: data.toString('base64'),
      iv: iv.toString('base64'),
      authTag: cipher.getAuthTag().toString('base64'),
      encryptedKey: ephemeral.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
    };
  }

  it('accepts the unmodified envelope', () => {
    expect(openEnvelope(pair.privateKey, good)).toEqual({ a: 1 });
  });

  it('rejects another holder key on the same curve', () => {
    expectEnvelopeError(() => openEnvelope(generateHolderKeyPair().privateKey, good));
  });

  it('rejects a holder key on another curve', () => {
    expectEnvelopeError(() => openEnvelope(generateHolderKeyPair('p256').privateKey, good));
    const p256 = generateHolderKeyPair('p256');
    const sealed = sealEnvelope(parseHolderPublicKey(p256.publicKeyHex, 'pubKey'), 1);
    expectEnvelopeError(() => openEnvelope(generateHolderKeyPair('secp256k1').privateKey, sealed));
  });

  it.each([
    ['data with an invalid character', { data: `*${good.data}` }],
    ['data without padding', { data: good.data.replace(/=+$/, '') }],
    ['iv as base64url', { iv: 'sPfvgbCK_or5KNK-' }],
    ['a missing field', { iv: undefined }],
    ['an IV of 16 bytes', { iv: Buffer.alloc(16).toString('base64') }],
    ['a truncated tag', { authTag: Buffer.from(good.authTag, 'base64').subarray(0, 12).toString('base64') }],
    ['an empty tag', { authTag: '' }],
    ['an Ed25519 ephemeral key', { encryptedKey: b64('302a300506032b6570032100'.padEnd(88, '1')) }],
    [
      'an ephemeral key with a trailing byte',
      { encryptedKey: b64(`${Buffer.from(good.encryptedKey, 'base64').toString('hex')}00`) },
    ],
    ['a small-order ephemeral key', { encryptedKey: b64(`302a300506032b656e032100${'00'.repeat(32)}`) }],
  ])('rejects %s', (_name, change) => {
    expectEnvelopeError(() => openEnvelope(pair.privateKey, { ...good, ...change } as Envelope));
  });

  it('rejects a non-object envelope', () => {
    expectEnvelopeError(() => openEnvelope(pair.privateKey, null as unknown as Envelope));
  });

  it('rejects a plaintext that is not JSON or not UTF-8', () => {
    expect(openEnvelope(pair.privateKey, sealRaw(Buffer.from('{"ok":true}')))).toEqual({ ok: true });
    expectEnvelopeError(() => openEnvelope(pair.privateKey, sealRaw(Buffer.from('not json'))));
    expectEnvelopeError(() => openEnvelope(pair.privateKey, sealRaw(Buffer.from([0x22, 0xff, 0x22]))));
    expectEnvelopeError(() => openEnvelope(pair.privateKey, sealRaw(Buffer.from('\ufeff{}'))));
  });

  it('rejects a public key or an unsupported key as the holder key', () => {
    expectEnvelopeError(() => openEnvelope(holder.keyObject, good), 'HOLDER_KEY_INVALID');
    expectEnvelopeError(
      () => openEnvelope(generateKeyPairSync('ed25519').privateKey, good),
      'HOLDER_KEY_INVALID',
    );
  });
});

describe('parseHolderPublicKey', () => {
  const x25519 = generateHolderKeyPair('x25519').publicKeyHex;
  const p256 = generateHolderKeyPair('p256').publicKeyHex;

  it('accepts the X25519 wire default with and without 0x', () => {
    expect(x25519).toMatch(/^302a300506032b656e032100[0-9a-f]{64}$/);
    const plain = parseHolderPublicKey(x25519, 'pubKey');
    const prefixed = parseHolderPublicKey(`0x${x25519}`, 'pubKey');
    expect(prefixed.curve).toBe('x25519');
    expect(prefixed.spkiDer).toEqual(plain.spkiDer);
    expect(parseHolderPublicKey(`0x${p256.toUpperCase()}`, 'pubKey').curve).toBe('p256');
  });

  it('builds a KeyObject equal to the SPKI', () => {
    const holder = parseHolderPublicKey(x25519, 'pubKey');
    expect(holder.keyObject.type).toBe('public');
    expect(holder.keyObject.export({ format: 'der', type: 'spki' }).toString('hex')).toBe(x25519);
  });

  const ed25519 = generateKeyPairSync('ed25519')
    .publicKey.export({ format: 'der', type: 'spki' })
    .toString('hex');
  const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' })
    .publicKey.export({ format: 'der', type: 'spki' })
    .toString('hex');
  const x448 = generateKeyPairSync('x448').publicKey.export({ format: 'der', type: 'spki' }).toString('hex');
  const p256Prefix = p256.slice(0, 54);
  const offCurve = `${p256Prefix}04${'11'.repeat(64)}`;
  const hybrid = `${p256Prefix}06${p256.slice(56)}`;
  const xAboveP = `3039301306072a8648ce3d020106082a8648ce3d03010703220002${'ff'.repeat(32)}`;

  it.each([
    ['empty', ''],
    ['only 0x', '0x'],
    ['not hex', `zz${x25519.slice(2)}`],
    ['odd length', x25519.slice(1)],
    ['base64 instead of hex', Buffer.from(x25519, 'hex').toString('base64')],
    ['a raw 32-byte X25519 key', x25519.slice(24)],
    ['an SPKI with a trailing byte', `${x25519}00`],
    ['a truncated SPKI', x25519.slice(0, -2)],
    ['a PKCS#8 private key', generateHolderKeyPair().privateKeyPkcs8Hex],
    ['an Ed25519 key', ed25519],
    ['an X448 key', x448],
    ['a P-384 key', p384],
    ['a P-256 point off the curve', offCurve],
    ['a P-256 hybrid-form point', hybrid],
    ['a compressed P-256 point with x >= p', xAboveP],
  ])('rejects %s, naming the field', (_name, hex) => {
    expectInvalidParameter(() => parseHolderPublicKey(hex, 'encryptionKey'), 'encryptionKey');
  });

  it('rejects a value that is not a string', () => {
    expectInvalidParameter(() => parseHolderPublicKey(42 as unknown as string, 'pubKey'), 'pubKey');
  });

  // u-coordinates (little-endian) whose X25519 output is all zero, with and without the ignored
  // top bit and in non-canonical (>= p) form.
  const P_MINUS_1 = `ec${'ff'.repeat(30)}7f`;
  const lowOrder = [
    '00'.repeat(32),
    `01${'00'.repeat(31)}`,
    P_MINUS_1,
    'e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800',
    '5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157',
    `ed${'ff'.repeat(30)}7f`,
    `ee${'ff'.repeat(30)}7f`,
    `${'00'.repeat(31)}80`,
    'e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b880',
  ];

  it.each(lowOrder)('rejects the small-order X25519 point %s', (u) => {
    const hex = `302a300506032b656e032100${u}`;
    // The list is right only if OpenSSL itself refuses these points.
    const publicKey = createPublicKey({ key: Buffer.from(hex, 'hex'), format: 'der', type: 'spki' });
    const privateKey: KeyObject = generateKeyPairSync('x25519').privateKey;
    expect(() => diffieHellman({ privateKey, publicKey })).toThrow();
    expectInvalidParameter(() => parseHolderPublicKey(hex, 'pubKey'), 'pubKey');
  });
});

describe('privateKeyFromPkcs8Hex', () => {
  it('accepts 0x and rejects non-hex, non-PKCS#8 and unsupported keys', () => {
    const pair = generateHolderKeyPair('secp256k1');
    expect(privateKeyFromPkcs8Hex(`0x${pair.privateKeyPkcs8Hex}`).asymmetricKeyDetails?.namedCurve).toBe(
      'secp256k1',
    );
    expectEnvelopeError(() => privateKeyFromPkcs8Hex('nothex'), 'HOLDER_KEY_INVALID');
    expectEnvelopeError(() => privateKeyFromPkcs8Hex(pair.publicKeyHex), 'HOLDER_KEY_INVALID');
    const ed25519 = generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' });
    expectEnvelopeError(() => privateKeyFromPkcs8Hex(ed25519.toString('hex')), 'HOLDER_KEY_INVALID');
  });
});

describe('available-vc preview field names', () => {
  it('maps data and encryptedKey and round-trips', () => {
    const envelope: Envelope = { data: 'ZGF0YQ==', iv: 'aXY=', authTag: 'dGFn', encryptedKey: 'a2V5' };
    const preview = toPreviewFields(envelope);
    expect(preview).toEqual({
      encryptedData: 'ZGF0YQ==',
      iv: 'aXY=',
      authTag: 'dGFn',
      dataEncPublicKey: 'a2V5',
    });
    expect(fromPreviewFields(preview)).toEqual(envelope);
  });

  it('opens a sealed preview through the preview names', () => {
    const pair = generateHolderKeyPair();
    const preview = toPreviewFields(
      sealEnvelope(parseHolderPublicKey(pair.publicKeyHex, 'pubKey'), { a: 'b' }),
    );
    expect(openEnvelope(pair.privateKey, fromPreviewFields(preview))).toEqual({ a: 'b' });
  });
});
