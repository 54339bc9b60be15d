import type { X509Certificate } from 'node:crypto';
import type { Config, Secrets } from '../config/config.js';
import type { IssuerIdentityBeforeCatalog } from '../identity/issuer-identity.js';
import type { Channel, Logger, ProofType } from '../model.js';
import type { CredentialSchema } from '../schemas/schema-file.js';
import type { SchemaFileProblem } from '../schemas/schema-registry.js';
import type { OpenedStore } from '../store/engines.js';
import type { IssuanceRecord, StatusChangeRequest } from '../store/store.js';
import type { VerifyResult } from '../verify/check.js';
import type { DocumentFetcher } from '../verify/fetch-document.js';
import type { Issuer } from './issuer.js';

/**
 * A credential format as one module (docs/architecture.md "How to add a credential format"): how
 * it issues, is offered, is revoked and is verified. `FORMATS` (src/formats/index.ts) lists them;
 * nothing else names a proof type.
 */
export interface CredentialFormat {
  /** Its published name: schema files' `proofTypes`, request bodies, stored rows, responses. */
  readonly proofType: ProofType;
  /**
   * The channels that issue it (docs/interface.md): `hosted` (the holder asks), `direct` (the
   * issuer sends; renewal re-issues those) and `oid4vci` (a standards wallet takes an offer).
   */
  readonly channels: readonly Channel[];
  /**
   * Start-up: the format's issuer and status mechanism over the shared parts, or `undefined` when
   * the format stays off for these schemas (Iden3 opens its identity only when a schema lists it).
   */
  start(deps: FormatStartDeps, schemas: readonly CredentialSchema[]): Promise<StartedFormat | undefined>;
  /**
   * The problems of a schema set (start-up or reload) with this format's block, found offline;
   * `running` is the started format, when on (a reloaded set cannot turn it on).
   */
  schemaProblems?(
    schemas: readonly CredentialSchema[],
    schemasDir: string,
    running: StartedFormat | undefined,
  ): SchemaFileProblem[];
  /** What `admin schemas validate` adds to a schema's line (SD-JWT VC: its vct). */
  describeSchema?(schema: CredentialSchema): string | undefined;
  /** How the OpenID4VCI channel offers it, when `channels` lists `oid4vci`. */
  readonly oid4vci?: FormatOid4vci | undefined;
  /** The relying party's checks (`admin verify`, the demo). */
  readonly verifier: FormatVerifier;
}

/** A format's part of the OpenID4VCI channel (OpenID for Verifiable Credential Issuance 1.0). */
export interface FormatOid4vci {
  /** The credential configuration of an offered schema (§12.2.4, the format's Appendix A profile). */
  configuration(schema: CredentialSchema, signingAlgs: readonly string[]): Record<string, unknown>;
  /**
   * The configuration id's suffix, `<schemaId>.<suffix>`, for a format beside the channel's default
   * (whose id is the schema id alone).
   */
  readonly configurationSuffix?: string;
}

/** The parts every format's start-up may use, built once by the context. */
export interface FormatStartDeps {
  config: Config;
  secrets: Pick<Secrets, 'keyEncryption'>;
  store: Pick<OpenedStore, 'keys' | 'iden3'>;
  /**
   * The issuer the format issues for: its origin and public URLs, its identification (`iss` and
   * JOSE header), and its keys (`keys.current().signing`, the ES256 key a rotation swaps).
   */
  identity: IssuerIdentityBeforeCatalog;
  /** The `vct#integrity` of a type the issuer serves as type metadata (read at issue time). */
  vctIntegrity: (vct: string) => string | undefined;
  log: Logger;
}

/** A started format: what the issuance core, the status service and the schema set reach. */
export interface StartedFormat {
  readonly issuer: Issuer;
  /**
   * A status mechanism besides the token status list (Iden3's revocation tree): a revocation goes
   * there first, and the record follows in the same commit.
   */
  readonly revoker?: FormatRevoker | undefined;
  /** Readies one schema of a (re)loaded set; throws what is wrong with its block. */
  prepareSchema?(schema: CredentialSchema): void;
  /**
   * Another form of each token status list, served on the list's URL to a request whose `Accept`
   * names `mediaType` (mdoc: the CWT Status List Token): built from the list's signed JWT form.
   */
  readonly statusListForm?: StatusListForm | undefined;
  /** The certificates it signs with, for `doctor` and the console (mdoc: IACA and document signer). */
  certificates?(): Array<{ role: string; subject: string; notAfter: Date }>;
  /** Public documents the format adds under the issuer's origin (mdoc: its IACA certificate). */
  readonly publicDocuments?: readonly FormatPublicDocument[] | undefined;
  /** Another identifier of this issuer (the did:web document's `alsoKnownAs`). */
  readonly alsoKnownAs?: string | undefined;
  close(): Promise<void>;
}

export interface StatusListForm {
  readonly mediaType: string;
  /** The list in this form, from its Status List Token JWT (cached by the caller per JWT). */
  render(jwt: string): Promise<Uint8Array>;
}

export interface FormatPublicDocument {
  /** Its path under the origin (`/.well-known/mdoc-iaca.pem`). */
  readonly path: string;
  readonly contentType: string;
  readonly summary: string;
  /** Its current content; undefined when there is none (404). */
  body(): string | undefined;
}

export interface FormatRevoker {
  /** One status change; the record after it, or `undefined` to apply it to the record alone. */
  one(record: IssuanceRecord, change: StatusChangeRequest): Promise<IssuanceRecord | undefined>;
  /** A bulk job's chunk: the nonces and their changes; how many it applied. */
  many(nonces: readonly number[], changes: StatusChangeRequest[]): Promise<number>;
}

/** What a relying party's check of any format may be given. */
export interface VerifyOptions {
  fetcher: DocumentFetcher;
  /** Certificates an `x5c` chain may end at (`--trust`). */
  trustAnchors?: X509Certificate[] | undefined;
  now?: Date | undefined;
  /** A key binding JWT must carry these (RFC 9901 §7.3). */
  nonce?: string | undefined;
  aud?: string | undefined;
  /** Where the schemas' JSON-LD context files are (SCHEMAS_DIR). */
  schemasDir?: string | undefined;
}

export interface FormatVerifier {
  /** `json`: the format's credentials are JSON documents; `text`: a compact serialization. */
  readonly input: 'json' | 'text';
  /** What the input would have to be, for the answer to input no format recognizes. */
  readonly expects: string;
  /** Whether `input` (the trimmed text, or its parsed JSON) is one of this format's credentials. */
  recognizes(input: unknown): boolean;
  verify(input: unknown, options: VerifyOptions): Promise<VerifyResult>;
}
