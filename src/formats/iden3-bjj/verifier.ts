import { existsSync } from 'node:fs';
import { PublicKey, Signature } from '@iden3/js-crypto';
import { Claim, DID, SchemaHash } from '@iden3/js-iden3-core';
import { Hash, Proof, type ProofJSON, verifyProof } from '@iden3/js-merkletree';
import { z } from 'zod';
import { IssuerUrls } from '../../identity/issuer-identity.js';
import { Checks, refuse, type VerifyResult } from '../../verify/check.js';
import type { DocumentFetcher } from '../../verify/fetch-document.js';
import { loadSchemas } from '../schema-file.js';
import {
  buildCoreClaim,
  claimSignedMessage,
  merklizeCredential,
  schemaHashFromTypeIri,
  subjectIdFromDid,
} from './core-claim.js';
import { type LoadedDocument, LocalDocumentLoader } from './document-loader.js';
import { identityStateHash } from './identity.js';

export interface Iden3VerifyOptions {
  fetcher: DocumentFetcher;
  /** Where the schemas' JSON-LD context files are (SCHEMAS_DIR); other contexts are fetched. */
  schemasDir?: string | undefined;
  now?: Date | undefined;
}

const Hex = z.string().regex(/^[0-9a-f]+$/i);
const MtpSchema = z.object({
  existence: z.boolean(),
  siblings: z.array(z.string()),
  node_aux: z.object({ key: z.string(), value: z.string() }).optional(),
});
const StatusEntrySchema = z.object({
  id: z.url(),
  revocationNonce: z.number().int().nonnegative(),
  type: z.literal('SparseMerkleTreeProof'),
});
const RootsSchema = z.object({ claimsTreeRoot: Hex, revocationTreeRoot: Hex, rootOfRoots: Hex });
const BjjProofSchema = z.object({
  type: z.literal('BJJSignature2021'),
  coreClaim: Hex,
  signature: Hex,
  issuerData: z.object({
    id: z.string(),
    state: RootsSchema.extend({ value: Hex }),
    authCoreClaim: Hex,
    mtp: MtpSchema,
    credentialStatus: StatusEntrySchema.optional(),
  }),
});
export const Iden3CredentialSchema = z.object({
  issuer: z.string(),
  issuanceDate: z.iso.datetime({ offset: true }).optional(),
  expirationDate: z.iso.datetime({ offset: true }).optional(),
  credentialSubject: z.looseObject({ id: z.string() }),
  credentialStatus: StatusEntrySchema,
  proof: z.array(z.looseObject({ type: z.string() })),
});
/** `GET /credential-status/:nonce`: the issuer's roots and the revocation tree proof of the nonce. */
const StatusAnswerSchema = z.object({ issuer: RootsSchema.extend({ state: Hex }), mtp: MtpSchema });

/** Whether a parsed JSON document is meant as a W3C credential (its shape is checked by `format`). */
export function isW3cCredential(value: unknown): boolean {
  return typeof value === 'object' && value !== null && 'credentialSubject' in value;
}

/**
 * Verifies an Iden3 `BJJ_SIG_2021` W3C credential: the issuer's key is the auth claim proven in the
 * genesis state its DID is derived from; the core claim is rebuilt from the credential with the
 * kit's own merklization and core-claim code and must equal the signed one; the BabyJubJub
 * signature is checked with `@iden3/js-crypto`; the revocation nonce (and the auth claim's) is
 * absent from the issuer's revocation tree at `/credential-status/:nonce`.
 */
