import { performance } from 'node:perf_hooks';
import { AppError, invalidParameter } from '../../errors.js';
import type { IssuerUrls } from '../../identity/issuer-identity.js';
import type { CredentialSchema } from '../../schemas/schema-file.js';
import type { Iden3Store, IssuanceRecord, StatusChangeRequest } from '../../store/store.js';
import type { IssuedCredential, IssueInput, Issuer } from '../issuer.js';
import { type BjjKey, loadOrCreateBjjKey } from './bjj-key.js';
import {
  buildCoreClaim,
  claimSignedMessage,
  type MerklizedCredential,
  merklizeCredential,
  schemaHashFromTypeIri,
  subjectIdFromDid,
} from './core-claim.js';
import { DEFAULT_IDEN3_DID } from './did-type.js';
import {
  IDEN3_PROOFS_CONTEXT_URL,
  LocalDocumentLoader,
  type LocalDocumentLoaderFn,
  VC_2018_CONTEXT_URL,
} from './document-loader.js';
import { AUTH_CLAIM_REVOCATION_NONCE, Iden3Identity } from './identity.js';
import { type ContextSource, defaultMerklizeWorkers, MerklizeError, MerklizePool } from './merklize-pool.js';
import { BJJ_SIG_2021 } from './names.js';
import { type CredentialStatusAnswer, type Iden3StateJson, mtpJson, stateJson } from './state-json.js';
import { subjectTerms } from './subject-context.js';

export type { CredentialStatusAnswer, Iden3StateJson, MtpJson } from './state-json.js';
export { iden3ContextProblems } from './subject-context.js';

export interface Iden3BjjIssuerOptions {
  store: Iden3Store;
  /** The key already loaded (PostgreSQL: from the database); without it, read from `keysDir`. */
  key?: BjjKey | undefined;
  keysDir: string;
  /** Dev only (docs/configuration.md): create `KEYS_DIR/iden3-bjj.json` when missing. */
  generateKeyIfMissing: boolean;
  /** The issuer's public URLs: `credentialStatus.id` is `urls.credentialStatus(nonce)`. */
  urls: Pick<IssuerUrls, 'credentialStatus'>;
  schemasDir: string;
  /** IDEN3_METHOD, IDEN3_BLOCKCHAIN, IDEN3_NETWORK: defaults iden3 / privado / test. */
  didMethod?: string | undefined;
  blockchain?: string | undefined;
  network?: string | undefined;
  /** Only for a DID method / network js-iden3-core does not ship (see `resolveDidType`). */
  didMethodByte?: number | undefined;
  networkFlag?: number | undefined;
  /**
   * Worker threads that merklize credentials (`MerklizePool`); 0 merklizes on the calling thread.
   * Default: one per core, at most 8, none on a single core.
   */
  merklizeWorkers?: number | undefined;
}

/** Where one `issue` spent its time (scripts/bench). */
export interface IssueTimings {
  /** Merklizing the credential (in a worker, or on this thread without a pool). */
  merklizeMs: number;
  /** With a pool: waiting for a worker and passing messages; 0 without. */
  queueMs: number;
  /** Core claim, hIndex/hValue and the BabyJubJub signature. */
  signMs: number;
  totalMs: number;
}

const SPARSE_MERKLE_TREE_PROOF = 'SparseMerkleTreeProof';
/** js-sdk `VerifiableConstants.JSON_SCHEMA_VALIDATOR`, defined by the iden3proofs context. */
const JSON_SCHEMA_2023 = 'JsonSchema2023';
const BJJ_SIGNATURE_2021 = 'BJJSignature2021';
const RESERVED_SUBJECT_KEYS = new Set(['id', 'type', '@context', '@id', '@type']);

interface PreparedSchema {
  contextUrl: string;
  type: string;
  jsonSchemaUrl: string;
  /** How a merklize worker loads the context (the shipped ones it has already). */
  contextSource: ContextSource;
  /** Terms the context defines for the subject; `undefined` when an `@vocab` accepts any key. */
  terms: ReadonlySet<string> | undefined;
}

/**
 * The Iden3 BJJ back-end (docs/architecture.md): W3C credentials with a `BJJSignature2021` proof by
 * the issuer's BabyJubJub key, `SparseMerkleTreeProof` status backed by the persisted revocation tree.
 */
