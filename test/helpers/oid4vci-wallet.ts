import {
  createHash,
  createPrivateKey,
  createPublicKey,
  type KeyObject,
  randomBytes,
  sign,
  verify,
  X509Certificate,
} from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type CallbackContext,
  clientAuthenticationAnonymous,
  clientAuthenticationClientAttestationJwt,
  HashAlgorithm,
  type Jwk,
  type JwtSignerJwk,
} from '@openid4vc/oauth2';
import { Openid4vciClient, setGlobalConfig } from '@openid4vc/openid4vci';
import { generateEncodedKeyPair } from '../../src/envelope/keys.js';

// Our test issuers are http on loopback; a wallet refuses http unless told otherwise.
setGlobalConfig({ allowInsecureUrls: true });

/** A P-256 key a wallet holds: its public JWK and a signer for the library's JWTs. */
export interface HolderKey {
  publicJwk: Jwk;
  privateKey: KeyObject;
  signer: JwtSignerJwk;
}

export function holderKey(): HolderKey {
  // Encoded by the generation itself: never export() a key generateKeyPairSync has just returned
  // (docs/dependencies.md, the Node 20 hang).
  const { spki, pkcs8 } = generateEncodedKeyPair('p256');
  const privateKey = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  const { kty, crv, x, y } = createPublicKey({ key: spki, format: 'der', type: 'spki' }).export({
    format: 'jwk',
  });
  const publicJwk = { kty: kty!, crv, x, y } as Jwk;
  return { publicJwk, privateKey, signer: { method: 'jwk', alg: 'ES256', publicJwk } };
}

/**
 * The wallet side of `@openid4vc/openid4vci` (the Openid4vciClient of the OpenWallet Foundation's
 * oid4vc-ts): the only code here is the crypto it asks its host for (ES256 with node:crypto).
 */
export function openid4vciWallet(
  keys: HolderKey[],
  fetchImpl?: typeof fetch,
  /** A wallet attestation (its cnf key among `keys`): the client authenticates with it. */
  clientAttestationJwt?: string,
  /** Given, the client asks for signed issuer metadata and checks it with this. */
  verifyJwt?: CallbackContext['verifyJwt'],
): Openid4vciClient {
  const signJwt: CallbackContext['signJwt'] = (signer, { header, payload }) => {
    if (signer.method !== 'jwk') throw new Error(`signer ${signer.method} not held by this wallet`);
    const key = keys.find((k) => k.publicJwk.x === signer.publicJwk.x);
    if (!key) throw new Error('unknown key');
    const input = `${b64(header)}.${b64(payload)}`;
    const signature = sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
    return { jwt: `${input}.${signature.toString('base64url')}`, signerJwk: signer.publicJwk };
  };
  const generateRandom: CallbackContext['generateRandom'] = (n) => randomBytes(n);
  return new Openid4vciClient({
    callbacks: {
      hash: (data, alg) => {
        if (alg !== HashAlgorithm.Sha256) throw new Error(`hash ${alg}`);
        return createHash('sha256').update(data).digest();
      },
      generateRandom,
      signJwt,
      clientAuthentication: clientAttestationJwt
        ? clientAuthenticationClientAttestationJwt({
            clientAttestationJwt,
            callbacks: { signJwt, generateRandom },
          })
        : clientAuthenticationAnonymous(),
      ...(fetchImpl ? { fetch: fetchImpl } : {}),
      ...(verifyJwt ? { verifyJwt } : {}),
    },
  });
}

/**
 * A wallet's check of a JWT signed by certificate: the `x5c` chain, each certificate issued and
 * signed by the next, the last by the CA it trusts, the leaf's key verifying the ES256 signature.
 */
