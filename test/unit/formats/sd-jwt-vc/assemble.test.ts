import { sign as cryptoSign, verify as cryptoVerify, generateKeyPairSync } from 'node:crypto';
import { digest, generateSalt } from '@sd-jwt/crypto-nodejs';
import { decodeSdJwt } from '@sd-jwt/decode';
import { createHeaderAndPayload, StatusList } from '@sd-jwt/jwt-status-list';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { describe, expect, it } from 'vitest';
import { issueSdJwtVc } from '../../../../src/formats/sd-jwt-vc/assemble.js';

const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const sign = async (data: Uint8Array) =>
  cryptoSign('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' });
const signer = (data: string) =>
  cryptoSign('sha256', Buffer.from(data), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString(
    'base64url',
  );
const verifier = (data: string, signature: string) =>
  cryptoVerify(
    'sha256',
    Buffer.from(data),
    { key: publicKey, dsaEncoding: 'ieee-p1363' },
    Buffer.from(signature, 'base64url'),
  );
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
/** A real status list token (slot 7 valid) from the library's status-list package. */
function statusListToken(uri: string): string {
  const { header, payload } = createHeaderAndPayload(
    new StatusList(new Array(16).fill(0), 1),
    { iss: 'https://issuer.example', sub: uri, iat: 1_700_000_000 },
    { alg: 'ES256', typ: 'statuslist+jwt' },
  );
  const unsigned = `${b64(header)}.${b64(payload)}`;
  return `${unsigned}.${signer(unsigned)}`;
}
// The library's own issuer and verifier: the reference for everything our path makes.
const library = new SDJwtVcInstance({
  signer,
  signAlg: 'ES256',
  hasher: digest,
  hashAlg: 'sha-256',
  saltGenerator: generateSalt,
  verifier,
  statusListFetcher: async (uri) => statusListToken(uri),
});

const payload = () => ({
  name: 'Ada Lovelace',
  memberSince: '2020-01-01',
  points: 1200,
  address: { street: 'Rue de l’Été 1', city: 'Zürich', zip: '8000' },
  tags: ['a', 'b', { deep: true }],
  iss: 'https://issuer.example',
  sub: 'did:example:holder',
  vct: 'https://issuer.example/vct/membership',
  iat: 1_700_000_000,
  exp: 4_000_000_000,
  id: 'urn:uuid:7d3c1f7e-1111-4222-8333-944455556666',
  status: { status_list: { idx: 7, uri: 'https://issuer.example/statuslist/0' } },
  cnf: { jwk: { kty: 'EC', crv: 'P-256', x: 'x', y: 'y' } },
});
const header = { kid: 'kid-1', x5c: ['MIIB'] };

/** The parts of an SD-JWT that must match whoever made it: everything but salts and digests. */
async function structure(compact: string) {
  const decoded = await decodeSdJwt(compact, digest);
  const { _sd: sd, ...visible } = decoded.jwt.payload as Record<string, unknown>;
  const strip = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map((x) => (x && typeof x === 'object' && '...' in x ? '<digest>' : strip(x)))
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v as Record<string, unknown>).map(([k, x]) => [
              k,
              k === '_sd' ? (x as unknown[]).length : strip(x),
            ]),
          )
        : v;
  return {
    header: decoded.jwt.header,
    payload: strip(visible),
    digests: (sd as unknown[] | undefined)?.length ?? 0,
    // Each disclosure without its salt: [key, value] or [value].
    disclosures: decoded.disclosures.map((d) => JSON.stringify(strip(d.decode().slice(1)))).sort(),
    claims: await library.getClaims(compact),
    trailing: compact.endsWith('~'),
  };
}

describe('synchronous SD-JWT VC assembly (assemble.ts)', () => {
  const frames: Array<[string, Record<string, unknown> | undefined]> = [
    ['top-level claims', { _sd: ['name', 'memberSince', 'points'] }],
    [
      'nested objects, array items and decoys',
      {
        _sd: ['name', 'address'],
        address: { _sd: ['street', 'city'], _sd_decoy: 2 },
        tags: { _sd: [0, 2] },
        _sd_decoy: 1,
      },
    ],
    ['nothing selectively disclosable', undefined],
  ];

  for (const [name, frame] of frames) {
    it(`matches the library's issue() and passes its verifier: ${name}`, async () => {
      const ours = await issueSdJwtVc(payload(), frame, { header, sign });
      const theirs = await library.issue(payload(), frame as never, { header });

      const verified = await library.verify(ours);
      expect(verified.payload.iss).toBe('https://issuer.example');
      expect(await structure(ours)).toEqual(await structure(theirs));
      // The full claims come back through the library's own disclosure resolution.
      expect(await library.getClaims(ours)).toEqual(payload());
    });
  }

  it('salts are fresh per disclosure, in the library generator format (16 hex characters)', async () => {
    const frame = { _sd: ['name', 'memberSince', 'points'] };
    const a = await decodeSdJwt(await issueSdJwtVc(payload(), frame, { header, sign }), digest);
    const b = await decodeSdJwt(await issueSdJwtVc(payload(), frame, { header, sign }), digest);
    const salts = [...a.disclosures, ...b.disclosures].map((d) => d.salt);
    for (const s of salts) expect(s).toMatch(/^[0-9a-f]{16}$/);
    expect(new Set(salts).size).toBe(salts.length);
  });

  it('refuses a frame that would disclose a protected SD-JWT VC claim, as the library does', async () => {
    const frame = { _sd: ['name', 'status'] };
    await expect(library.issue(payload(), frame as never, { header })).rejects.toThrow(
      'Cannot disclose protected field',
    );
    await expect(issueSdJwtVc(payload(), frame, { header, sign })).rejects.toThrow(
      'Cannot disclose protected field',
    );
  });

  it('a signature over anything else fails the library verifier', async () => {
    const ours = await issueSdJwtVc(payload(), { _sd: ['name'] }, { header, sign });
    const [jwt, ...rest] = ours.split('~');
    const [h, p, s] = jwt!.split('.');
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), points: 1 })).toString('base64url')}.${s}`;
    await expect(library.verify([forged, ...rest].join('~'))).rejects.toThrow();
  });
});
