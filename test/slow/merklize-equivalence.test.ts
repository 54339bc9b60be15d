import { poseidon } from '@iden3/js-crypto';
import { describe, expect, it } from 'vitest';
import {
  buildCoreClaim,
  claimSignedMessage,
  type MerklizedCredential,
  merklizeCredential,
  schemaHashFromTypeIri,
  subjectIdFromDid,
} from '../../src/formats/iden3-bjj/core-claim.js';
import {
  IDEN3_PROOFS_CONTEXT_URL,
  LocalDocumentLoader,
  VC_2018_CONTEXT_URL,
} from '../../src/formats/iden3-bjj/document-loader.js';
import { holderIden3Did } from '../unit/formats/iden3-bjj/fixtures.js';
import { referenceMerklize } from '../unit/formats/iden3-bjj/reference-merklize.js';

// The kit's merklizer (merklize.ts, poseidon.ts) gives the root, the core claim
// and the signed message that @iden3/js-jsonld-merklization + @iden3/js-merkletree + js-crypto give,
// on 1,000 generated credentials: varied subject types, nested objects, arrays, dates, integers
// (negative too), doubles, booleans and non-ASCII text. Seeded, so a failure names its credential.

const CREDENTIALS = Number(process.env.MERKLIZE_CREDENTIALS ?? 1000);
const SEED = 0x13_2021;
const VOCAB = 'https://gen.example/vocab#';
const XSD = 'http://www.w3.org/2001/XMLSchema#';

type Json = Record<string, unknown>;

