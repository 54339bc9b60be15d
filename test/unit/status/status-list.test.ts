import { webcrypto } from 'node:crypto';
import { inflateSync } from 'node:zlib';
import { getListFromStatusListJWT, StatusList as LibraryStatusList } from '@sd-jwt/jwt-status-list';
import { decodeProtectedHeader, generateKeyPair, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import {
  type StatusBits,
  StatusList,
  StatusValue,
  signStatusListToken,
} from '../../../src/status/status-list.js';
import { pickFreeSlot } from '../../../src/store/slot-allocation.js';

/** A key's signer as a key backend gives it: WebCrypto's ECDSA is the JWS r||s form. */
const signerOf = (key: webcrypto.CryptoKey) => async (data: Uint8Array) =>
  Buffer.from(await webcrypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key, data));

// Deterministic contents so a failure can be replayed.
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function seededInt(seed: number): (maxExclusive: number) => number {
  const next = mulberry32(seed);
  return (maxExclusive) => Math.floor(next() * maxExclusive);
}

function randomList(size: number, bits: StatusBits, seed: number): StatusList {
  const next = seededInt(seed);
  const list = new StatusList(size, bits);
  for (let i = 0; i < size; i++) list.set(i, next(2 ** bits));
  return list;
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

function fromEntries(size: number, bits: StatusBits, entries: ReadonlyArray<readonly [number, number]>) {
  const list = new StatusList(size, bits);
  for (const [index, value] of entries) list.set(index, value);
  return list;
}

describe('draft-ietf-oauth-status-list test vectors', () => {
  // draft-ietf-oauth-status-list-17 §4.1 (first example) and §4.2: 16 statuses, bits 1.
  const oneBit = [1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1];
  // draft-ietf-oauth-status-list-17 §4.1 (second example, with SUSPENDED) and §4.2: 12 statuses, bits 2.
  const twoBit = [1, 2, 0, 3, 0, 1, 0, 1, 1, 2, 3, 3];

  it('§4.1/§4.2 1-bit example: bytes b9a3, compressed 78dadbb918000217015d, lst eNrbuRgAAhcBXQ', () => {
    const list = fromEntries(16, 1, [...oneBit.entries()]);
    expect(hex(list.bytes)).toBe('b9a3');
    expect(hex(Buffer.from(list.encode(), 'base64url'))).toBe('78dadbb918000217015d');
    expect(list.encode()).toBe('eNrbuRgAAhcBXQ');

    const decoded = StatusList.decode('eNrbuRgAAhcBXQ', 1);
    expect(decoded.size).toBe(16);
    expect(oneBit.map((_, index) => decoded.get(index))).toEqual(oneBit);
  });

  it('§4.1/§4.2 2-bit example: bytes c944f9, compressed 78da3be9f2130003df0207, lst eNo76fITAAPfAgc', () => {
    const list = fromEntries(12, 2, [...twoBit.entries()]);
    expect(hex(list.bytes)).toBe('c944f9');
    expect(hex(Buffer.from(list.encode(), 'base64url'))).toBe('78da3be9f2130003df0207');
    expect(list.encode()).toBe('eNo76fITAAPfAgc');

    const decoded = StatusList.decode('eNo76fITAAPfAgc', 2, 12);
    expect(twoBit.map((_, index) => decoded.get(index))).toEqual(twoBit);
    expect(decoded.get(1)).toBe(StatusValue.SUSPENDED);
  });

  // draft-ietf-oauth-status-list-17 Appendix C: 2^20 entries, unlisted ones 0 (VALID). The lst
  // values keep the draft's line breaks.
  const appendixC1 = [0, 1993, 25460, 159495, 495669, 554353, 645645, 723232, 854545, 934534, 1000345].map(
    (index) => [index, 1] as const,
  );
  const appendixC1Lst = [
    'eNrt3AENwCAMAEGogklACtKQPg9LugC9k_ACvreiogE',
    'AAKkeCQAAAAAAAAAAAAAAAAAAAIBylgQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    'AAAAAAAAAAAAAAAAAAAXG9IAAAAAAAAAPwsJAAAAAAAAAAAAAAAvhsSAAAAAAAAAAA',
    'A7KpLAAAAAAAAAAAAAAAAAAAAAJsLCQAAAAAAAAAAADjelAAAAAAAAAAAKjDMAQAAA',
    'ACAZC8L2AEb',
  ].join('');
  const appendixC2 = [
    [0, 1],
    [1993, 2],
    [25460, 1],
    [159495, 3],
    [495669, 1],
    [554353, 1],
    [645645, 2],
    [723232, 1],
    [854545, 1],
    [934534, 2],
    [1000345, 3],
  ] as const;
  const appendixC2Lst = [
    'eNrt2zENACEQAEEuoaBABP5VIO01fCjIHTMStt9ovGV',
    'IAAAAAABAbiEBAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEB5WwIAAAAAA',
    'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAID0ugQAAAAAAAAAAAAAAAAAQG12SgAAA',
    'AAAAAAAAAAAAAAAAAAAAAAAAOCSIQEAAAAAAAAAAAAAAAAAAAAAAAD8ExIAAAAAAAA',
    'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAwJEuAQAAAAAAAAAAAAAAAAAAAAAAAMB9S',
    'wIAAAAAAAAAAAAAAAAAAACoYUoAAAAAAAAAAAAAAEBqH81gAQw',
  ].join('');

  it('Appendix C.1 (1-bit, 2^20 entries): the draft lst decodes to its statuses, ours to the same bytes', () => {
    const decoded = StatusList.decode(appendixC1Lst, 1, 2 ** 20);
    const expected = fromEntries(2 ** 20, 1, appendixC1);
    expect(Buffer.compare(decoded.bytes, expected.bytes)).toBe(0);
    for (const [index, value] of appendixC1) expect(decoded.get(index)).toBe(value);
    // The draft's C.1 stream came from another deflate build, so only the decompressed bytes must agree.
    expect(Buffer.compare(inflateSync(Buffer.from(expected.encode(), 'base64url')), expected.bytes)).toBe(0);
  });

  it('Appendix C.2 (2-bit, 2^20 entries): encode gives the draft lst exactly, and decodes back', () => {
    const list = fromEntries(2 ** 20, 2, appendixC2);
    expect(list.encode()).toBe(appendixC2Lst);
    const decoded = StatusList.decode(appendixC2Lst, 2, 2 ** 20);
    expect(Buffer.compare(decoded.bytes, list.bytes)).toBe(0);
    for (const [index, value] of appendixC2) expect(decoded.get(index)).toBe(value);
  });
});

describe('StatusList', () => {
  it('reads and writes every bit width without touching neighbours', () => {
    for (const bits of [1, 2, 4, 8] as const) {
      const list = new StatusList(64, bits);
      const max = 2 ** bits - 1;
      list.set(5, max);
      expect(list.get(4)).toBe(0);
      expect(list.get(5)).toBe(max);
      expect(list.get(6)).toBe(0);
      list.set(5, 0);
      expect(list.bytes.every((byte) => byte === 0)).toBe(true);
    }
  });

  it('round-trips random contents through encode and decode', () => {
    for (const bits of [1, 2, 4, 8] as const) {
      const list = randomList(1024, bits, bits);
      const decoded = StatusList.decode(list.encode(), bits, 1024);
      expect(Buffer.compare(decoded.bytes, list.bytes)).toBe(0);
    }
  });

  it('wraps a given byte array and checks its length', () => {
    const bytes = new Uint8Array([0xb9, 0xa3]);
    expect(new StatusList(16, 1, bytes).get(0)).toBe(StatusValue.INVALID);
    expect(() => new StatusList(16, 1, new Uint8Array(3))).toThrow(RangeError);
    expect(() => new StatusList(16, 2, bytes)).toThrow(RangeError);
  });

  it('rejects sizes and bit widths that do not make whole bytes', () => {
    expect(() => new StatusList(0, 1)).toThrow(RangeError);
    expect(() => new StatusList(-8, 1)).toThrow(RangeError);
    expect(() => new StatusList(12, 1)).toThrow(RangeError);
    expect(() => new StatusList(8.5, 1)).toThrow(RangeError);
    expect(() => new StatusList(8, 3 as StatusBits)).toThrow(RangeError);
  });

  it('throws RangeError for an index outside [0, size)', () => {
    const list = new StatusList(16, 1);
    for (const index of [-1, 16, 1.5, Number.NaN]) {
      expect(() => list.get(index)).toThrow(RangeError);
      expect(() => list.set(index, 0)).toThrow(RangeError);
    }
  });

  it('throws RangeError for a value of 2^bits or more, which the library accepts', () => {
    const one = new StatusList(16, 1);
    expect(() => one.set(0, 2)).toThrow(RangeError);
    expect(() => one.set(0, -1)).toThrow(RangeError);
    expect(() => one.set(0, 0.5)).toThrow(RangeError);
    expect(() => new StatusList(16, 2).set(0, 4)).toThrow(RangeError);
    expect(() => new StatusList(16, 8).set(0, 256)).toThrow(RangeError);
    expect(one.bytes.every((byte) => byte === 0)).toBe(true);
    // The library's check is `> 2 ** bits`, so it takes 2 in a 1-bit list.
    expect(() => new LibraryStatusList([2, 0, 0, 0, 0, 0, 0, 0], 1)).not.toThrow();
  });

  it('rejects a malformed or oversized lst', () => {
    expect(() => StatusList.decode('eNrbuRgAAhcBXQ==', 1)).toThrow(TypeError);
    expect(() => StatusList.decode('eNrb+RgAAhcBXQ', 1)).toThrow(TypeError);
    expect(() => StatusList.decode('', 1)).toThrow(TypeError);
    expect(() => StatusList.decode('AAAA', 1)).toThrow();
    // 16 statuses inflate to 2 bytes, not the 4 that 32 would need, nor the 1 that 8 would.
    expect(() => StatusList.decode('eNrbuRgAAhcBXQ', 1, 32)).toThrow(RangeError);
    expect(() => StatusList.decode('eNrbuRgAAhcBXQ', 1, 8)).toThrow(RangeError);
  });
});

describe('compatibility with @sd-jwt/jwt-status-list', () => {
  const cases = [1, 2].flatMap((bits) =>
    [8, 16, 1024, 131072].map((size) => [bits as StatusBits, size] as const),
  );

  it.each(cases)(
    'bits %i, size %i: our lst decompresses with the library to the same statuses',
    (bits, size) => {
      const list = randomList(size, bits, size + bits);
      const library = LibraryStatusList.decompressStatusList(list.encode(), bits);
      expect(library.getBitsPerStatus()).toBe(bits);
      expect(library.statusList.length).toBe(size);
      for (let i = 0; i < size; i++) {
        if (library.getStatus(i) !== list.get(i))
          expect.fail(`index ${i}: ${library.getStatus(i)} != ${list.get(i)}`);
      }
    },
  );

  it.each(cases)('bits %i, size %i: the library lst decodes with ours to the same statuses', (bits, size) => {
    const list = randomList(size, bits, 7 * size + bits);
    const statuses = Array.from({ length: size }, (_, i) => list.get(i));
    const decoded = StatusList.decode(new LibraryStatusList(statuses, bits).compressStatusList(), bits, size);
    expect(Buffer.compare(decoded.bytes, list.bytes)).toBe(0);
  });

  it.each([1, 2] as const)('bits %i: getListFromStatusListJWT reads a token we signed', async (bits) => {
    const { privateKey } = await generateKeyPair('ES256');
    const list = randomList(131072, bits, 99 + bits);
    const token = await signStatusListToken(
      {
        sub: 'https://issuer.example/statuslist/1',
        iat: 1_700_000_000,
        exp: 1_700_000_600,
        ttl: 300,
        bits,
        lst: list.encode(),
      },
      { sign: signerOf(privateKey), kid: 'k1' },
    );
    const library = getListFromStatusListJWT(token);
    expect(library.getBitsPerStatus()).toBe(bits);
    expect(library.statusList).toEqual(Array.from({ length: list.size }, (_, i) => list.get(i)));
  });
});

describe('signStatusListToken', () => {
  const claims = {
    sub: 'https://issuer.example/statuslist/3',
    iat: 1_700_000_000,
    exp: 1_700_000_600,
    ttl: 300,
    bits: 1 as const,
    lst: 'eNrbuRgAAhcBXQ',
  };

  it('verifies with jose against the public key, with typ, kid and every claim (§5.1)', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const token = await signStatusListToken(claims, { sign: signerOf(privateKey), kid: 'status-key-1' });

    const { payload, protectedHeader } = await jwtVerify(token, publicKey, {
      algorithms: ['ES256'],
      typ: 'statuslist+jwt',
      currentDate: new Date((claims.iat + 60) * 1000),
    });
    expect(protectedHeader).toEqual({ alg: 'ES256', typ: 'statuslist+jwt', kid: 'status-key-1' });
    expect(payload).toEqual({
      sub: claims.sub,
      iat: claims.iat,
      exp: claims.exp,
      ttl: claims.ttl,
      status_list: { bits: 1, lst: 'eNrbuRgAAhcBXQ' },
    });
    expect(decodeProtectedHeader(token).typ).toBe('statuslist+jwt');
  });

  it('does not verify with another key, and expires at exp', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const other = await generateKeyPair('ES256');
    const token = await signStatusListToken(claims, { sign: signerOf(privateKey), kid: 'k' });
    await expect(
      jwtVerify(token, other.publicKey, { currentDate: new Date((claims.iat + 60) * 1000) }),
    ).rejects.toMatchObject({ code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });
    await expect(
      jwtVerify(token, publicKey, { currentDate: new Date(claims.exp * 1000) }),
    ).rejects.toMatchObject({ code: 'ERR_JWT_EXPIRED' });
  });

  it('rejects a non-positive ttl, exp not after iat, and bad bits', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const key = { sign: signerOf(privateKey), kid: 'k' };
    await expect(signStatusListToken({ ...claims, ttl: 0 }, key)).rejects.toThrow(RangeError);
    await expect(signStatusListToken({ ...claims, exp: claims.iat }, key)).rejects.toThrow(RangeError);
    await expect(signStatusListToken({ ...claims, bits: 3 as StatusBits }, key)).rejects.toThrow(RangeError);
  });
});

