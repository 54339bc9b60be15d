import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { W3CCredential } from '@0xpolygonid/js-sdk';
import { Claim } from '@iden3/js-iden3-core';
import { Merklizer, PoseidonHasher } from '@iden3/js-jsonld-merklization';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BN254_FIELD_ORDER } from '../../../src/formats/iden3-bjj/bjj-signer.js';
import { MemoizedPoseidonHasher } from '../../../src/formats/iden3-bjj/core-claim.js';
import { Iden3BjjIssuer } from '../../../src/formats/iden3-bjj/iden3-bjj-issuer.js';
import { MerklizePool } from '../../../src/formats/iden3-bjj/merklize-pool.js';
import type { IssueInput } from '../../../src/formats/issuer.js';
import { IssuerUrls } from '../../../src/identity/issuer-identity.js';
import { openSqlite, type SqliteDatabase } from '../../../src/store/sqlite/database.js';
import { sqliteIden3Store } from '../../../src/store/sqlite/index.js';
import {
  HOLDER_DID_KEY,
  holderIden3Did,
  MEMBERSHIP_CLAIMS,
  membershipSchema,
  SCHEMAS_DIR,
} from '../../unit/formats/iden3-bjj/fixtures.js';

// docs/interface.md "What an SD-JWT VC contains" and docs/dependencies.md: what the kit does to merklize faster (a worker pool, a memoized Poseidon hasher)
// must not change a byte of the core claim. The reference is the library's straightforward path:
// Merklizer.merklizeJSONLD with its default hasher, and js-sdk's toCoreClaim.

type Json = Record<string, unknown>;

let db: SqliteDatabase;
let dir: string;
let pooled: Iden3BjjIssuer;
let inline: Iden3BjjIssuer;

beforeAll(async () => {
  db = openSqlite(':memory:');
  dir = mkdtempSync(join(tmpdir(), 'iden3-mz-pool-'));
  const options = {
    store: sqliteIden3Store(db),
    keysDir: join(dir, 'keys'),
    generateKeyIfMissing: true,
    urls: new IssuerUrls('https://issuer.example'),
    schemasDir: SCHEMAS_DIR,
  };
  pooled = await Iden3BjjIssuer.open({ ...options, merklizeWorkers: 2 });
  inline = await Iden3BjjIssuer.open({ ...options, merklizeWorkers: 0 });
});

