import type { CredentialFormat } from '../format.js';
import { SD_JWT_VC } from './names.js';
import { oid4vciConfiguration } from './oid4vci-configuration.js';
import { SdJwtVcIssuer } from './sd-jwt-vc-issuer.js';
import { verifySdJwtVc } from './verifier.js';

/** A compact SD-JWT (issuer JWT, then `~`-separated disclosures), RFC 9901 §4. */
const COMPACT_SD_JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*~/;

/**
 * SD-JWT VC (draft-ietf-oauth-sd-jwt-vc), ES256 with the issuer's rotating key: every channel
 * issues it; its status mechanism is the token status list (a slot per credential).
 */
export const sdJwtVc: CredentialFormat = {
  proofType: SD_JWT_VC,
  channels: ['hosted', 'direct', 'oid4vci'],
  async start(deps) {
    const issuer = new SdJwtVcIssuer(deps.identity, deps.vctIntegrity);
    return { issuer, close: async () => undefined };
  },
  describeSchema: (schema) => `vct ${schema.sdJwt.vct}`,
  oid4vci: { configuration: oid4vciConfiguration },
  verifier: {
    input: 'text',
    expects: 'a compact SD-JWT VC',
    recognizes: (input) => typeof input === 'string' && COMPACT_SD_JWT.test(input),
    verify: (input, options) => verifySdJwtVc(input as string, options),
  },
};
