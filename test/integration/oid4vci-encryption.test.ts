import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CompactEncrypt,
  calculateJwkThumbprint,
  compactDecrypt,
  decodeProtectedHeader,
  importJWK,
  type JWK,
} from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { queryStore, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import {
  freshNonce,
  holderKey,
  offeredAccessToken,
  proofJwt,
  sdJwtMembershipSchemas,
} from '../helpers/oid4vci-wallet.js';

/**
 * Credential response encryption on the OpenID4VCI door (OpenID4VCI 1.0 §10, docs/interface.md
 * "OpenID4VCI: the wallet door"): a wallet that names its key gets the credential response as a
 * compact JWE it decrypts with its own private key (`jose`, the same library any JS wallet uses);
 * a key or algorithm we do not offer is `invalid_encryption_parameters` and issues nothing; with
 * OID4VCI_RESPONSE_ENCRYPTION=required a request without encryption is refused.
 */

/** The wallet's encryption key pair (P-256, generated in the test). */
function walletEncryptionKey(crv: 'P-256' | 'P-384' = 'P-256') {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: crv });
  return { publicJwk: publicKey.export({ format: 'jwk' }) as JWK, privateKey };
}

describe('OpenID4VCI credential response encryption', () => {
  let issuer: TestIssuer;
  let strict: TestIssuer;
  beforeAll(async () => {
    const dir = tempDir();
    issuer = await startIssuer({ dir, env: { OID4VCI: 'on', SCHEMAS_DIR: sdJwtMembershipSchemas(dir) } });
    const strictDir = tempDir();
    strict = await startIssuer({
      dir: strictDir,
      env: {
        OID4VCI: 'on',
        OID4VCI_RESPONSE_ENCRYPTION: 'required',
        SCHEMAS_DIR: sdJwtMembershipSchemas(strictDir),
      },
    });
  });
  afterAll(async () => {
    await issuer?.close();
    await strict?.close();
  });

  const request = (at: TestIssuer, accessToken: string, body: Record<string, unknown>) =>
    fetch(`${at.url}/oid4vci/credential`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
      body: JSON.stringify(body),
    });
  const proofs = async (at: TestIssuer, n: number) => {
    const nonce = await freshNonce(at.url);
    const keys = Array.from({ length: n }, () => holderKey());
    const payload = { aud: at.url, iat: Math.floor(Date.now() / 1000), nonce };
    return { keys, proofs: { jwt: keys.map((k) => proofJwt(k, payload)) } };
  };
  const issued = async (at: TestIssuer) =>
    Number(
      (
        await queryStore<{ n: number | string }>(
          at.ctx.store,
          "SELECT COUNT(*) AS n FROM issuances WHERE channel = 'oid4vci'",
        )
      )[0]!.n,
    );

  it('advertises ECDH-ES with A128GCM and A256GCM; encryption_required follows the setting', async () => {
    const meta = async (at: TestIssuer) =>
      ((await (await fetch(`${at.url}/.well-known/openid-credential-issuer`)).json()) as Record<string, any>)
        .credential_response_encryption;
    expect(await meta(issuer)).toEqual({
      alg_values_supported: ['ECDH-ES'],
      enc_values_supported: ['A128GCM', 'A256GCM'],
      encryption_required: false,
    });
    expect((await meta(strict)).encryption_required).toBe(true);
  });

  it('a single credential and a batch, each answered as a JWE the wallet decrypts with its key', async () => {
    for (const [n, enc] of [
      [1, 'A256GCM'],
      [3, 'A128GCM'],
    ] as const) {
      const wallet = walletEncryptionKey();
      const { keys, proofs: p } = await proofs(issuer, n);
      const res = await request(issuer, await offeredAccessToken(issuer), {
        credential_configuration_id: 'membership-v1',
        proofs: p,
        credential_response_encryption: { jwk: { ...wallet.publicJwk, alg: 'ECDH-ES', kid: 'w1' }, enc },
      });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/jwt');
      const jwe = await res.text();
      expect(decodeProtectedHeader(jwe)).toMatchObject({ alg: 'ECDH-ES', enc, kid: 'w1' });
      const { plaintext } = await compactDecrypt(jwe, wallet.privateKey);
      const body = JSON.parse(new TextDecoder().decode(plaintext)) as {
        credentials: Array<{ credential: string }>;
      };
      expect(body.credentials).toHaveLength(n);
      for (const [i, { credential }] of body.credentials.entries()) {
        const verified = await verifySdJwtVc(issuer.url, credential);
        expect((verified.payload as Record<string, any>).cnf.jwk).toEqual(keys[i]!.publicJwk);
      }
    }
  });

  it('a key on another curve, a private key, another alg or enc, compression: invalid_encryption_parameters, nothing issued', async () => {
    const before = await issued(issuer);
    const accessToken = await offeredAccessToken(issuer);
    const good = walletEncryptionKey().publicJwk;
    const { privateKey } = walletEncryptionKey();
    for (const encryption of [
      { jwk: walletEncryptionKey('P-384').publicJwk, enc: 'A256GCM' },
      { jwk: privateKey.export({ format: 'jwk' }), enc: 'A256GCM' },
      { jwk: { ...good, alg: 'RSA-OAEP-256' }, enc: 'A256GCM' },
      { jwk: good, alg: 'ECDH-ES+A128KW', enc: 'A256GCM' },
      { jwk: good, enc: 'A128CBC-HS256' },
      { jwk: good, enc: 'A256GCM', zip: 'DEF' },
      { jwk: { ...good, x: good.y }, enc: 'A256GCM' },
    ]) {
      const res = await request(issuer, accessToken, {
        credential_configuration_id: 'membership-v1',
        proofs: (await proofs(issuer, 1)).proofs,
        credential_response_encryption: encryption,
      });
      const body = (await res.json()) as { error: string };
      expect({ status: res.status, error: body.error }, JSON.stringify(encryption)).toEqual({
        status: 400,
        error: 'invalid_encryption_parameters',
      });
    }
    expect(await issued(issuer)).toBe(before);
  });

  it('OID4VCI_RESPONSE_ENCRYPTION=required: a request without encryption is refused; with it, answered', async () => {
    const accessToken = await offeredAccessToken(strict);
    const plain = await request(strict, accessToken, {
      credential_configuration_id: 'membership-v1',
      proofs: (await proofs(strict, 1)).proofs,
    });
    expect(plain.status).toBe(400);
    expect(((await plain.json()) as { error: string }).error).toBe('invalid_encryption_parameters');
    expect(await issued(strict)).toBe(0);
    const wallet = walletEncryptionKey();
    const res = await request(strict, accessToken, {
      credential_configuration_id: 'membership-v1',
      proofs: (await proofs(strict, 1)).proofs,
      credential_response_encryption: { jwk: wallet.publicJwk, enc: 'A256GCM' },
    });
    expect(res.status).toBe(200);
    const { plaintext } = await compactDecrypt(await res.text(), wallet.privateKey);
    expect(JSON.parse(new TextDecoder().decode(plaintext)).credentials).toHaveLength(1);
  });
});

