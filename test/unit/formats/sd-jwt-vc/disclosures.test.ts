import { createHash, generateKeyPairSync, sign, verify } from 'node:crypto';
import { digest, generateSalt } from '@sd-jwt/crypto-nodejs';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { describe, expect, it } from 'vitest';
import { processDisclosures } from '../../../../src/formats/sd-jwt-vc/disclosures.js';
import { CheckFailure } from '../../../../src/verify/check.js';

// RFC 9901 §7.1 step 3 on payloads made by the reference library and by hand.
const encode = (d: unknown[]) => Buffer.from(JSON.stringify(d)).toString('base64url');
const digestOf = (encoded: string) => createHash('sha256').update(encoded).digest('base64url');
const disclosure = (...d: unknown[]) => {
  const encoded = encode(d);
  return { encoded, digest: digestOf(encoded) };
};

function refusal(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof CheckFailure) return err.code;
    throw err;
  }
  return undefined;
}

const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const library = new SDJwtVcInstance({
  hasher: digest,
  saltGenerator: generateSalt,
  signAlg: 'ES256',
  signer: (data: string) =>
    sign('sha256', Buffer.from(data), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url'),
  verifier: (data: string, signature: string) =>
    verify(
      'sha256',
      Buffer.from(data),
      { key: publicKey, dsaEncoding: 'ieee-p1363' },
      Buffer.from(signature, 'base64url'),
    ),
});

async function issued(claims: Record<string, unknown>, frame: Record<string, unknown>) {
  const compact = await library.issue(
    { iss: 'https://issuer.example', vct: 'urn:t', ...claims } as never,
    frame as never,
  );
  const parts = compact.split('~');
  const payload = JSON.parse(Buffer.from(parts[0]!.split('.')[1]!, 'base64url').toString('utf8'));
  return { compact, payload, disclosures: parts.slice(1, -1) };
}

describe('processDisclosures', () => {
  it('rebuilds nested, recursive and array element disclosures, ignoring decoys', async () => {
    const { payload, disclosures } = await issued(
      { address: { street: 'Main 1', city: 'Delft' }, nationalities: ['NL', 'SN'], name: 'Zora' },
      {
        _sd: ['address', 'name'],
        _sd_decoy: 2,
        address: { _sd: ['street'] },
        nationalities: { _sd: [0, 1] },
      },
    );
    expect(processDisclosures(payload, disclosures)).toEqual({
      claims: {
        iss: 'https://issuer.example',
        vct: 'urn:t',
        address: { street: 'Main 1', city: 'Delft' },
        nationalities: ['NL', 'SN'],
        name: 'Zora',
      },
      disclosed: 5,
    });
    // Withholding some leaves them out, and nothing else changes.
    const some = processDisclosures(
      payload,
      disclosures.filter((d) => JSON.parse(Buffer.from(d, 'base64url').toString())[1] !== 'name'),
    );
    expect(some.claims.name).toBeUndefined();
  });

  it('refuses an unreferenced and a duplicated disclosure, which the library verifies without a word', async () => {
    const { compact, payload, disclosures } = await issued({ name: 'Zora' }, { _sd: ['name'] });
    const extra = disclosure('c2FsdA', 'admin', true).encoded;
    // The reference library's verify() answers the claims and keeps quiet about both.
    await expect(library.verify(`${compact}${extra}~`)).resolves.toMatchObject({ payload: { name: 'Zora' } });
    await expect(library.verify(`${compact}${disclosures[0]}~`)).resolves.toMatchObject({
      payload: { name: 'Zora' },
    });
    expect(refusal(() => processDisclosures(payload, [...disclosures, extra]))).toBe(
      'DISCLOSURE_UNREFERENCED',
    );
    expect(refusal(() => processDisclosures(payload, [...disclosures, disclosures[0]!]))).toBe(
      'DISCLOSURE_DUPLICATE',
    );
  });

  it('refuses a digest met twice, a name already present, reserved names and the wrong shape', () => {
    const a = disclosure('s1', 'name', 'Zora');
    expect(refusal(() => processDisclosures({ _sd: [a.digest], x: { _sd: [a.digest] } }, [a.encoded]))).toBe(
      'DIGEST_DUPLICATE',
    );
    expect(refusal(() => processDisclosures({ name: 'Eve', _sd: [a.digest] }, [a.encoded]))).toBe(
      'DISCLOSURE_NAME_CONFLICT',
    );
    const reserved = disclosure('s2', '_sd', []);
    expect(refusal(() => processDisclosures({ _sd: [reserved.digest] }, [reserved.encoded]))).toBe(
      'DISCLOSURE_RESERVED_NAME',
    );
    const element = disclosure('s3', 'NL');
    expect(refusal(() => processDisclosures({ _sd: [element.digest] }, [element.encoded]))).toBe(
      'DISCLOSURE_MALFORMED',
    );
    const four = disclosure('s4', 'a', 1, 2);
    expect(refusal(() => processDisclosures({ _sd: [four.digest] }, [four.encoded]))).toBe(
      'DISCLOSURE_MALFORMED',
    );
    expect(refusal(() => processDisclosures({ _sd: [a.digest] }, [a.encoded, a.encoded]))).toBe(
      'DISCLOSURE_DUPLICATE',
    );
    expect(refusal(() => processDisclosures({ _sd_alg: 'md5', _sd: [a.digest] }, [a.encoded]))).toBe(
      'UNSUPPORTED_SD_ALG',
    );
    expect(refusal(() => processDisclosures({ _sd: [a.digest] }, ['not base64url!']))).toBe(
      'DISCLOSURE_MALFORMED',
    );
  });

  it('a claim named __proto__ (signed or disclosed) is kept as a claim, not taken as the prototype', () => {
    const d = disclosure('salt-1', '__proto__', { disclosed: true });
    const payload = JSON.parse(
      `{"iss":"https://issuer.example","vct":"urn:t","nested":{"__proto__":{"signed":true}},"_sd":["${d.digest}"]}`,
    );
    const { claims } = processDisclosures(payload, [d.encoded]);
    expect(Object.hasOwn(claims, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(claims)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(claims))).toEqual(
      JSON.parse(
        '{"iss":"https://issuer.example","vct":"urn:t","nested":{"__proto__":{"signed":true}},"__proto__":{"disclosed":true}}',
      ),
    );
  });
});
