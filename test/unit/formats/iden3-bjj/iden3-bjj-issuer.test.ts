import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CredentialStatusResolverRegistry,
  CredentialStatusType,
  calculateCoreSchemaHash,
  IssuerResolver,
  JsonSchemaValidator,
  ProofType,
  VerifiableConstants,
  validateTreeState,
  W3CCredential,
} from '@0xpolygonid/js-sdk';
import { PublicKey, poseidon, Signature } from '@iden3/js-crypto';
import { buildDIDType, Claim, DID, IdPosition, MerklizedRootPosition } from '@iden3/js-iden3-core';
import { Merklizer } from '@iden3/js-jsonld-merklization';
import { Hash, hashElems, Proof, verifyProof } from '@iden3/js-merkletree';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../../src/errors.js';
import {
  type CredentialStatusAnswer,
  Iden3BjjIssuer,
} from '../../../../src/formats/iden3-bjj/iden3-bjj-issuer.js';
import type { IssueInput } from '../../../../src/formats/issuer.js';
import { IssuerUrls } from '../../../../src/identity/issuer-identity.js';
import { openSqlite, type SqliteDatabase } from '../../../../src/store/sqlite/database.js';
import { sqliteIden3Store } from '../../../../src/store/sqlite/index.js';
import { SqliteIssuanceStore } from '../../../../src/store/sqlite/sqlite-issuance-store.js';
import {
  HOLDER_DID_KEY,
  holderIden3Did,
  MEMBERSHIP_CLAIMS,
  MEMBERSHIP_TYPE_IRI,
  membershipSchema,
  SCHEMAS_DIR,
} from './fixtures.js';

// docs/interface.md "What an SD-JWT VC contains": credentials of the Iden3 back-end, checked by js-sdk (offline: loopback HTTP only)
// and independently with the primitives.

type Json = Record<string, unknown>;

interface BjjProofJson {
  type: string;
  issuerData: {
    id: string;
    state: { claimsTreeRoot: string; revocationTreeRoot: string; rootOfRoots: string; value: string };
    authCoreClaim: string;
    mtp: { existence: boolean; siblings: string[] };
    credentialStatus: { id: string; type: string; revocationNonce: number };
  };
  coreClaim: string;
  signature: string;
}

const ISSUED_AT = new Date('2025-01-02T03:04:05.000Z');
const EXPIRES_AT = new Date('2026-01-02T03:04:05.000Z');

let server: Server;
let origin: string;
let issuer: Iden3BjjIssuer;
let db: SqliteDatabase;
let keysDir: string;
let nextNonce = 1000;

function input(overrides: Partial<IssueInput> = {}): IssueInput {
  return {
    credentialId: randomUUID(),
    holderDid: holderIden3Did(),
    schema: membershipSchema(),
    claims: { ...MEMBERSHIP_CLAIMS },
    issuedAt: ISSUED_AT,
    expiresAt: EXPIRES_AT,
    revocationNonce: nextNonce++,
    ...overrides,
  };
}

async function issue(overrides: Partial<IssueInput> = {}): Promise<{ credential: Json; nonce: number }> {
  const i = input(overrides);
  const { credential, kid } = await issuer.issue(i);
  expect(kid).toBe(`${issuer.did}#bjj`);
  return { credential: credential as Json, nonce: i.revocationNonce };
}

function bjjProof(credential: Json): BjjProofJson {
  const proofs = credential.proof as BjjProofJson[];
  expect(Array.isArray(proofs)).toBe(true);
  expect(proofs).toHaveLength(1);
  return proofs[0]!;
}