/**
 * Credential request encryption (OpenID4VCI 1.0 §10, §12.2.4 `credential_request_encryption`):
 * with OID4VCI_REQUEST_ENCRYPTION_KEY_FILE the metadata publishes the issuer's key; the wallet,
 * with `jose`, encrypts its credential request to it and sends it as `application/jwt`, asking for
 * an encrypted response too. A request to another key, or plain while required, is refused.
 */
describe('OpenID4VCI credential request encryption', () => {
  let issuer: TestIssuer;
  let plain: TestIssuer;
  beforeAll(async () => {
    const dir = tempDir();
    const keyFile = join(dir, 'request-encryption.pem');
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(keyFile, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
    issuer = await startIssuer({
      dir,
      env: {
        OID4VCI: 'on',
        OID4VCI_REQUEST_ENCRYPTION_KEY_FILE: keyFile,
        OID4VCI_REQUEST_ENCRYPTION: 'required',
        SCHEMAS_DIR: sdJwtMembershipSchemas(dir),
      },
    });
    const plainDir = tempDir();
    plain = await startIssuer({
      dir: plainDir,
      env: { OID4VCI: 'on', SCHEMAS_DIR: sdJwtMembershipSchemas(plainDir) },
    });
  });
  afterAll(async () => {
    await issuer?.close();
    await plain?.close();
  });

  const metadata = async (at: TestIssuer) =>
    (await (await fetch(`${at.url}/.well-known/openid-credential-issuer`)).json()) as Record<string, any>;
  const send = (at: TestIssuer, accessToken: string, body: string, type: string) =>
    fetch(`${at.url}/oid4vci/credential`, {
      method: 'POST',
      headers: { 'content-type': type, authorization: `Bearer ${accessToken}` },
      body,
    });
  /** The wallet's request, its proof and its key for the response, encrypted to `to` with jose. */
  async function encryptedRequest(at: TestIssuer, to: JWK & { kid?: string }, enc: 'A128GCM' | 'A256GCM') {
    const holder = holderKey();
    const nonce = await freshNonce(at.url);
    const wallet = walletEncryptionKey();
    const request = {
      credential_configuration_id: 'membership-v1',
      proofs: { jwt: [proofJwt(holder, { aud: at.url, iat: Math.floor(Date.now() / 1000), nonce })] },
      credential_response_encryption: { jwk: wallet.publicJwk, enc: 'A256GCM' },
    };
    const jwe = await new CompactEncrypt(new TextEncoder().encode(JSON.stringify(request)))
      .setProtectedHeader({ alg: 'ECDH-ES', enc, ...(to.kid ? { kid: to.kid } : {}) })
      .encrypt(await importJWK(to, 'ECDH-ES'));
    return { jwe, holder, wallet };
  }

  it('publishes the key in credential_request_encryption; absent without the setting', async () => {
    const offered = (await metadata(issuer)).credential_request_encryption;
    expect(offered).toEqual({
      jwks: { keys: [expect.objectContaining({ kty: 'EC', crv: 'P-256', use: 'enc', alg: 'ECDH-ES' })] },
      enc_values_supported: ['A128GCM', 'A256GCM'],
      encryption_required: true,
    });
    expect(offered.jwks.keys[0]).not.toHaveProperty('d');
    expect(offered.jwks.keys[0].kid).toBe(await calculateJwkThumbprint(offered.jwks.keys[0]));
    expect(await metadata(plain)).not.toHaveProperty('credential_request_encryption');
  });

  it('an encrypted request is served (the response encrypted to the wallet); a plain one is refused while required', async () => {
    const key = (await metadata(issuer)).credential_request_encryption.jwks.keys[0] as JWK & { kid: string };
    const before = await oid4vciIssued(issuer);
    const plainBody = JSON.stringify({ credential_configuration_id: 'membership-v1' });
    const refused = await send(issuer, await offeredAccessToken(issuer), plainBody, 'application/json');
    expect({ status: refused.status, error: ((await refused.json()) as { error: string }).error }).toEqual({
      status: 400,
      error: 'invalid_encryption_parameters',
    });

    const accessToken = await offeredAccessToken(issuer);
    // Encrypted to another key (the wallet's own): it does not decrypt here.
    const other = walletEncryptionKey();
    const wrong = await encryptedRequest(issuer, { ...other.publicJwk, kid: key.kid }, 'A128GCM');
    const misdirected = await send(issuer, accessToken, wrong.jwe, 'application/jwt');
    expect(misdirected.status).toBe(400);
    expect(((await misdirected.json()) as { error: string }).error).toBe('invalid_encryption_parameters');
    expect(await oid4vciIssued(issuer)).toBe(before);

    const { jwe, holder, wallet } = await encryptedRequest(issuer, key, 'A128GCM');
    const res = await send(issuer, accessToken, jwe, 'application/jwt');
    expect(res.status, await res.clone().text()).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/jwt');
    const { plaintext } = await compactDecrypt(await res.text(), wallet.privateKey);
    const body = JSON.parse(new TextDecoder().decode(plaintext)) as {
      credentials: Array<{ credential: string }>;
    };
    expect(body.credentials).toHaveLength(1);
    const verified = await verifySdJwtVc(issuer.url, body.credentials[0]!.credential);
    expect((verified.payload as Record<string, any>).cnf.jwk).toEqual(holder.publicJwk);
    expect(await oid4vciIssued(issuer)).toBe(before + 1);
  });

  it('an encrypted request where none is offered is refused', async () => {
    const someKey = walletEncryptionKey();
    const { jwe } = await encryptedRequest(plain, someKey.publicJwk, 'A256GCM');
    const res = await send(plain, await offeredAccessToken(plain), jwe, 'application/jwt');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_encryption_parameters');
  });
});

async function oid4vciIssued(at: TestIssuer): Promise<number> {
  const rows = await queryStore<{ n: number | string }>(
    at.ctx.store,
    "SELECT COUNT(*) AS n FROM issuances WHERE channel = 'oid4vci'",
  );
  return Number(rows[0]!.n);
}
