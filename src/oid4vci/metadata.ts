import { type AuthorizationServerMetadata, preAuthorizedCodeGrantIdentifier } from '@openid4vc/oauth2';
import {
  type CredentialConfigurationsSupported,
  type CredentialIssuerMetadata,
  type IssuerMetadataResult,
  Openid4vciVersion,
} from '@openid4vc/openid4vci';
import type { Oid4vciProfile } from '../config/oid4vci-config.js';
import type { CredentialFormat } from '../formats/format.js';
import { channelFormat, formatOf, formatsServing } from '../formats/index.js';
import type { IssuerCatalog, IssuerIdentity } from '../identity/issuer-identity.js';
import type { IssuanceCore } from '../issuance/issuance-core.js';
import type { ProofType } from '../model.js';
import type { LoadedSchema } from '../schemas/schema-registry.js';
import { responseEncryptionMetadata } from './encryption.js';
import type { KeyAttestationVerifier } from './key-attestation.js';
import { type ProtocolLibraries, SIGNING_ALGS } from './library.js';
import { type RequestDecryption, requestEncryptionMetadata } from './request-encryption.js';

/**
 * The channel's metadata (OpenID4VCI 1.0 §12.2, RFC 8414) and where each of its endpoints answers
 * (docs/interface.md "OpenID4VCI: the wallet door").
 */

/**
 * The format an offer is issued in unless it names another: its credential configuration's id is
 * the schema id. Another format's configuration of the same schema is `<schemaId>.<suffix>`
 * (`FormatOid4vci.configurationSuffix`: mdoc's is `mdoc`).
 */
export const PROOF_TYPE: ProofType = channelFormat('oid4vci');

/** OAuth 2.0 Attestation-Based Client Authentication's token endpoint auth method. */
const ATTESTATION_AUTH = 'attest_jwt_client_auth';

/** The credential configuration id of `schemaId` in `format`. */
export function configurationIdOf(schemaId: string, format: CredentialFormat): string {
  const suffix = format.proofType === PROOF_TYPE ? undefined : format.oid4vci?.configurationSuffix;
  return suffix ? `${schemaId}.${suffix}` : schemaId;
}

export interface ChannelMetadataDeps {
  /** The issuer whose metadata this is: its URLs, the schemas its catalogue offers. */
  identity: Pick<IssuerIdentity, 'urls'> & { readonly catalog: Pick<IssuerCatalog, 'schemas'> };
  core: IssuanceCore;
  libraries: ProtocolLibraries;
  profile: Oid4vciProfile;
  /** The token endpoint takes wallet attestations (client-attestation.ts). */
  clientAttestation: boolean;
  /** The proof types each configuration lists (key-attestation.ts). */
  keyAttestation: KeyAttestationVerifier;
  /** OID4VCI_BATCH_SIZE: advertised as `batch_credential_issuance` from 2 on. */
  batchSize?: number | undefined;
  /** The authorization code flow, when a login provider is configured (OID4VCI_LOGIN_ISSUER). */
  authorizationCode?: { requirePar: boolean; refreshTokens: boolean } | undefined;
  /** OID4VCI_RESPONSE_ENCRYPTION=required: advertised as `encryption_required`. */
  encryptionRequired?: boolean | undefined;
  /** OID4VCI_REQUEST_ENCRYPTION_KEY_FILE: advertised as `credential_request_encryption`. */
  requestDecryption?: RequestDecryption | undefined;
  /** OID4VCI_NOTIFICATIONS: the notification endpoint is published. */
  notifications: boolean;
}

export class ChannelMetadata {
  private readonly cache = new WeakMap<object, IssuerMetadataResult>();

  constructor(private readonly deps: ChannelMetadataDeps) {}

  private get origin(): string {
    return this.deps.identity.urls.origin;
  }

  /** Where each endpoint of the channel answers (docs/interface.md "OpenID4VCI: the wallet door"). */
  get endpoints() {
    const { urls } = this.deps.identity;
    return {
      token: urls.oid4vciToken,
      nonce: urls.oid4vciNonce,
      credential: urls.oid4vciCredential,
      deferredCredential: urls.oid4vciDeferredCredential,
      notification: urls.oid4vciNotification,
      offer: (offerId: string) => urls.oid4vciOffer(offerId),
    };
  }

  /** Whether `schema` is offered in `proofType` (the channel's default format unless given). */
  offers(schema: LoadedSchema, proofType: ProofType = PROOF_TYPE): boolean {
    return formatOf(proofType).channels.includes('oid4vci') && this.deps.core.issues(schema, proofType);
  }

  /** The proof type a credential configuration id issues (its format's). */
  proofTypeOf(configurationId: string, schemaId: string): ProofType {
    for (const format of formatsServing('oid4vci'))
      if (configurationIdOf(schemaId, format) === configurationId) return format.proofType;
    return PROOF_TYPE;
  }