export async function verifyIden3Credential(
  json: unknown,
  options: Iden3VerifyOptions,
): Promise<VerifyResult> {
  const checks = new Checks();
  const now = options.now ?? new Date();
  const parsed = Iden3CredentialSchema.safeParse(json);
  const proof = parsed.success
    ? BjjProofSchema.safeParse(parsed.data.proof.find((p) => p.type === 'BJJSignature2021'))
    : undefined;
  if (!parsed.success || !proof?.success) {
    const issue = (parsed.success ? proof?.error : parsed.error)?.issues[0];
    checks.fail(
      'format',
      'NOT_IDEN3_CREDENTIAL',
      issue ? `${issue.path.join('.') || 'credential'}: ${issue.message}` : 'no BJJSignature2021 proof',
    );
    return { ok: false, format: 'iden3', checks: checks.list };
  }
  const vc = parsed.data;
  const bjj = proof.data;
  const credential = json as Record<string, unknown>;
  checks.pass('format', `W3C credential with a BJJSignature2021 proof, issuer ${vc.issuer}`);
  options.fetcher.addIssuerHost(new URL(vc.credentialStatus.id).host);

  let issuerKey: PublicKey | undefined;
  await checks.run(
    'issuer key',
    async () => {
      if (bjj.issuerData.id !== vc.issuer)
        refuse('ISSUER_MISMATCH', `proof issuerData.id is not ${vc.issuer}`);
      const auth = new Claim().fromHex(bjj.issuerData.authCoreClaim);
      if (auth.getSchemaHash().bigInt() !== SchemaHash.authSchemaHash.bigInt())
        refuse('ISSUER_AUTH_CLAIM', 'issuerData.authCoreClaim is not an auth claim');
      const { state } = bjj.issuerData;
      const roots = [state.claimsTreeRoot, state.revocationTreeRoot, state.rootOfRoots].map((h) =>
        Hash.fromHex(h),
      );
      const stateHash = identityStateHash(roots[0]!, roots[1]!, roots[2]!);
      if (stateHash.hex() !== state.value)
        refuse('ISSUER_STATE', 'issuerData.state.value is not the hash of its roots');
      const { hi, hv } = auth.hiHv();
      if (
        !(await verifyProof(roots[0]!, Proof.fromJSON(bjj.issuerData.mtp as ProofJSON), hi, hv)) ||
        !bjj.issuerData.mtp.existence
      )
        refuse('ISSUER_AUTH_CLAIM', 'the auth claim is not proven in issuerData.state.claimsTreeRoot');
      // Iden3 identity: the genesis identifier is derived from the genesis state (DID type kept).
      let did: DID;
      try {
        did = DID.parse(vc.issuer);
      } catch {
        return refuse('ISSUER_STATE', `${vc.issuer} is not an Iden3 DID`);
      }
      const type = DID.idFromDID(did).type();
      if (DID.newFromIdenState(type, stateHash.bigInt()).string() !== vc.issuer)
        refuse('ISSUER_STATE', `issuerData.state is not the genesis state of ${vc.issuer}`);
      const slots = auth.rawSlotsAsInts();
      issuerKey = new PublicKey([slots[2]!, slots[3]!]);
      return `the auth claim's BabyJubJub key, proven in the genesis state of ${vc.issuer}`;
    },
    'ISSUER_STATE',
  );

  await checks.run(
    'signature',
    async () => {
      if (!issuerKey) return refuse('SIGNATURE_INVALID', 'no issuer key to check the signature with');
      const loader = documentLoader(options, new URL(vc.credentialStatus.id).origin);
      let merklized: Awaited<ReturnType<typeof merklizeCredential>>;
      try {
        merklized = await merklizeCredential(credential, loader);
      } catch (err) {
        return refuse('CONTEXT_UNAVAILABLE', `cannot merklize the credential: ${(err as Error).message}`);
      }
      // The kit always sets an expiration; a claim without one would lack the expiration flag.
      if (!vc.expirationDate) return refuse('CORE_CLAIM_MISMATCH', 'no expirationDate');
      const claim = buildCoreClaim({
        schemaHash: schemaHashFromTypeIri(merklized.typeIri),
        subjectId: subjectIdFromDid(vc.credentialSubject.id),
        revocationNonce: BigInt(vc.credentialStatus.revocationNonce),
        expiresAt: new Date(vc.expirationDate),
        merklizedRoot: merklized.root,
      });
      if (claim.hex() !== bjj.coreClaim.toLowerCase())
        refuse(
          'CORE_CLAIM_MISMATCH',
          'the credential does not rebuild the core claim in its proof (content changed)',
        );
      let signature: Signature;
      try {
        signature = Signature.newFromCompressed(Buffer.from(bjj.signature, 'hex'));
      } catch {
        return refuse('SIGNATURE_INVALID', 'the signature is not a compressed BabyJubJub signature');
      }
      if (!issuerKey.verifyPoseidon(claimSignedMessage(claim), signature))
        refuse('SIGNATURE_INVALID', 'the BJJSignature2021 does not verify with the issuer key');
      return 'BJJSignature2021 over the core claim rebuilt from the credential';
    },
    'SIGNATURE_INVALID',
  );

  await checks.run(
    'validity',
    () => {
      if (vc.expirationDate && now.getTime() >= Date.parse(vc.expirationDate))
        refuse('EXPIRED', `expired at ${vc.expirationDate}`);
      if (vc.issuanceDate && now.getTime() + 60_000 < Date.parse(vc.issuanceDate))
        refuse('ISSUED_IN_FUTURE', `issued at ${vc.issuanceDate}, in the future`);
      return vc.expirationDate ? `valid until ${vc.expirationDate}` : 'no expiry';
    },
    'CLAIM_MALFORMED',
  );

  await checks.run(
    'status',
    async () => {
      await notRevoked(options.fetcher, vc.credentialStatus, 'REVOKED');
      if (bjj.issuerData.credentialStatus)
        await notRevoked(options.fetcher, bjj.issuerData.credentialStatus, 'ISSUER_KEY_REVOKED');
      return `nonce ${vc.credentialStatus.revocationNonce} is not in the revocation tree of ${vc.credentialStatus.id}`;
    },
    'STATUS_UNAVAILABLE',
  );

  const { id: _id, type: _type, ...claims } = vc.credentialSubject;
  return { ok: checks.ok, format: 'iden3', checks: checks.list, claims };
}