export class Iden3BjjIssuer implements Issuer {
  readonly proofType = BJJ_SIG_2021;
  readonly usesStatusList = false;
  /** The issuer DID (`did:iden3:privado:test:…` by default). */
  readonly did: string;
  /** Key id recorded with issuances: the DID is derived from this key, so it names the key. */
  readonly kid: string;
  /** The local JSON-LD loader (shipped contexts + the schemas' context files); nothing else loads. */
  readonly documentLoader: LocalDocumentLoaderFn;

  readonly #key: BjjKey;
  readonly #identity: Iden3Identity;
  readonly #urls: Pick<IssuerUrls, 'credentialStatus'>;
  readonly #schemasDir: string;
  readonly #loader: LocalDocumentLoader;
  readonly #prepared = new Map<string, PreparedSchema>();
  readonly #issuerData: Record<string, unknown>;
  readonly #pool: MerklizePool | undefined;

  private constructor(
    key: BjjKey,
    identity: Iden3Identity,
    urls: Pick<IssuerUrls, 'credentialStatus'>,
    schemasDir: string,
    merklizeWorkers: number,
  ) {
    this.#key = key;
    this.#pool = merklizeWorkers > 0 ? new MerklizePool(merklizeWorkers) : undefined;
    this.#identity = identity;
    this.#urls = urls;
    this.#schemasDir = schemasDir;
    this.#loader = new LocalDocumentLoader();
    this.documentLoader = this.#loader.load;
    this.did = identity.did.string();
    this.kid = `${this.did}#bjj`;
    // BJJSignature2021 issuerData (js-sdk IdentityWallet.issueCredential, issuer-node
    // ConstructSignProof): the auth claim, its inclusion proof and the state it was proven in (the
    // genesis state, which verifiers accept unpublished), and the auth claim's credentialStatus.
    const g = identity.genesis;
    this.#issuerData = {
      id: this.did,
      state: {
        claimsTreeRoot: g.claimsTreeRoot.hex(),
        revocationTreeRoot: g.revocationTreeRoot.hex(),
        rootOfRoots: g.rootOfRoots.hex(),
        value: g.state.hex(),
      },
      authCoreClaim: identity.authClaim.hex(),
      mtp: mtpJson(identity.authClaimMtp),
      credentialStatus: this.#credentialStatusEntry(AUTH_CLAIM_REVOCATION_NONCE),
    };
  }

  static async open(options: Iden3BjjIssuerOptions): Promise<Iden3BjjIssuer> {
    const key =
      options.key ??
      (await loadOrCreateBjjKey(options.keysDir, { generateIfMissing: options.generateKeyIfMissing }));
    const identity = await Iden3Identity.open(options.store, key, {
      method: options.didMethod ?? DEFAULT_IDEN3_DID.method,
      blockchain: options.blockchain ?? DEFAULT_IDEN3_DID.blockchain,
      network: options.network ?? DEFAULT_IDEN3_DID.network,
      methodByte: options.didMethodByte,
      networkFlag: options.networkFlag,
    });
    const workers = options.merklizeWorkers ?? defaultMerklizeWorkers();
    if (!Number.isInteger(workers) || workers < 0) {
      throw new Error('merklizeWorkers must be a non-negative integer');
    }
    return new Iden3BjjIssuer(key, identity, options.urls, options.schemasDir, workers);
  }

  /** Stops the merklize workers (idle ones never keep the process alive). */
  async close(): Promise<void> {
    await this.#pool?.close();
  }

  /** The JSON-LD document this back-end serves for a context URL, if any. */
  servedContext(url: string): unknown {
    return this.#loader.documentFor(url);
  }

  /** Compressed BabyJubJub public key, hex. */
  get publicKeyHex(): string {
    return this.#key.publicKeyHex;
  }

  supports(schema: CredentialSchema): boolean {
    return schema.iden3 !== undefined;
  }

  /**
   * Loads and checks the schema's JSON-LD context (`SCHEMAS_DIR/<contextFile>` defines `type`).
   * `issue` does it on first use; calling it at start-up turns a bad context file into a start-up
   * error naming the file.
   */
  prepareSchema(schema: CredentialSchema): void {
    this.#prepare(schema);
  }

  #prepare(schema: CredentialSchema): PreparedSchema {
    const block = schema.iden3;
    if (!block) {
      throw invalidParameter('schemaId', `schema ${schema.schemaId} has no iden3 block (${BJJ_SIG_2021})`);
    }
    const cached = this.#prepared.get(schema.schemaId);
    // A schema reload may change any of the block's fields under the same schemaId.
    if (
      cached &&
      cached.contextUrl === block.contextUrl &&
      cached.type === block.type &&
      cached.jsonSchemaUrl === block.jsonSchemaUrl &&
      cached.contextSource.contextFile === block.contextFile
    )
      return cached;
    const doc = this.#loader.registerContext(block.contextUrl, this.#schemasDir, block.contextFile);
    const prepared: PreparedSchema = {
      contextUrl: block.contextUrl,
      type: block.type,
      jsonSchemaUrl: block.jsonSchemaUrl,
      contextSource: { url: block.contextUrl, schemasDir: this.#schemasDir, contextFile: block.contextFile },
      terms: subjectTerms(doc, block.type, block.contextFile),
    };
    this.#prepared.set(schema.schemaId, prepared);
    return prepared;
  }

  #credentialStatusEntry(nonce: number) {
    return {
      id: this.#urls.credentialStatus(nonce),
      revocationNonce: nonce,
      type: SPARSE_MERKLE_TREE_PROOF,
    };
  }

  async issue(input: IssueInput): Promise<IssuedCredential> {
    return (await this.issueWithTimings(input)).issued;
  }

  /** `issue`, with where the time went (for scripts/bench). */
  async issueWithTimings(input: IssueInput): Promise<{ issued: IssuedCredential; timings: IssueTimings }> {
    const t0 = performance.now();
    const schema = this.#prepare(input.schema);
    const nonce = input.revocationNonce;
    if (!Number.isSafeInteger(nonce) || nonce < 0) {
      throw invalidParameter('revocationNonce', 'must be a non-negative integer below 2^53');
    }
    if (nonce === AUTH_CLAIM_REVOCATION_NONCE) {
      throw invalidParameter('revocationNonce', '0 is the revocation nonce of the issuer auth claim');
    }
    if (input.holderDid === this.did) {
      // The merklizer cannot encode a graph where one node is both issuer and subject.
      throw invalidParameter('holderDID', 'must not be the issuer DID');
    }
    let subjectId: ReturnType<typeof subjectIdFromDid>;
    try {
      subjectId = subjectIdFromDid(input.holderDid);
    } catch {
      throw invalidParameter('holderDID', 'not a DID');
    }
    for (const key of Object.keys(input.claims)) {
      // credentialSubject id and type are the kit's (as docs/schemas-and-claims.md reserves SD-JWT claims), and a key
      // the context does not define would not be in the merklized root, so not under the signature.
      if (RESERVED_SUBJECT_KEYS.has(key) || (schema.terms && !schema.terms.has(key))) {
        throw new AppError(
          'CLAIMS_INVALID',
          `credentialSubject.${key}: not a ${schema.type} term of ${schema.contextUrl}`,
          { field: `credentialSubject.${key}` },
        );
      }
    }

    // W3C VC 1.1 with Iden3's layout (js-sdk W3CCredential.fromCredentialRequest, issuer-node).
    const credential: Record<string, unknown> = {
      id: `urn:uuid:${input.credentialId}`,
      '@context': [VC_2018_CONTEXT_URL, IDEN3_PROOFS_CONTEXT_URL, schema.contextUrl],
      type: ['VerifiableCredential', schema.type],
      expirationDate: input.expiresAt.toISOString(),
      issuanceDate: input.issuedAt.toISOString(),
      credentialSubject: { id: input.holderDid, ...input.claims, type: schema.type },
      credentialStatus: this.#credentialStatusEntry(nonce),
      issuer: this.did,
      credentialSchema: { id: schema.jsonSchemaUrl, type: JSON_SCHEMA_2023 },
    };

    const t1 = performance.now();
    let merklizeMs: number;
    let merklized: MerklizedCredential;
    try {
      if (this.#pool) {
        const pooled = await this.#pool.merklize(credential, [schema.contextSource]);
        merklized = pooled;
        merklizeMs = pooled.ms;
      } else {
        merklized = await merklizeCredential(credential, this.documentLoader);
        merklizeMs = performance.now() - t1;
      }
    } catch (err) {
      // Claims that fit the JSON Schema but not the JSON-LD context's types (e.g. text for an
      // xsd:integer term) fail here: the claims are at fault, not the server.
      if (err instanceof MerklizeError || !this.#pool) {
        throw new AppError(
          'CLAIMS_INVALID',
          `claims do not fit the JSON-LD context of ${input.schema.schemaId}: ${(err as Error).message}`,
          {
            schemaId: input.schema.schemaId,
          },
        );
      }
      throw err;
    }
    const { root, typeIri } = merklized;
    const t2 = performance.now();

    const coreClaim = buildCoreClaim({
      schemaHash: schemaHashFromTypeIri(typeIri),
      subjectId,
      revocationNonce: BigInt(nonce),
      expiresAt: input.expiresAt,
      merklizedRoot: root,
    });
    // BJJSignature2021: EdDSA-Poseidon over Poseidon(hIndex, hValue) of the core claim.
    const signature = this.#key.signer.signCompressed(claimSignedMessage(coreClaim));
    const t3 = performance.now();

    credential.proof = [
      {
        type: BJJ_SIGNATURE_2021,
        issuerData: structuredClone(this.#issuerData),
        coreClaim: coreClaim.hex(),
        signature: Buffer.from(signature).toString('hex'),
      },
    ];
    const t4 = performance.now();
    return {
      issued: { credential, kid: this.kid },
      timings: { merklizeMs, queueMs: t2 - t1 - merklizeMs, signMs: t3 - t2, totalMs: t4 - t0 },
    };
  }

  /**
   * Revocation: inserts `nonce` into the revocation tree and records the new state;
   * `statusChange` (the issuance record's revocation) commits with it and comes back as `record`.
   * Revoking twice returns the current state (`alreadyRevoked`) and applies nothing.
   */
  async revoke(
    nonce: number,
    statusChange?: StatusChangeRequest,
  ): Promise<{ state: string; alreadyRevoked: boolean; record?: IssuanceRecord | undefined }> {
    checkNonce(nonce);
    if (nonce === AUTH_CLAIM_REVOCATION_NONCE) {
      throw invalidParameter('nonce', '0 is the revocation nonce of the issuer auth claim');
    }
    const { state, alreadyRevoked, record } = await this.#identity.revoke(BigInt(nonce), statusChange);
    return { state: state.state.hex(), alreadyRevoked, ...(record ? { record } : {}) };
  }

  /**
   * Revokes many credentials with one new state (a bulk status change); each of `statusChanges`
   * commits with it. Answers how many nonces entered the revocation tree.
   */
  async revokeMany(nonces: readonly number[], statusChanges: StatusChangeRequest[]): Promise<number> {
    for (const nonce of nonces) {
      checkNonce(nonce);
      if (nonce === AUTH_CLAIM_REVOCATION_NONCE)
        throw invalidParameter('nonce', '0 is the revocation nonce of the issuer auth claim');
    }
    return this.#identity.revokeMany(
      nonces.map((n) => BigInt(n)),
      statusChanges,
    );
  }

  /** docs/interface.md `GET /credential-status/:nonce`, from the latest state (nonce 0: the auth claim). */
  async credentialStatus(nonce: number): Promise<CredentialStatusAnswer> {
    checkNonce(nonce);
    const { state, proof } = await this.#identity.revocationProof(BigInt(nonce));
    return { issuer: stateJson(state), mtp: mtpJson(proof) };
  }

  async latestState(): Promise<Iden3StateJson> {
    return stateJson(await this.#identity.latestState());
  }

  genesisState(): Iden3StateJson {
    return stateJson(this.#identity.genesis);
  }

  /** Whether `stateHex` is a state this issuer has recorded (for a DID resolver of our states). */
  async hasState(stateHex: string): Promise<boolean> {
    return (await this.#identity.findState(stateHex)) !== undefined;
  }
}

function checkNonce(nonce: number): void {
  if (!Number.isSafeInteger(nonce) || nonce < 0) {
    throw invalidParameter('nonce', 'must be a non-negative integer below 2^53');
  }
}
