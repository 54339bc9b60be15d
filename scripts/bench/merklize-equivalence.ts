import { performance } from 'node:perf_hooks';
import { isDeepStrictEqual } from 'node:util';
import { LocalDocumentLoader } from '../../src/formats/iden3-bjj/document-loader.js';
import { compare, generator, SEED } from '../../test/fixtures/merklize-equivalence.js';

type Row = { name: string; value: number; unit: string };

/** Generated credentials compared (BENCH_MERKLIZE_CREDENTIALS). */
const COUNT = Number(process.env.BENCH_MERKLIZE_CREDENTIALS || 1000);

/**
 * `npm run bench -- merklize-equivalence`: the merklization equivalence check of
 * test/slow/merklize-equivalence.test.ts at volume, on the same seeded sequence (the test compares
 * its first credentials). Every credential must give the kit's root, core claim and signed message
 * that the reference libraries give, or the section throws naming the first that does not; the
 * figure is what one comparison (both merklizations) costs.
 */
export async function benchMerklizeEquivalence(): Promise<Row[]> {
  const loader = new LocalDocumentLoader();
  const next = generator(SEED);
  const t0 = performance.now();
  for (let n = 0; n < COUNT; n++) {
    const generated = next(n);
    const { ours, ref, claims } = await compare(generated, loader);
    const same =
      isDeepStrictEqual(ours, ref) &&
      claims !== undefined &&
      claims.ours === claims.ref &&
      claims.oursMessage === claims.refMessage;
    if (!same)
      throw new Error(
        `merklize-equivalence: credential ${n} (seed ${SEED}) differs from the reference: ${JSON.stringify(generated.credential.credentialSubject)}`,
      );
  }
  const ms = performance.now() - t0;
  return [
    { name: 'merklize equivalence: credentials compared', value: COUNT, unit: 'credentials' },
    { name: 'merklize equivalence: ms per credential (kit + reference)', value: ms / COUNT, unit: 'ms' },
  ];
}