  /**
   * RFC 8414 authorization server metadata: the pre-authorized code grant and its token endpoint;
   * `attest_jwt_client_auth` when wallet attestations are taken, the only method under `haip`; with
   * a login provider, also the authorization code grant (RFC 9126 PAR, PKCE S256, RFC 9207).
   */
  authorizationServer(): AuthorizationServerMetadata {
    const { profile, clientAttestation } = this.deps;
    const code = this.deps.authorizationCode;
    const { urls } = this.deps.identity;
    const haip = profile === 'haip';
    const methods = haip ? [ATTESTATION_AUTH] : clientAttestation ? ['none', ATTESTATION_AUTH] : ['none'];
    return this.deps.libraries.authorizationServer.createAuthorizationServerMetadata({
      issuer: this.origin,
      token_endpoint: this.endpoints.token,
      grant_types_supported: [
        preAuthorizedCodeGrantIdentifier,
        ...(code ? ['authorization_code'] : []),
        ...(code?.refreshTokens ? ['refresh_token'] : []),
      ],
      token_endpoint_auth_methods_supported: methods,
      'pre-authorized_grant_anonymous_access_supported': !haip,
      dpop_signing_alg_values_supported: SIGNING_ALGS,
      ...(code
        ? {
            authorization_endpoint: urls.oid4vciAuthorize,
            pushed_authorization_request_endpoint: urls.oid4vciPar,
            require_pushed_authorization_requests: code.requirePar,
            response_types_supported: ['code'],
            code_challenge_methods_supported: ['S256'],
            authorization_response_iss_parameter_supported: true,
            authorization_details_types_supported: ['openid_credential'],
            scopes_supported: this.offered().map((c) => c.configurationId),
          }
        : {}),
    });
  }

  /** Every credential configuration offered: its id, schema and format. */
  offered(): Array<{ configurationId: string; schema: LoadedSchema; proofType: ProofType }> {
    const out: Array<{ configurationId: string; schema: LoadedSchema; proofType: ProofType }> = [];
    for (const format of formatsServing('oid4vci'))
      for (const schema of this.deps.identity.catalog.schemas.all())
        if (this.offers(schema, format.proofType))
          out.push({
            configurationId: configurationIdOf(schema.schemaId, format),
            schema,
            proofType: format.proofType,
          });
    return out;
  }

  /**
   * OpenID4VCI 1.0 §12.2 credential issuer metadata, one credential configuration per offered
   * schema (its id is the schema id). Built once per schema set.
   */
  issuer(): IssuerMetadataResult {
    const set = this.deps.identity.catalog.schemas.entries();
    const cached = this.cache.get(set);
    if (cached) return cached;
    const { issuer } = this.deps.libraries;
    const configurations: CredentialConfigurationsSupported = {};
    for (const format of formatsServing('oid4vci'))
      for (const schema of this.deps.identity.catalog.schemas
        .all()
        .filter((s) => this.offers(s, format.proofType))) {
        const configuration = format.oid4vci!.configuration(schema, SIGNING_ALGS);
        const proofTypes = configuration.proof_types_supported as { jwt: Record<string, unknown> };
        configuration.proof_types_supported = this.deps.keyAttestation.proofTypes(schema, proofTypes.jwt);
        const id = configurationIdOf(schema.schemaId, format);
        // OpenID4VCI 1.0 §12.2.4: the scope that asks for it in an authorization request.
        if (this.deps.authorizationCode) configuration.scope = id;
        configurations[id] = configuration as CredentialConfigurationsSupported[string];
      }
    const credentialIssuer: CredentialIssuerMetadata = issuer.createCredentialIssuerMetadata({
      credential_issuer: this.origin,
      credential_endpoint: this.endpoints.credential,
      nonce_endpoint: this.endpoints.nonce,
      deferred_credential_endpoint: this.endpoints.deferredCredential,
      ...(this.deps.notifications ? { notification_endpoint: this.endpoints.notification } : {}),
      credential_configurations_supported: configurations,
      credential_response_encryption: responseEncryptionMetadata(this.deps.encryptionRequired ?? false),
      ...(this.deps.requestDecryption
        ? { credential_request_encryption: requestEncryptionMetadata(this.deps.requestDecryption) }
        : {}),
      // §12.2.4: batch_size is 2 or more; a request carrying more proofs than it is refused.
      ...((this.deps.batchSize ?? 1) >= 2
        ? { batch_credential_issuance: { batch_size: this.deps.batchSize! } }
        : {}),
    });
    const result: IssuerMetadataResult = {
      originalDraftVersion: Openid4vciVersion.V1,
      credentialIssuer,
      authorizationServers: [this.authorizationServer()],
      knownCredentialConfigurations: issuer.getKnownCredentialConfigurationsSupported(credentialIssuer),
    };
    this.cache.set(set, result);
    return result;
  }
}
