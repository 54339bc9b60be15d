import type { JWK } from 'jose';

/**
 * The emulator's JWKS source for an issuer running as another process: its
 * /.well-known/jwks.json, read once and kept (the tests that use it rotate no partner key), with
 * no deadline of its own: on a busy machine the issuer may answer late, and the test's timeout
 * bounds the wait. A failed read is tried again at the next upload.
 */
export function issuerJwks(issuerUrl: () => string | undefined): () => Promise<{ keys: JWK[] }> {
  let jwks: Promise<{ keys: JWK[] }> | undefined;
  return () => {
    if (!jwks) {
      const url = issuerUrl();
      if (!url) return Promise.reject(new Error('the issuer is not listening yet'));
      const asked = fetch(`${url}/.well-known/jwks.json`).then(async (res) => {
        if (!res.ok) throw new Error(`${url}/.well-known/jwks.json answered ${res.status}`);
        return (await res.json()) as { keys: JWK[] };
      });
      jwks = asked;
      asked.catch(() => {
        if (jwks === asked) jwks = undefined;
      });
    }
    return jwks;
  };
}
