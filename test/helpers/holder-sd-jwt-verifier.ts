import { createPublicKey, verify as cryptoVerify } from 'node:crypto';
import { digest } from '@sd-jwt/crypto-nodejs';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { decodeProtectedHeader, type JWK } from 'jose';

/**
 * Holder/verifier side, for the tests: verifies an SD-JWT VC as a wallet would, with keys only
 * from the issuer's published `/.well-known/jwt-vc-issuer`, status lists fetched over HTTP, and
 * the library's own verify() (signature, disclosures, exp, status), independently of the kit's
 * own checks in src/verify/ and each format's verifier.ts (src/formats/).
 */
export async function verifySdJwtVc(
  issuerUrl: string,
  compact: string,
  options: {
    /**
     * Fetch the status lists from this origin instead of the one in the credential: a server
     * process whose ISSUER_ORIGIN is not an address the test can reach (it listens on port 0).
     */
    statusListsFrom?: string;
    /** How to reach the issuer (a tenant of a multi deployment is reached by its forwarded host). */
    fetch?: (url: string | URL) => Promise<Response>;
  } = {},
) {
  const get = options.fetch ?? fetch;
  const meta = (await (await get(`${issuerUrl}/.well-known/jwt-vc-issuer`)).json()) as {
    issuer: string;
    jwks: { keys: JWK[] };
  };
  const verifier = (data: string, signature: string) => {
    const { kid } = decodeProtectedHeader(`${data}.${signature}`);
    const jwk = meta.jwks.keys.find((k) => k.kid === kid);
    if (!jwk) return false;
    const key = createPublicKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' });
    return cryptoVerify(
      'sha256',
      Buffer.from(data),
      { key, dsaEncoding: 'ieee-p1363' },
      Buffer.from(signature, 'base64url'),
    );
  };
  const sdjwt = new SDJwtVcInstance({
    verifier,
    hasher: digest,
    statusListFetcher: async (uri: string) => {
      const at = new URL(uri);
      if (options.statusListsFrom) {
        const to = new URL(options.statusListsFrom);
        at.protocol = to.protocol;
        at.host = to.host;
      }
      const res = await get(at);
      if (res.status !== 200) throw new Error(`status list ${uri} answered ${res.status}`);
      return res.text();
    },
  });
  const result = await sdjwt.verify(compact);
  const claims = (await sdjwt.getClaims(compact)) as Record<string, unknown>;
  return { ...result, claims, header: decodeProtectedHeader(compact.split('~')[0]!), issuerMetadata: meta };
}