/** The answer's roots hash to its state, and its proof of the nonce verifies against the revocation root. */
async function notRevoked(
  fetcher: DocumentFetcher,
  entry: z.infer<typeof StatusEntrySchema>,
  revokedCode: string,
): Promise<void> {
  const answer = StatusAnswerSchema.safeParse(await fetcher.json(entry.id, 'STATUS_UNAVAILABLE'));
  if (!answer.success) return refuse('STATUS_INVALID', `${entry.id}: not a credential status answer`);
  const { issuer, mtp } = answer.data;
  const roots = [issuer.claimsTreeRoot, issuer.revocationTreeRoot, issuer.rootOfRoots].map((h) =>
    Hash.fromHex(h),
  );
  if (identityStateHash(roots[0]!, roots[1]!, roots[2]!).hex() !== issuer.state)
    refuse('STATUS_INVALID', `${entry.id}: the state is not the hash of its roots`);
  const nonce = BigInt(entry.revocationNonce);
  if (!(await verifyProof(roots[1]!, Proof.fromJSON(mtp as ProofJSON), nonce, 0n)))
    refuse('STATUS_INVALID', `${entry.id}: the proof does not verify against the revocation root`);
  if (mtp.existence)
    refuse(revokedCode, `revocation nonce ${entry.revocationNonce} is revoked (${entry.id})`);
}

/** The kit's local contexts and those of SCHEMAS_DIR; any other context is fetched. */
function documentLoader(
  options: Iden3VerifyOptions,
  origin: string,
): (url: string) => Promise<LoadedDocument> {
  const local = new LocalDocumentLoader();
  if (options.schemasDir && existsSync(options.schemasDir)) {
    try {
      for (const s of loadSchemas(options.schemasDir, new IssuerUrls(origin)).all())
        if (s.iden3) local.registerContext(s.iden3.contextUrl, options.schemasDir, s.iden3.contextFile);
    } catch {
      // Unreadable schemas leave only the shipped contexts; the rest are fetched.
    }
  }
  return async (url) => {
    try {
      return await local.load(url);
    } catch {
      return {
        contextUrl: undefined,
        documentUrl: url,
        document: await options.fetcher.json(url, 'CONTEXT_UNAVAILABLE'),
      };
    }
  };
}