describe('pickFreeSlot', () => {
  const size = 131072;

  function mark(bitmap: Uint8Array, slot: number): void {
    bitmap[slot >>> 3]! |= 1 << (slot & 7);
  }

  function isSet(bitmap: Uint8Array, slot: number): boolean {
    return (bitmap[slot >>> 3]! & (1 << (slot & 7))) !== 0;
  }

  it('never returns an allocated slot of a 99% full partition', () => {
    const bitmap = new Uint8Array(size / 8);
    const next = seededInt(1);
    let allocated = 0;
    while (allocated < size * 0.99) {
      const slot = next(size);
      if (!isSet(bitmap, slot)) {
        mark(bitmap, slot);
        allocated++;
      }
    }
    for (let i = 0; i < 1000; i++) {
      const slot = pickFreeSlot(bitmap, size, seededInt(i));
      expect(slot).toBeGreaterThanOrEqual(0);
      expect(isSet(bitmap, slot)).toBe(false);
      mark(bitmap, slot);
    }
  });

  it('falls back to a scan from a random start when every probe hits an allocated slot', () => {
    const bitmap = new Uint8Array(size / 8).fill(0xff);
    bitmap[100] = 0b1110_1111; // slot 804 is the only free one
    expect(pickFreeSlot(bitmap, size, () => 1000)).toBe(804);
    expect(pickFreeSlot(bitmap, size, () => 0)).toBe(804);
    expect(pickFreeSlot(bitmap, size, () => size - 1)).toBe(804);
  });

  it('returns -1 when full, and ignores bits past size', () => {
    expect(pickFreeSlot(new Uint8Array(size / 8).fill(0xff), size)).toBe(-1);
    const bitmap = new Uint8Array([0xff, 0b0000_0011]); // slots 0..9 taken, 10..15 beyond size
    expect(pickFreeSlot(bitmap, 10)).toBe(-1);
    expect(pickFreeSlot(bitmap, 11)).toBe(10);
  });

  it('fills a partition completely without a repeat', () => {
    const bitmap = new Uint8Array(128);
    const seen = new Set<number>();
    for (let i = 0; i < 1024; i++) {
      const slot = pickFreeSlot(bitmap, 1024);
      expect(seen.has(slot)).toBe(false);
      seen.add(slot);
      mark(bitmap, slot);
    }
    expect(pickFreeSlot(bitmap, 1024)).toBe(-1);
  });

  it('spreads 10,000 picks over a 131072-slot partition (§12.5.1: non-sequential indices)', () => {
    const bitmap = new Uint8Array(size / 8);
    const picks: number[] = [];
    for (let i = 0; i < 10_000; i++) {
      const slot = pickFreeSlot(bitmap, size);
      mark(bitmap, slot);
      picks.push(slot);
    }
    expect(new Set(picks).size).toBe(10_000);
    expect(picks.filter((slot) => slot < size / 2).length).toBeGreaterThan(4000);
    expect(picks.filter((slot) => slot >= size / 2).length).toBeGreaterThan(4000);
    expect(picks.filter((slot) => slot < size / 16).length).toBeGreaterThan(300);
    expect(picks.filter((slot) => slot >= size - size / 16).length).toBeGreaterThan(300);
    const sequential = picks.filter((slot, i) => i > 0 && slot === picks[i - 1]! + 1).length;
    expect(sequential).toBeLessThan(20);
  });

  it('rejects a size the bitmap cannot hold', () => {
    expect(() => pickFreeSlot(new Uint8Array(2), 17)).toThrow(RangeError);
    expect(() => pickFreeSlot(new Uint8Array(2), 0)).toThrow(RangeError);
  });
});