async function appError(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

function credentialStatusRegistry(): CredentialStatusResolverRegistry {
  const registry = new CredentialStatusResolverRegistry();
  registry.register(CredentialStatusType.SparseMerkleTreeProof, new IssuerResolver());
  return registry;
}

beforeAll(async () => {
  // The loopback stands in for the two things a js-sdk verifier fetches: the issuer's
  // /credential-status/:nonce (served from issuer.credentialStatus, as the lead's route will) and a
  // DID resolver answering with an Iden3StateInfo2023 method for states this issuer recorded.
  server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const status = /^\/credential-status\/(\d+)$/.exec(url.pathname);
    if (status) {
      issuer.credentialStatus(Number(status[1])).then(
        (body) => send(200, body),
        (err: AppError) => send(err.status ?? 500, { code: err.code }),
      );
      return;
    }
    const resolve = /^\/resolver\/(.+)$/.exec(url.pathname);
    if (resolve) {
      const did = decodeURIComponent(resolve[1]!);
      const state = url.searchParams.get('state') ?? '';
      if (did !== issuer.did || !(await issuer.hasState(state)))
        return send(404, { didResolutionMetadata: {} });
      return send(200, {
        didDocument: {
          '@context': ['https://www.w3.org/ns/did/v1'],
          id: did,
          verificationMethod: [
            // Not published on any chain: js-sdk accepts it only as the genesis state.
            { id: `${did}#state-info-v1`, type: 'Iden3StateInfo2023', controller: did, published: false },
          ],
        },
        didResolutionMetadata: {},
      });
    }
    send(404, {});
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  db = openSqlite(':memory:');
  keysDir = mkdtempSync(join(tmpdir(), 'iden3-issuer-'));
  issuer = await Iden3BjjIssuer.open({
    store: sqliteIden3Store(db),
    keysDir,
    generateKeyIfMissing: true,
    urls: new IssuerUrls(origin),
    schemasDir: SCHEMAS_DIR,
  });
});

afterAll(async () => {
  await new Promise((ok) => server.close(ok));
  await issuer.close();
  db.close();
  rmSync(keysDir, { recursive: true, force: true });
});

describe('Iden3BjjIssuer: identity', () => {
  it('has an iden3/privado/test DID derived from its genesis state', () => {
    expect(issuer.did).toMatch(/^did:iden3:privado:test:[1-9A-HJ-NP-Za-km-z]+$/);
    const genesis = issuer.genesisState();
    const did = DID.newFromIdenState(
      buildDIDType('iden3', 'privado', 'test'),
      Hash.fromHex(genesis.state).bigInt(),
    );
    expect(did.string()).toBe(issuer.did);
    expect(issuer.proofType).toBe('BJJ_SIG_2021');
    expect(issuer.usesStatusList).toBe(false);
    expect(issuer.supports(membershipSchema())).toBe(true);
    const { iden3: _iden3, ...withoutIden3 } = membershipSchema();
    expect(issuer.supports(withoutIden3)).toBe(false);
  });
});

describe('Iden3BjjIssuer: credential layout', () => {
  it('writes the W3C VC fields the Iden3 tooling writes', async () => {
    const i = input();
    const { credential } = await issuer.issue(i);
    const c = credential as Json;
    expect(c.id).toBe(`urn:uuid:${i.credentialId}`);
    expect(c['@context']).toEqual([
      'https://www.w3.org/2018/credentials/v1',
      'https://schema.iden3.io/core/jsonld/iden3proofs.jsonld',
      'https://issuer.example/contexts/membership-v1.jsonld',
    ]);
    expect(c.type).toEqual(['VerifiableCredential', 'Membership']);
    expect(c.credentialSubject).toEqual({ id: i.holderDid, ...MEMBERSHIP_CLAIMS, type: 'Membership' });
    expect(c.credentialSchema).toEqual({
      id: 'https://issuer.example/schemas/membership-v1.json',
      type: 'JsonSchema2023',
    });
    expect(c.credentialStatus).toEqual({
      id: `${origin}/credential-status/${i.revocationNonce}`,
      type: 'SparseMerkleTreeProof',
      revocationNonce: i.revocationNonce,
    });
    expect(c.issuer).toBe(issuer.did);
    expect(c.issuanceDate).toBe(ISSUED_AT.toISOString());
    expect(c.expirationDate).toBe(EXPIRES_AT.toISOString());

    const proof = bjjProof(c);
    expect(proof.type).toBe('BJJSignature2021');
    expect(proof.issuerData.id).toBe(issuer.did);
    expect(proof.issuerData.credentialStatus).toEqual({
      id: `${origin}/credential-status/0`,
      type: 'SparseMerkleTreeProof',
      revocationNonce: 0,
    });
    expect(proof.signature).toMatch(/^[0-9a-f]{128}$/);
    expect(proof.coreClaim).toMatch(/^[0-9a-f]{512}$/);
  });

  it('validates against the published JSON schema (js-sdk JsonSchemaValidator)', async () => {
    const { credential } = await issue();
    const schema = readFileSync(join(SCHEMAS_DIR, 'json/membership-v1.json'));
    const enc = new TextEncoder();
    await expect(
      new JsonSchemaValidator().validate(enc.encode(JSON.stringify(credential)), schema),
    ).resolves.toBe(true);
  });

  it('ships the VC 2018 and iden3proofs contexts js-sdk embeds for the same URLs', async () => {
    const vc = await issuer.documentLoader('https://www.w3.org/2018/credentials/v1');
    const proofs = await issuer.documentLoader('https://schema.iden3.io/core/jsonld/iden3proofs.jsonld');
    expect(vc.document).toEqual(JSON.parse(VerifiableConstants.JSONLD_SCHEMA.W3C_VC_DOCUMENT_2018));
    expect(proofs.document).toEqual(
      JSON.parse(VerifiableConstants.JSONLD_SCHEMA.IDEN3_PROOFS_DEFINITION_DOCUMENT),
    );
    await expect(issuer.documentLoader('https://example.com/other.jsonld')).rejects.toThrow(
      'not available locally',
    );
  });
});

describe('Iden3BjjIssuer: independent verification with the primitives', () => {
  for (const [label, holderDid] of [
    ['an Iden3 holder', holderIden3Did(11n)],
    ['a did:key holder', HOLDER_DID_KEY],
  ] as const) {
    it(`verifies signature, auth claim, state and core claim (${label})`, async () => {
      const { credential, nonce } = await issue({ holderDid });
      const proof = bjjProof(credential);
      const { state } = proof.issuerData;

      // The signature over Poseidon(hIndex, hValue) of the core claim, by the key in the auth claim.
      const authClaim = new Claim().fromHex(proof.issuerData.authCoreClaim);
      const slots = authClaim.rawSlotsAsInts();
      const pub = new PublicKey([slots[2]!, slots[3]!]);
      expect(pub.hex()).toBe(issuer.publicKeyHex);
      const coreClaim = new Claim().fromHex(proof.coreClaim);
      const { hi, hv } = coreClaim.hiHv();
      const sig = Signature.newFromCompressed(Uint8Array.from(Buffer.from(proof.signature, 'hex')));
      expect(pub.verifyPoseidon(poseidon.hash([hi, hv]), sig)).toBe(true);
      expect(pub.verifyPoseidon(poseidon.hash([hi, hv + 1n]), sig)).toBe(false);

      // The auth claim is in the claims tree of the stated state; the state hashes its three roots.
      const mtp = Proof.fromJSON(proof.issuerData.mtp);
      expect(mtp.existence).toBe(true);
      expect(
        await verifyProof(Hash.fromHex(state.claimsTreeRoot), mtp, authClaim.hIndex(), authClaim.hValue()),
      ).toBe(true);
      const value = hashElems([
        Hash.fromHex(state.claimsTreeRoot).bigInt(),
        Hash.fromHex(state.revocationTreeRoot).bigInt(),
        Hash.fromHex(state.rootOfRoots).bigInt(),
      ]);
      expect(value.hex()).toBe(state.value);
      expect(authClaim.getRevocationNonce()).toBe(0n);

      // The core claim is this credential: re-merklize (without proof) and compare every slot.
      const { proof: _p, ...unsigned } = credential;
      const mz = await Merklizer.merklizeJSONLD(JSON.stringify(unsigned), {
        documentLoader: issuer.documentLoader,
      });
      expect(coreClaim.getMerklizedPosition()).toBe(MerklizedRootPosition.Value);
      expect(coreClaim.getMerklizedRoot()).toBe((await mz.root()).bigInt());
      expect(coreClaim.getIdPosition()).toBe(IdPosition.Index);
      expect(coreClaim.getIndexId().bigInt()).toBe(DID.idFromDID(DID.parse(holderDid)).bigInt());
      expect(coreClaim.getRevocationNonce()).toBe(BigInt(nonce));
      expect(coreClaim.getExpirationDate()?.getTime()).toBe(Math.floor(EXPIRES_AT.getTime() / 1000) * 1000);
      expect(coreClaim.getVersion()).toBe(0);
      expect(coreClaim.getFlagUpdatable()).toBe(false);
      // Schema hash: last 16 bytes of keccak256 of the type's expanded IRI (js-sdk's function).
      const expected = calculateCoreSchemaHash(new TextEncoder().encode(MEMBERSHIP_TYPE_IRI));
      expect(coreClaim.getSchemaHash().bigInt()).toBe(expected.bigInt());
    });
  }

  it('merklizes memberSince as a time (xsd:dateTime) and memberNumber as an integer', async () => {
    const { credential } = await issue();
    const { proof: _p, ...unsigned } = credential;
    const mz = await Merklizer.merklizeJSONLD(JSON.stringify(unsigned), {
      documentLoader: issuer.documentLoader,
    });
    const since = await mz.proof(await mz.resolveDocPath('credentialSubject.memberSince', mz.options));
    expect(since.proof.existence).toBe(true);
    expect(since.value?.asTime().epochMilliseconds).toBe(Date.parse('2019-03-01T00:00:00Z'));
    const number = await mz.proof(await mz.resolveDocPath('credentialSubject.memberNumber', mz.options));
    expect(number.value?.value).toBe(1815n);
  });

  it('signs different claims differently (another member, another root)', async () => {
    const a = bjjProof((await issue()).credential);
    const b = bjjProof((await issue({ claims: { ...MEMBERSHIP_CLAIMS, tier: 'platinum' } })).credential);
    const ra = new Claim().fromHex(a.coreClaim).getMerklizedRoot();
    const rb = new Claim().fromHex(b.coreClaim).getMerklizedRoot();
    expect(ra).not.toBe(rb);
  });
});

describe('Iden3BjjIssuer: js-sdk verification (offline, loopback only)', () => {
  it('W3CCredential.verifyProof(BJJSignature2021) accepts the credential', async () => {
    const { credential } = await issue();
    const w3c = W3CCredential.fromJSON(credential);
    // Checks: core claim rebuilt from the credential equals proof.coreClaim; signature by the auth
    // claim's key; DID document has the state (genesis accepted unpublished); auth claim nonce 0 not
    // revoked per our /credential-status/0 answer (IssuerResolver over HTTP).
    await expect(
      w3c.verifyProof(ProofType.BJJSignature, `${origin}/resolver`, {
        credStatusResolverRegistry: credentialStatusRegistry(),
        merklizeOptions: { documentLoader: issuer.documentLoader },
      }),
    ).resolves.toBe(true);
  });

  it('W3CCredential.verifyProof rejects a credential whose subject was altered', async () => {
    const { credential } = await issue();
    const tampered = structuredClone(credential);
    (tampered.credentialSubject as Json).tier = 'platinum';
    await expect(
      W3CCredential.fromJSON(tampered).verifyProof(ProofType.BJJSignature, `${origin}/resolver`, {
        credStatusResolverRegistry: credentialStatusRegistry(),
        merklizeOptions: { documentLoader: issuer.documentLoader },
      }),
    ).rejects.toThrow('proof generated for another credential');
  });

  it('IssuerResolver reads /credential-status: not revoked, then revoked', async () => {
    const { credential, nonce } = await issue();
    const w3c = W3CCredential.fromJSON(credential);
    const resolver = new IssuerResolver();

    const before = await resolver.resolve(w3c.credentialStatus);
    expect(validateTreeState(before.issuer)).toBe(true);
    expect(before.mtp.existence).toBe(false);
    expect(
      await verifyProof(Hash.fromHex(before.issuer.revocationTreeRoot), before.mtp, BigInt(nonce), 0n),
    ).toBe(true);

    await issuer.revoke(nonce);
    const after = await resolver.resolve(w3c.credentialStatus);
    expect(validateTreeState(after.issuer)).toBe(true);
    expect(after.issuer.state).not.toBe(before.issuer.state);
    expect(after.mtp.existence).toBe(true);
    expect(
      await verifyProof(Hash.fromHex(after.issuer.revocationTreeRoot), after.mtp, BigInt(nonce), 0n),
    ).toBe(true);

    // The issuer key itself is still good after a credential's revocation.
    await expect(
      w3c.verifyProof(ProofType.BJJSignature, `${origin}/resolver`, {
        credStatusResolverRegistry: credentialStatusRegistry(),
        merklizeOptions: { documentLoader: issuer.documentLoader },
      }),
    ).resolves.toBe(true);
  });
});

describe('Iden3BjjIssuer: /credential-status answer', () => {
  function expectShape(answer: CredentialStatusAnswer): void {
    expect(Object.keys(answer).sort()).toEqual(['issuer', 'mtp']);
    expect(Object.keys(answer.issuer).sort()).toEqual([
      'claimsTreeRoot',
      'revocationTreeRoot',
      'rootOfRoots',
      'state',
    ]);
    for (const v of Object.values(answer.issuer)) expect(v).toMatch(/^[0-9a-f]{64}$/);
    for (const s of answer.mtp.siblings) expect(s).toMatch(/^\d+$/);
    if (answer.mtp.node_aux) {
      expect(answer.mtp.node_aux.key).toMatch(/^\d+$/);
      expect(answer.mtp.node_aux.value).toMatch(/^\d+$/);
    }
    // It survives the wire as js-sdk parses it.
    expect(Proof.fromJSON(JSON.parse(JSON.stringify(answer.mtp))).existence).toBe(answer.mtp.existence);
  }

  it('answers nonce 0 (the auth claim) with a real non-membership proof', async () => {
    const answer = await issuer.credentialStatus(0);
    expectShape(answer);
    expect(answer.mtp.existence).toBe(false);
    expect(validateTreeState(answer.issuer)).toBe(true);
    const proof = Proof.fromJSON(answer.mtp);
    expect(await verifyProof(Hash.fromHex(answer.issuer.revocationTreeRoot), proof, 0n, 0n)).toBe(true);
  });

  it('gives non-membership before revocation and membership after, against the latest state', async () => {
    const nonce = nextNonce++;
    const before = await issuer.credentialStatus(nonce);
    expectShape(before);
    expect(before.mtp.existence).toBe(false);

    const { state } = await issuer.revoke(nonce);
    const after = await issuer.credentialStatus(nonce);
    expectShape(after);
    expect(after.issuer.state).toBe(state);
    expect(after.issuer).toEqual(await issuer.latestState());
    expect(after.mtp.existence).toBe(true);
    expect(after.mtp.node_aux).toBeUndefined();
    expect(
      await verifyProof(
        Hash.fromHex(after.issuer.revocationTreeRoot),
        Proof.fromJSON(after.mtp),
        BigInt(nonce),
        0n,
      ),
    ).toBe(true);
    // Claims and roots trees are untouched by revocations.
    expect(after.issuer.claimsTreeRoot).toBe(issuer.genesisState().claimsTreeRoot);
    expect(after.issuer.rootOfRoots).toBe(issuer.genesisState().rootOfRoots);

    // A neighbour that is not revoked gets a non-membership proof with an auxiliary leaf.
    const other = await issuer.credentialStatus(nonce + 1);
    expect(other.mtp.existence).toBe(false);
    expect(
      await verifyProof(
        Hash.fromHex(other.issuer.revocationTreeRoot),
        Proof.fromJSON(other.mtp),
        BigInt(nonce + 1),
        0n,
      ),
    ).toBe(true);
  });
});

describe('Iden3BjjIssuer: revocation', () => {
  it('is a no-op returning the current state when repeated', async () => {
    const nonce = nextNonce++;
    const first = await issuer.revoke(nonce);
    expect(first.alreadyRevoked).toBe(false);
    const again = await issuer.revoke(nonce);
    expect(again).toEqual({ state: first.state, alreadyRevoked: true });
    expect((await issuer.latestState()).state).toBe(first.state);
  });

  it("commits the issuance record's revocation in the same transaction, and rolls both back together", async () => {
    const issuances = new SqliteIssuanceStore(db);
    const record = async (nonce: number) => {
      const id = randomUUID();
      const expiresAt = new Date(Date.now() + 86_400_000);
      const outcome = await issuances.insertIssuance(
        {
          credentialId: id,
          channel: 'direct',
          userId: 'u',
          holderDid: 'did:example:h',
          schemaId: 's',
          proofType: 'BJJ_SIG_2021',
          revocationNonce: nonce,
          statusSlot: null,
          subjectHash: `h-${id}`,
          kid: 'k',
          createdAt: new Date(),
          expiresAt,
          envelope: {
            holderDid: 'did:example:h',
            schemaId: 's',
            expiresAt: expiresAt.toISOString(),
            data: 'AA==',
            iv: 'AA==',
            authTag: 'AA==',
            encryptedKey: 'AA==',
            externalId: id,
          },
        },
        { dedupe: false },
      );
      expect(outcome.kind).toBe('inserted');
    };

    const ok = nextNonce++;
    await record(ok);
    const result = await issuer.revoke(ok, { nonce: ok, change: 'revoke', at: new Date() });
    expect(result.record?.status).toBe(1);
    expect((await issuances.getByNonce(ok))!.status).toBe(1);
    expect((await issuer.latestState()).state).toBe(result.state);

    // The record's update fails inside the commit (a real SQLite abort): the tree change goes too.
    const failing = nextNonce++;
    await record(failing);
    db.exec(
      `CREATE TRIGGER refuse_revoke BEFORE UPDATE OF status ON issuances WHEN NEW.revocation_nonce = ${failing} BEGIN SELECT RAISE(ABORT, 'caller failed'); END`,
    );
    const stateBefore = await issuer.latestState();
    await expect(
      issuer.revoke(failing, { nonce: failing, change: 'revoke', at: new Date() }),
    ).rejects.toThrow('caller failed');
    db.exec('DROP TRIGGER refuse_revoke');
    expect(await issuer.latestState()).toEqual(stateBefore);
    expect((await issuances.getByNonce(failing))!.status).toBe(0);
    expect((await issuer.credentialStatus(failing)).mtp.existence).toBe(false);

    // Nothing half-written was left behind: the same nonce revokes cleanly afterwards.
    expect((await issuer.revoke(failing)).alreadyRevoked).toBe(false);
    expect((await issuer.credentialStatus(failing)).mtp.existence).toBe(true);
  });

  it('serializes concurrent revocations: each one lands in its own state', async () => {
    const nonces = Array.from({ length: 6 }, () => nextNonce++);
    const countStates = () => (db.prepare('SELECT COUNT(*) AS n FROM iden3_states').get() as { n: number }).n;
    const before = countStates();
    const results = await Promise.all(nonces.map((n) => issuer.revoke(n)));
    expect(new Set(results.map((r) => r.state)).size).toBe(nonces.length);
    expect(countStates()).toBe(before + nonces.length);
    for (const n of nonces) expect((await issuer.credentialStatus(n)).mtp.existence).toBe(true);
  });
});

describe('Iden3BjjIssuer: bad input', () => {
  it('refuses a schema without an iden3 block (400)', async () => {
    const { iden3: _iden3, ...schema } = membershipSchema();
    const err = await appError(issuer.issue(input({ schema })));
    expect(err.status).toBe(400);
    expect(err.code).toBe('INVALID_PARAMETER');
  });

  it('refuses claims the JSON-LD context does not define, or that it reserves (422)', async () => {
    for (const claims of [
      { ...MEMBERSHIP_CLAIMS, nickname: 'Ada' },
      { ...MEMBERSHIP_CLAIMS, id: 'did:example:other' },
      { ...MEMBERSHIP_CLAIMS, type: 'Other' },
    ]) {
      const err = await appError(issuer.issue(input({ claims })));
      expect(err.status).toBe(422);
      expect(err.code).toBe('CLAIMS_INVALID');
    }
  });

  it('refuses claims whose values do not fit the context types (422, not 500)', async () => {
    for (const claims of [
      { ...MEMBERSHIP_CLAIMS, memberNumber: 'one thousand' },
      { ...MEMBERSHIP_CLAIMS, memberSince: 'not a date' },
    ]) {
      const err = await appError(issuer.issue(input({ claims })));
      expect(err.status).toBe(422);
      expect(err.code).toBe('CLAIMS_INVALID');
    }
  });

  it('refuses a holder that is not a DID, nonce 0 and unsafe nonces (400)', async () => {
    for (const p of [
      issuer.issue(input({ holderDid: 'not a did' })),
      issuer.issue(input({ holderDid: issuer.did })),
      issuer.issue(input({ revocationNonce: 0 })),
      issuer.issue(input({ revocationNonce: 2 ** 53 })),
      issuer.revoke(0),
      issuer.revoke(-1),
      issuer.credentialStatus(1.5),
    ]) {
      const err = await appError(p);
      expect(err.status).toBe(400);
      expect(err.code).toBe('INVALID_PARAMETER');
    }
  });
});