/** mulberry32: a small deterministic generator. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = [
  'Ada',
  'Lovelace',
  'Zoë',
  'Łódź',
  'Ærø',
  '東京',
  'Привет',
  'naïve café',
  '✓ ok',
  'O’Brien',
  'x',
];

function generator(seed: number) {
  const rnd = prng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[int(0, xs.length - 1)]!;
  const text = () =>
    Array.from({ length: int(1, 4) }, () => pick(WORDS)).join(' ') +
    (rnd() < 0.1 ? 'é'.repeat(int(1, 300)) : '');
  const date = () => {
    const d = new Date(Date.UTC(int(1900, 2100), int(0, 11), int(1, 28), int(0, 23), int(0, 59), int(0, 59)));
    return rnd() < 0.5 ? d.toISOString().slice(0, 10) : d.toISOString();
  };
  // Typed terms come from the context; untyped ones take JSON's own type (string, integer, double, boolean).
  const scalar = (): [string, unknown] => {
    switch (int(0, 6)) {
      case 0:
        return [`int${int(0, 3)}`, int(-1_000_000, 1_000_000)];
      case 1:
        return [`date${int(0, 3)}`, date()];
      case 2:
        return [`dbl${int(0, 3)}`, (rnd() - 0.5) * 10 ** int(-3, 9)];
      case 3:
        return [`flag${int(0, 3)}`, rnd() < 0.5];
      case 4:
        return [`num${int(0, 3)}`, rnd() < 0.5 ? int(0, 1e9) : rnd() * 1000];
      default:
        return [`text${int(0, 5)}`, text()];
    }
  };
  const object = (depth: number): Json => {
    const o: Json = {};
    for (let i = int(1, depth > 0 ? 2 : 3); i > 0; i--) {
      const r = rnd();
      if (depth < 1 && r < 0.15) o[`nested${int(0, 2)}`] = object(depth + 1);
      else if (r < 0.3) {
        const [k] = scalar();
        o[`list${k}`] = Array.from({ length: int(1, 3) }, () => scalar()[1]);
      } else if (depth < 1 && r < 0.38) {
        o[`objects${int(0, 1)}`] = Array.from({ length: int(2, 3) }, () => object(depth + 1));
      } else {
        const [k, v] = scalar();
        o[k] = v;
      }
    }
    return o;
  };
  const context = (type: string): Json => {
    const terms: Json = { '@vocab': VOCAB, [type]: `${VOCAB}${type}` };
    for (let i = 0; i < 4; i++) {
      terms[`int${i}`] = { '@id': `${VOCAB}int${i}`, '@type': `${XSD}integer` };
      terms[`date${i}`] = { '@id': `${VOCAB}date${i}`, '@type': `${XSD}dateTime` };
      terms[`dbl${i}`] = { '@id': `${VOCAB}dbl${i}`, '@type': `${XSD}double` };
    }
    return terms;
  };
  return (n: number) => {
    const type = `Gen${int(0, 9)}`;
    const nonce = int(1, 2 ** 31);
    const subject: Json = { ...object(0), type };
    const holder = holderIden3Did(BigInt(seed) * 10_000n + BigInt(n));
    if (rnd() < 0.5) subject.id = holder;
    const expiresAt = new Date(Date.UTC(2027, 0, 1) + n * 1000);
    const credential: Json = {
      '@context': [VC_2018_CONTEXT_URL, IDEN3_PROOFS_CONTEXT_URL, context(type)],
      type: ['VerifiableCredential', type],
      credentialSubject: subject,
    };
    // The reference costs ~1 ms a tree hash here, so each envelope member of the kit's layout
    // (iden3-bjj-issuer.ts) is present in some credentials, not in all: 1,000 stay within a minute.
    const envelope: Json = {
      id: `urn:uuid:00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`,
      issuanceDate: new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString(),
      expirationDate: expiresAt.toISOString(),
      credentialStatus: {
        id: `https://issuer.example/credential-status/${nonce}`,
        revocationNonce: nonce,
        type: 'SparseMerkleTreeProof',
      },
      issuer: 'did:iden3:privado:test:2Scn2RfosbkQDMQzQM5nCz3Nk5GnbzZCWzGCd3tc2G',
      credentialSchema: { id: `https://gen.example/schemas/${type}.json`, type: 'JsonSchema2023' },
    };
    for (const [k, v] of Object.entries(envelope)) if (rnd() < 0.2) credential[k] = v;
    return { credential, holder, nonce, expiresAt };
  };
}

async function outcome(
  run: () => Promise<MerklizedCredential>,
): Promise<MerklizedCredential | { error: true }> {
  try {
    return await run();
  } catch {
    return { error: true };
  }
}

describe('merklization: the kit vs @iden3/js-jsonld-merklization + js-merkletree + js-crypto', () => {
  it(`gives the same root, core claim and signed message on ${CREDENTIALS} generated credentials`, async () => {
    const loader = new LocalDocumentLoader();
    const next = generator(SEED);
    let compared = 0;
    for (let n = 0; n < CREDENTIALS; n++) {
      const { credential, holder, nonce, expiresAt } = next(n);
      const label = `credential ${n} (seed ${SEED}): ${JSON.stringify(credential.credentialSubject)}`;
      const ours = await outcome(() => merklizeCredential(credential, loader.load));
      const ref = await outcome(() => referenceMerklize(credential, loader.load));
      expect(ours, label).toEqual(ref);
      if ('error' in ours || 'error' in ref) continue;
      const claim = (m: MerklizedCredential) =>
        buildCoreClaim({
          schemaHash: schemaHashFromTypeIri(m.typeIri),
          subjectId: subjectIdFromDid(holder),
          revocationNonce: BigInt(nonce),
          expiresAt,
          merklizedRoot: m.root,
        });
      const oursClaim = claim(ours);
      const refClaim = claim(ref);
      expect(oursClaim.hex(), label).toBe(refClaim.hex());
      const ref2 = refClaim.hiHv();
      // BJJSignature2021 signs Poseidon(hIndex, hValue): the kit's hashes against js-iden3-core's and js-crypto's.
      expect(claimSignedMessage(oursClaim), label).toBe(poseidon.hash([ref2.hi, ref2.hv]));
      compared++;
    }
    // Generated credentials are valid: every one is compared, none passes by failing on both sides.
    expect(compared).toBe(CREDENTIALS);
  }, 600_000);
});
