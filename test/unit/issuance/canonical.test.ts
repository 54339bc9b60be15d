import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../src/issuance/canonical.js';

describe('canonicalJson', () => {
  it('sorts keys at every depth and otherwise writes what JSON.stringify writes', () => {
    const value = {
      b: [3, { z: 1, a: [null, undefined, () => 1] }],
      a: 'x"y',
      skip: undefined,
      when: new Date(0),
      n: 1.5e-7,
    };
    expect(canonicalJson(value)).toBe(
      '{"a":"x\\"y","b":[3,{"a":[null,null,null],"z":1}],"n":1.5e-7,"when":"1970-01-01T00:00:00.000Z"}',
    );
    for (const v of [null, 1, 'a', true, [], {}, [[]], { a: {} }])
      expect(canonicalJson(v)).toBe(JSON.stringify(v));
    expect(canonicalJson(undefined)).toBeUndefined();
  });

  // A 5,000-deep Idempotency-Key body overflowed the stack here (a 500).
  it('is iterative: 100,000 levels do not overflow the stack', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = i % 2 ? { a: deep } : [deep];
    const text = canonicalJson(deep);
    expect(text.length).toBeGreaterThan(200_000);
    expect(text.startsWith('{"a":[{"a":')).toBe(true);
  });
});
