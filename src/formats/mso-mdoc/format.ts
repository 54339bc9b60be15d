import type { CredentialFormat, StartedFormat } from '../format.js';
import { documentSignerCertificates } from './document-signer.js';
import { MdocIssuer } from './mdoc-issuer.js';
import { MSO_MDOC } from './names.js';
import { mdocConfiguration } from './oid4vci-configuration.js';
import { STATUS_LIST_CWT_MEDIA_TYPE, statusListCwt } from './status-list-cwt.js';
import { isIssuerSigned, verifyMdoc } from './verifier.js';

/** The path of the IACA certificate (PEM) a verifier of this issuer's mdocs trusts. */
export const MDOC_IACA_PATH = '/.well-known/mdoc-iaca.pem';

/**
 * ISO/IEC 18013-5 mdoc (`mso_mdoc`), signed by the issuer's ES256 key through its backend with a
 * document signer certificate; offered to standards wallets (OpenID4VCI), which hold the device
 * key. Its status mechanism is the token status list, also served as a CWT Status List Token.
 */
export const msoMdoc: CredentialFormat = {
  proofType: MSO_MDOC,
  channels: ['oid4vci'],
  // On when a schema lists it at start-up: in development that creates the IACA.
  async start(deps, schemas): Promise<StartedFormat | undefined> {
    if (!schemas.some((s) => s.proofTypes.includes(MSO_MDOC))) return undefined;
    const signingKey = () => deps.identity.keys.current().signing;
    const certificates = documentSignerCertificates({
      keysDir: deps.config.keysDir,
      origin: deps.identity.origin,
      development: !deps.config.production,
    });
    // Ready before the first request: the IACA exists and the current key has its certificate.
    if (!deps.config.production || signingKey().x5c) await certificates.signerFor(signingKey());
    const cwtCache = new Map<string, Promise<Uint8Array>>();
    return {
      issuer: new MdocIssuer(signingKey, certificates),
      certificates: () => certificates.describe(signingKey()),
      statusListForm: {
        mediaType: STATUS_LIST_CWT_MEDIA_TYPE,
        render(jwt) {
          let cwt = cwtCache.get(jwt);
          if (!cwt) {
            const key = signingKey();
            cwt = certificates
              .signerFor(key)
              .then((certificate) => statusListCwt(jwt, { sign: key.sign, kid: key.kid, certificate }));
            cwt.catch(() => cwtCache.delete(jwt));
            // One per list is enough: the newest token of each list is what is asked for.
            if (cwtCache.size > 256) cwtCache.clear();
            cwtCache.set(jwt, cwt);
          }
          return cwt;
        },
      },
      publicDocuments: [
        {
          path: MDOC_IACA_PATH,
          contentType: 'application/x-pem-file',
          summary: 'The IACA root certificate (PEM) of the issuer’s mdoc document signer',
          body: () => certificates.iacaPem(signingKey()),
        },
      ],
      close: async () => undefined,
    };
  },
  // The running loader's check: a reloaded set cannot turn the format on (its IACA and document
  // signer are readied at start-up), so a schema listing it then waits for a restart.
  schemaProblems(schemas, _schemasDir, running) {
    if (running) return [];
    return schemas
      .filter((s) => s.proofTypes.includes(MSO_MDOC))
      .map((s) => ({
        file: s.file,
        message: `proofTypes: ${MSO_MDOC} starts only when a schema lists it at start-up; restart the server to add it`,
      }));
  },
  describeSchema: (schema) => (schema.mdoc ? `docType ${schema.mdoc.docType}` : undefined),
  oid4vci: { configuration: mdocConfiguration, configurationSuffix: 'mdoc' },
  verifier: {
    input: 'text',
    expects: 'an ISO mdoc (base64url IssuerSigned)',
    recognizes: isIssuerSigned,
    verify: (input, options) => verifyMdoc(input as string, options),
  },
};
