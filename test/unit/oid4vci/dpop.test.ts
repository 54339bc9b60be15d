import { describe, expect, it } from 'vitest';
import { challengeHeader, iatIsFresh, PROOF_IAT_WINDOW_SECONDS } from '../../../src/oid4vci/dpop.js';

const NOW = new Date('2030-01-01T00:00:00.000Z');
const SECONDS = NOW.getTime() / 1000;

// RFC 9449 §11.1
describe('iatIsFresh', () => {
  it('accepts an iat within the window either way, and nothing else', () => {
    expect(iatIsFresh(SECONDS, NOW)).toBe(true);
    expect(iatIsFresh(SECONDS - PROOF_IAT_WINDOW_SECONDS, NOW)).toBe(true);
    expect(iatIsFresh(SECONDS + PROOF_IAT_WINDOW_SECONDS, NOW)).toBe(true);
    expect(iatIsFresh(SECONDS - PROOF_IAT_WINDOW_SECONDS - 1, NOW)).toBe(false);
    expect(iatIsFresh(SECONDS + PROOF_IAT_WINDOW_SECONDS + 1, NOW)).toBe(false);
    expect(iatIsFresh(SECONDS - 86_400, NOW)).toBe(false);
    for (const bad of [undefined, '1893456000', Number.NaN, Number.POSITIVE_INFINITY])
      expect(iatIsFresh(bad, NOW)).toBe(false);
  });
});

// RFC 6750 §3, RFC 9449 §7.1 and §9
describe('challengeHeader', () => {
  it('Bearer and DPoP challenges, each parameter separated, algs on DPoP', () => {
    expect(challengeHeader({ bearer: true, algs: ['ES256'] })).toBe('Bearer, DPoP algs="ES256"');
    expect(challengeHeader({ bearer: false, algs: ['ES256'] })).toBe('DPoP algs="ES256"');
    expect(challengeHeader({ bearer: true, algs: ['ES256'], error: 'invalid_token' })).toMatch(
      /^Bearer error="invalid_token", error_description="[^"\\]+", DPoP error="invalid_token", error_description="[^"\\]+", algs="ES256"$/,
    );
  });

  it('use_dpop_nonce is the DPoP scheme’s alone', () => {
    expect(challengeHeader({ bearer: true, algs: ['ES256'], error: 'use_dpop_nonce' })).toMatch(
      /^DPoP error="use_dpop_nonce", error_description="[^"\\]+", algs="ES256"$/,
    );
  });

  it('holds only the characters RFC 6750 allows in a quoted value', () => {
    for (const error of ['invalid_token', 'invalid_dpop_proof', 'use_dpop_nonce'] as const)
      expect(challengeHeader({ bearer: true, algs: ['ES256', 'x"y\u00e9'], error })).toMatch(
        /^[\x20-\x7e]+$/,
      );
    expect(challengeHeader({ bearer: false, algs: ['x"y'] })).toBe('DPoP algs="x y"');
  });
});
