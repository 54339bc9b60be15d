import { cborDecode, cborEncode, DataItem, Document, uint8ArrayToBase64Url } from '@animo-id/mdoc';
import { AppError } from '../../errors.js';
import type { ManagedKey } from '../../keys/key-ring.js';
import type { CredentialSchema } from '../../schemas/schema-file.js';
import type { IssuedCredential, IssueInput, Issuer } from '../issuer.js';
import type { DocumentSignerCertificates } from './document-signer.js';
import { mdocElements } from './elements.js';
import { mdocContext, type Sign1 } from './mdoc-context.js';
import { MSO_MDOC } from './names.js';

/**
 * ISO/IEC 18013-5 mdoc issuance with @animo-id/mdoc: the claims become issuer-signed items, the
 * holder's key the MSO's `deviceKeyInfo`, the schema's lifetime its `validityInfo`, and the MSO is
 * signed (COSE_Sign1, ES256) by the issuer's key backend with the document signer certificate in
 * `x5chain`. The credential is the base64url `IssuerSigned` structure (OpenID4VCI 1.0 Appendix
 * A.2.4). A token status list entry goes into the MSO as `status.status_list` (the Token Status
 * List's mdoc form), added before the one signature: the library builds the MSO without it.
 */
export class MdocIssuer implements Issuer {
  readonly proofType = MSO_MDOC;
  readonly usesStatusList = true;

  constructor(
    private readonly currentKey: () => ManagedKey,
    private readonly certificates: DocumentSignerCertificates,
  ) {}

  supports(schema: CredentialSchema): boolean {
    return schema.proofTypes.includes(MSO_MDOC) && schema.mdoc !== undefined;
  }

  async issue(input: IssueInput): Promise<IssuedCredential> {
    if (!input.holderJwk)
      throw new AppError('INVALID_PARAMETER', 'an mdoc binds a holder key (deviceKeyInfo): none was given', {
        field: 'holderKey',
      });
    const key = this.currentKey();
    const certificate = await this.certificates.signerFor(key);
    const { docType, namespace, values } = mdocElements(input.schema, input.claims);
    const renewal = input.schema.renewal;
    const status = input.status;
    const context = mdocContext(async (sign1) => {
      if (status) withStatus(sign1, { idx: status.idx, uri: status.uri });
      return key.sign(sign1.getRawSigningData().data);
    });
    const document = new Document(docType, context)
      .addIssuerNameSpace(namespace, values)
      .addValidityInfo({
        signed: input.issuedAt,
        validFrom: input.issuedAt,
        validUntil: input.expiresAt,
        ...(renewal
          ? { expectedUpdate: new Date(input.expiresAt.getTime() - renewal.beforeExpirySeconds * 1000) }
          : {}),
      })
      .addDeviceKeyInfo({ deviceKey: input.holderJwk })
      .useDigestAlgorithm('SHA-256');
    const signed = await document.sign(
      { issuerPrivateKey: key.publicJwk, issuerCertificate: certificate, alg: 'ES256', kid: key.kid },
      context,
    );
    const issuerSigned = signed.prepare().get('issuerSigned');
    return { credential: uint8ArrayToBase64Url(cborEncode(issuerSigned)), kid: key.kid };
  }
}

/** Puts `status: { status_list: { idx, uri } }` into the MSO a COSE_Sign1 is about to sign. */
function withStatus(sign1: Sign1, entry: { idx: number; uri: string }): void {
  const decoded = cborDecode(sign1.payload) as DataItem<Map<string, unknown>> | Map<string, unknown>;
  const mso = new Map(decoded instanceof DataItem ? decoded.data : decoded);
  mso.set(
    'status',
    new Map([
      [
        'status_list',
        new Map<string, unknown>([
          ['idx', entry.idx],
          ['uri', entry.uri],
        ]),
      ],
    ]),
  );
  // The library keeps the payload a plain field (cose/sign1.ts); its type marks it read-only.
  (sign1 as { payload: Uint8Array }).payload = cborEncode(DataItem.fromData(mso));
}
