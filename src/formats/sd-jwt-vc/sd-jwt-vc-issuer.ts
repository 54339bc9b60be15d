import type { SdJwtVcPayload } from '@sd-jwt/sd-jwt-vc';
import type { SigningIdentity } from '../../identity/issuer-identity.js';
import type { CredentialSchema } from '../../schemas/schema-file.js';
import type { IssuedCredential, IssueInput, Issuer } from '../issuer.js';
import { issueSdJwtVc } from './assemble.js';
import { SD_JWT_VC } from './names.js';

/** Direct issuance's overrides (docs/interface.md "admin issue-vc"): `IssueInput.options`. */
export interface SdJwtVcIssueOptions {
  vct?: string | undefined;
  disclosureFrame?: Record<string, unknown> | undefined;
}

/** The `vct#integrity` of a type served as SD-JWT VC type metadata, if this issuer serves it. */
export type VctIntegrity = (vct: string) => string | undefined;

/**
 * SD-JWT VC draft: (`typ: dc+sd-jwt`) with ES256, assembled synchronously from the library's
 * own pieces (assemble.ts) and signed by the key's backend (node:crypto, or the PKCS#11 token).
 */
export class SdJwtVcIssuer implements Issuer {
  readonly proofType = SD_JWT_VC;
  readonly usesStatusList = true;

  /** `identity`: whose credentials these are (`iss`, JOSE header) and the key they are signed with now. */
  constructor(
    private readonly identity: SigningIdentity,
    private readonly vctIntegrity: VctIntegrity = () => undefined,
  ) {}

  supports(schema: CredentialSchema): boolean {
    return schema.proofTypes.includes(SD_JWT_VC);
  }

  async issue(input: IssueInput): Promise<IssuedCredential> {
    const key = this.identity.keys.current().signing;
    const options = (input.options ?? {}) as SdJwtVcIssueOptions;
    // The loader filled in a schema's default vct (docs/schemas-and-claims.md "The vct").
    const vct = options.vct ?? input.schema.sdJwt.vct;
    const payload: SdJwtVcPayload = {
      ...input.claims,
      iss: this.identity.identification.iss,
      sub: input.holderDid,
      vct,
      iat: Math.floor(input.issuedAt.getTime() / 1000),
      exp: Math.floor(input.expiresAt.getTime() / 1000),
      id: `urn:uuid:${input.credentialId}`,
    };
    // draft-ietf-oauth-sd-jwt-vc "Document Integrity": binds the credential to the served metadata.
    const integrity = this.vctIntegrity(vct);
    if (integrity) payload['vct#integrity'] = integrity;
    if (input.status) payload.status = { status_list: { idx: input.status.idx, uri: input.status.uri } };
    if (input.holderJwk) payload.cnf = { jwk: input.holderJwk };
    const frame = options.disclosureFrame ??
      input.schema.sdJwt?.disclosureFrame ?? {
        _sd: Object.keys(input.claims),
      };
    const credential = await issueSdJwtVc(payload, frame, {
      header: { ...this.identity.identification.header(key) },
      sign: key.sign,
    });
    return { credential, kid: key.kid };
  }
}
