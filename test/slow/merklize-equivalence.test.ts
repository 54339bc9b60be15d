import { describe, expect, it } from 'vitest';
import { LocalDocumentLoader } from '../../src/formats/iden3-bjj/document-loader.js';
import { compare, generator, SEED } from '../fixtures/merklize-equivalence.js';

// The kit's merklizer (merklize.ts, poseidon.ts) gives the root, the core claim
// and the signed message that @iden3/js-jsonld-merklization + @iden3/js-merkletree + js-crypto give,
// on generated credentials: varied subject types, nested objects, arrays, dates, integers
// (negative too), doubles, booleans and non-ASCII text. Seeded, so a failure names its credential.
// 250 cover every kind of member the generator makes (test/fixtures/merklize-equivalence.ts);
// `npm run bench -- merklize-equivalence` compares the same sequence at volume (1,000 and more).

const CREDENTIALS = Number(process.env.MERKLIZE_CREDENTIALS ?? 250);

describe('merklization: the kit vs @iden3/js-jsonld-merklization + js-merkletree + js-crypto', () => {
  it(`gives the same root, core claim and signed message on ${CREDENTIALS} generated credentials`, async () => {
    const loader = new LocalDocumentLoader();
    const next = generator(SEED);
    let compared = 0;
    for (let n = 0; n < CREDENTIALS; n++) {
      const generated = next(n);
      const label = `credential ${n} (seed ${SEED}): ${JSON.stringify(generated.credential.credentialSubject)}`;
      const { ours, ref, claims } = await compare(generated, loader);
      expect(ours, label).toEqual(ref);
      if (!claims) continue;
      expect(claims.ours, label).toBe(claims.ref);
      expect(claims.oursMessage, label).toBe(claims.refMessage);
      compared++;
    }
    // Generated credentials are valid: every one is compared, none passes by failing on both sides.
    expect(compared).toBe(CREDENTIALS);
  }, 600_000);
});