afterAll(async () => {
  await pooled.close();
  await inline.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const CASES: Array<{ label: string; input: Omit<IssueInput, 'credentialId' | 'schema'> }> = [
  {
    label: 'the fixture member, Iden3 holder',
    input: {
      holderDid: holderIden3Did(7n),
      claims: { ...MEMBERSHIP_CLAIMS },
      issuedAt: new Date('2025-01-02T03:04:05.000Z'),
      expiresAt: new Date('2026-01-02T03:04:05.000Z'),
      revocationNonce: 1,
    },
  },
  {
    label: 'another member without email, did:key holder',
    input: {
      holderDid: HOLDER_DID_KEY,
      claims: {
        givenName: 'Bram',
        familyName: 'de Vries',
        memberSince: '2023-09-01',
        tier: 'basic',
        memberNumber: 2311,
      },
      issuedAt: new Date('2024-06-30T23:59:59.000Z'),
      expiresAt: new Date('2025-06-30T23:59:59.000Z'),
      revocationNonce: 2 ** 53 - 1,
    },
  },
  {
    label: 'non-ASCII names, a large member number, another Iden3 holder',
    input: {
      holderDid: holderIden3Did(123_456_789n),
      claims: {
        givenName: 'Zoë',
        familyName: 'Łukasiewicz-Ñúñez',
        email: 'zoe@example.org',
        memberSince: '1999-12-31',
        tier: 'platinum',
        memberNumber: 9_007_199_254,
      },
      issuedAt: new Date('2030-02-28T12:00:00.000Z'),
      expiresAt: new Date('2040-02-29T12:00:00.000Z'),
      revocationNonce: 4_242_424_242,
    },
  },
  {
    label: 'a long given name (several Poseidon sponge frames)',
    input: {
      holderDid: holderIden3Did(99n),
      claims: { ...MEMBERSHIP_CLAIMS, givenName: 'A'.repeat(100), memberNumber: 1 },
      issuedAt: new Date('2025-05-05T05:05:05.000Z'),
      expiresAt: new Date('2025-05-06T05:05:05.000Z'),
      revocationNonce: 77,
    },
  },
];

/** The library's own path: no pool, no memo, js-sdk's core claim from the credential alone. */
async function reference(credential: Json, revNonce: number): Promise<{ root: bigint; coreClaim: string }> {
  const { proof: _proof, ...unsigned } = credential;
  const mz = await Merklizer.merklizeJSONLD(JSON.stringify(unsigned), {
    documentLoader: inline.documentLoader,
    hasher: new PoseidonHasher(),
  });
  const claim = await W3CCredential.fromJSON(unsigned).toCoreClaim({
    revNonce,
    version: 0,
    subjectPosition: 'index',
    merklizedRootPosition: 'value',
    updatable: false,
    merklizeOpts: { documentLoader: inline.documentLoader },
  });
  return { root: (await mz.root()).bigInt(), coreClaim: claim.hex() };
}

function proofOf(credential: Json): { coreClaim: string; signature: string } {
  return (credential.proof as Array<{ coreClaim: string; signature: string }>)[0]!;
}

describe('merklization: optimized path = library path, byte for byte', () => {
  for (const { label, input } of CASES) {
    it(label, async () => {
      const full: IssueInput = { ...input, credentialId: randomUUID(), schema: membershipSchema() };
      const a = (await pooled.issue(full)).credential as Json;
      const b = (await inline.issue(full)).credential as Json;
      // Same input, same key: the whole credential (and the deterministic signature) is the same.
      expect(a).toEqual(b);

      const ref = await reference(a, input.revocationNonce);
      const { coreClaim } = proofOf(a);
      expect(coreClaim).toBe(ref.coreClaim);
      expect(new Claim().fromHex(coreClaim).getMerklizedRoot()).toBe(ref.root);
    });
  }

  it('issues concurrently through the pool without mixing credentials up', async () => {
    const inputs = CASES.flatMap(({ input }) =>
      [0, 1].map((n) => ({
        ...input,
        credentialId: randomUUID(),
        schema: membershipSchema(),
        revocationNonce:
          input.revocationNonce === 2 ** 53 - 1 ? input.revocationNonce - n : input.revocationNonce + n,
      })),
    );
    const issued = await Promise.all(inputs.map((i) => pooled.issue(i)));
    for (const [n, { credential }] of issued.entries()) {
      expect((credential as Json).id).toBe(`urn:uuid:${inputs[n]!.credentialId}`);
      expect(credential).toEqual((await inline.issue(inputs[n]!)).credential);
    }
  });
});

describe('MemoizedPoseidonHasher', () => {
  it('answers what the default hasher answers, on first use and from its memo', async () => {
    const memo = new MemoizedPoseidonHasher();
    const plain = new PoseidonHasher();
    const enc = new TextEncoder();
    for (let round = 0; round < 2; round++) {
      for (const s of ['a', 'https://issuer.example/vocab/membership-v1.md#givenName', 'x'.repeat(600)]) {
        expect(await memo.hashBytes(enc.encode(s))).toBe(await plain.hashBytes(enc.encode(s)));
      }
      for (const e of [[1n], [1n, 2n], [3n, 2n, 1n], [BN254_FIELD_ORDER - 1n, 0n]]) {
        expect(await memo.hash(e)).toBe(await plain.hash(e));
      }
    }
    expect(memo.prime()).toBe(plain.prime());
    // js-crypto answers undefined for no bytes, which the library's tree then refuses: no value either way.
    await expect(memo.hashBytes(new Uint8Array(0))).rejects.toThrow();
    expect(await plain.hashBytes(new Uint8Array(0))).toBeUndefined();
  });
});

describe('MerklizePool', () => {
  it('rejects a request the worker cannot merklize, and keeps serving the others', async () => {
    const pool = new MerklizePool(1);
    try {
      const unknownContext = { '@context': ['https://example.com/unknown.jsonld'], id: 'urn:x' };
      await expect(pool.merklize(unknownContext, [])).rejects.toThrow('https://example.com/unknown.jsonld');
      const { credential } = await inline.issue({
        ...CASES[0]!.input,
        credentialId: randomUUID(),
        schema: membershipSchema(),
      });
      const schema = membershipSchema().iden3!;
      const { root } = await pool.merklize(credential as Json, [
        { url: schema.contextUrl, schemasDir: SCHEMAS_DIR, contextFile: schema.contextFile },
      ]);
      expect(root).toBe(new Claim().fromHex(proofOf(credential as Json).coreClaim).getMerklizedRoot());
    } finally {
      await pool.close();
    }
  });

  it('refuses work once closed', async () => {
    const pool = new MerklizePool(1);
    await pool.close();
    await expect(pool.merklize({}, [])).rejects.toThrow('closed');
    expect(() => new MerklizePool(0)).toThrow();
  });
});
