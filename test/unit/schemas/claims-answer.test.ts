import { describe, expect, it } from 'vitest';
import { ClaimsSourceError, parseClaimsAnswer } from '../../../src/claims/claims-provider.js';

// docs/schemas-and-claims.md: a provider answers { eligible: false } or { eligible: true, credentialSubject, expiresAt? }.
describe('claims provider answers', () => {
  it('accepts the two documented shapes', () => {
    expect(parseClaimsAnswer({ eligible: false })).toEqual({ eligible: false });
    expect(parseClaimsAnswer({ eligible: true, credentialSubject: { a: 1 } })).toEqual({
      eligible: true,
      credentialSubject: { a: 1 },
      expiresAt: undefined,
    });
  });

  it.each([
    ['2030-01-02T03:04:05Z', '2030-01-02T03:04:05.000Z'],
    ['2030-01-02T03:04:05+02:00', '2030-01-02T01:04:05.000Z'],
    ['2030-01-02T03:04:05', '2030-01-02T03:04:05.000Z'],
    ['2030-01-02', '2030-01-02T00:00:00.000Z'],
  ])('reads expiresAt %s as %s', (given, iso) => {
    const answer = parseClaimsAnswer({ eligible: true, credentialSubject: {}, expiresAt: given });
    expect(answer.eligible && 'expiresAt' in answer && answer.expiresAt?.toISOString()).toBe(iso);
  });

  it('accepts "not ready yet": pending, with or without retryAfterSeconds, claims or not', () => {
    expect(parseClaimsAnswer({ eligible: true, pending: true })).toEqual({ eligible: true, pending: true });
    expect(parseClaimsAnswer({ eligible: true, pending: true, retryAfterSeconds: 30 })).toEqual({
      eligible: true,
      pending: true,
      retryAfterSeconds: 30,
    });
    expect(parseClaimsAnswer({ eligible: true, pending: true, credentialSubject: { a: 1 } })).toEqual({
      eligible: true,
      pending: true,
    });
    expect(parseClaimsAnswer({ eligible: true, pending: false, credentialSubject: { a: 1 } })).toEqual({
      eligible: true,
      credentialSubject: { a: 1 },
      expiresAt: undefined,
    });
  });

  it.each([
    { eligible: true, pending: true, retryAfterSeconds: 0 },
    { eligible: true, pending: true, retryAfterSeconds: 1.5 },
    { eligible: true, pending: 'yes' },
    { eligible: false, pending: true },
  ])('refuses a malformed pending answer %j', (body) => {
    if (body.eligible === false) expect(parseClaimsAnswer(body)).toEqual({ eligible: false });
    else expect(() => parseClaimsAnswer(body)).toThrow(ClaimsSourceError);
  });

  it.each([
    undefined,
    null,
    'yes',
    { eligible: 'yes' },
    { eligible: true },
    { eligible: true, credentialSubject: [] },
    { eligible: true, credentialSubject: {}, expiresAt: 'soon' },
  ])('refuses %j as an upstream error, never "not eligible"', (body) => {
    expect(() => parseClaimsAnswer(body)).toThrow(ClaimsSourceError);
  });
});