export function x5cVerifier(caPem: string): CallbackContext['verifyJwt'] {
  const ca = new X509Certificate(caPem);
  return async (signer, jwt) => {
    if (signer.method !== 'x5c') return { verified: false };
    const chain = signer.x5c.map((c) => new X509Certificate(Buffer.from(c, 'base64')));
    const linked = chain.every((c, i) => {
      const next = chain[i + 1];
      return next ? c.verify(next.publicKey) : c.verify(ca.publicKey);
    });
    const [h, p, sig] = jwt.compact.split('.');
    const ok =
      linked &&
      verify(
        'sha256',
        Buffer.from(`${h}.${p}`),
        { key: chain[0]!.publicKey, dsaEncoding: 'ieee-p1363' },
        Buffer.from(sig!, 'base64url'),
      );
    return ok
      ? { verified: true, signerJwk: chain[0]!.publicKey.export({ format: 'jwk' }) as Jwk }
      : { verified: false };
  };
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Every step of the pre-authorized code flow, as a wallet runs it; the credential it received. */
export async function receiveWithOpenid4vci(
  offerUri: string,
  options: {
    txCode?: string;
    dpop?: HolderKey;
    holder?: HolderKey;
    fetch?: typeof fetch;
    /** A wallet attestation and the key it attests (the PoP's signer). */
    clientAttestation?: { jwt: string; key: HolderKey };
    /** A key attestation sent in the proof's `key_attestation` header. */
    keyAttestation?: string;
  } = {},
): Promise<{ credential: string; holder: HolderKey; configurationId: string }> {
  const holder = options.holder ?? holderKey();
  const keys = [
    holder,
    ...(options.dpop ? [options.dpop] : []),
    ...(options.clientAttestation ? [options.clientAttestation.key] : []),
  ];
  const wallet = openid4vciWallet(keys, options.fetch, options.clientAttestation?.jwt);
  const credentialOffer = await wallet.resolveCredentialOffer(offerUri);
  const issuerMetadata = await wallet.resolveIssuerMetadata(credentialOffer.credential_issuer);
  const { accessTokenResponse, dpop } = await wallet.retrievePreAuthorizedCodeAccessTokenFromOffer({
    credentialOffer,
    issuerMetadata,
    txCode: options.txCode,
    ...(options.dpop ? { dpop: { signer: options.dpop.signer } } : {}),
  });
  const { c_nonce } = await wallet.requestNonce({ issuerMetadata });
  const configurationId = credentialOffer.credential_configuration_ids[0]!;
  const { jwt } = await wallet.createCredentialRequestJwtProof({
    issuerMetadata,
    signer: holder.signer,
    nonce: c_nonce,
    credentialConfigurationId: configurationId,
    ...(options.keyAttestation ? { keyAttestationJwt: options.keyAttestation } : {}),
  });
  const { credentialResponse } = await wallet.retrieveCredentials({
    issuerMetadata,
    accessToken: accessTokenResponse.access_token,
    credentialConfigurationId: configurationId,
    proofs: { jwt: [jwt] },
    ...(dpop ? { dpop } : {}),
  });
  const first = credentialResponse.credentials?.[0];
  const credential =
    typeof first === 'object' && first !== null && 'credential' in first ? first.credential : undefined;
  if (typeof credential !== 'string')
    throw new Error(`no credential in ${JSON.stringify(credentialResponse)}`);
  return { credential, holder, configurationId };
}

/** A proof JWT signed by `key`, with whatever payload and header a test wants (a wallet free to get things wrong). */
export function proofJwt(
  key: HolderKey,
  payload: Record<string, unknown>,
  header: Record<string, unknown> = {},
): string {
  const input = `${b64({ alg: 'ES256', typ: 'openid4vci-proof+jwt', jwk: key.publicJwk, ...header })}.${b64(payload)}`;
  const signature = sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

const PRE_AUTHORIZED_CODE = 'urn:ietf:params:oauth:grant-type:pre-authorized_code';

/** An admin's offer of membership-v1 taken at the token endpoint (no DPoP): its access token. */
export async function offeredAccessToken(issuer: {
  url: string;
  admin(path: string, body?: unknown): Promise<Response>;
}): Promise<string> {
  const res = await issuer.admin('/admin/credential-offers', {
    schemaId: 'membership-v1',
    userId: 'demo-user-1',
  });
  if (res.status !== 201) throw new Error(`offer: ${res.status} ${await res.text()}`);
  const { credentialOffer } = (await res.json()) as {
    credentialOffer: { grants: Record<string, { 'pre-authorized_code': string }> };
  };
  const token = await fetch(`${issuer.url}/oid4vci/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: PRE_AUTHORIZED_CODE,
      'pre-authorized_code': credentialOffer.grants[PRE_AUTHORIZED_CODE]!['pre-authorized_code'],
    }).toString(),
  });
  if (token.status !== 200) throw new Error(`token: ${token.status} ${await token.text()}`);
  return ((await token.json()) as { access_token: string }).access_token;
}

/** A fresh c_nonce from the issuer's nonce endpoint. */
export async function freshNonce(issuerUrl: string): Promise<string> {
  const res = await fetch(`${issuerUrl}/oid4vci/nonce`, { method: 'POST' });
  return ((await res.json()) as { c_nonce: string }).c_nonce;
}

/** A schemas folder in `dir` with membership-v1 issued as SD-JWT VC only (no Iden3 back-end to start). */
export function sdJwtMembershipSchemas(dir: string): string {
  const schemas = join(dir, 'schemas');
  const schema = JSON.parse(readFileSync('schemas/membership-v1.json', 'utf8'));
  schema.proofTypes = ['SD_JWT_VC'];
  delete schema.iden3;
  mkdirSync(schemas, { recursive: true });
  writeFileSync(join(schemas, 'membership-v1.json'), JSON.stringify(schema));
  return schemas;
}
