import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { calculateJwkThumbprint, compactDecrypt, exportJWK, type JWK } from 'jose';
import { RESPONSE_ENCRYPTION_ENCS } from './encryption.js';
import { invalidEncryptionParameters } from './errors.js';

/**
 * Credential request encryption (OpenID4VCI 1.0 §10, §12.2.4 `credential_request_encryption`):
 * the issuer publishes a P-256 key; a wallet may send its credential request as a compact JWE
 * (`application/jwt`, ECDH-ES with A128GCM or A256GCM) encrypted to it, which `jose` decrypts
 * back into the JSON request. Offered only when the operator gives the key
 * (OID4VCI_REQUEST_ENCRYPTION_KEY_FILE).
 */
export interface RequestDecryption {
  key: KeyObject;
  /** The public key as published: `kid` (its RFC 7638 thumbprint), `use: enc`, `alg: ECDH-ES`. */
  publicJwk: JWK;
  /** OID4VCI_REQUEST_ENCRYPTION=required: an unencrypted request is refused. */
  required: boolean;
}

/**
 * Reads the key file at start (or the key itself, `pem`, a tenant's own: `keyFile` then says where
 * it came from); a key that is not a P-256 private key stops the start, naming the setting.
 */
export async function loadRequestDecryption(
  { keyFile, required }: { keyFile: string; required: boolean },
  pem?: string,
): Promise<RequestDecryption> {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem ?? readFileSync(keyFile, 'utf8'));
  } catch (err) {
    throw new Error(
      `OID4VCI_REQUEST_ENCRYPTION_KEY_FILE: ${keyFile} is not a PEM private key (${(err as Error).message})`,
    );
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
    throw new Error(`OID4VCI_REQUEST_ENCRYPTION_KEY_FILE: ${keyFile} must hold a P-256 (EC) private key`);
  const { kty, crv, x, y } = await exportJWK(createPublicKey(key));
  const publicJwk: JWK = { kty, crv, x, y };
  return {
    key,
    publicJwk: { ...publicJwk, kid: await calculateJwkThumbprint(publicJwk), use: 'enc', alg: 'ECDH-ES' },
    required,
  };
}

/** §12.2.4 `credential_request_encryption` of the credential issuer metadata. */
export const requestEncryptionMetadata = (d: RequestDecryption) => ({
  jwks: { keys: [d.publicJwk] },
  enc_values_supported: [...RESPONSE_ENCRYPTION_ENCS],
  encryption_required: d.required,
});

/**
 * The credential request as JSON: the body as it came, or the encrypted one decrypted. An
 * encrypted request where none is offered, one that does not decrypt with our key, names
 * another key or carries no JSON object, or a plain one while encryption is required, is
 * `invalid_encryption_parameters` (§8.3.1.2), before anything is issued.
 */
export async function credentialRequestBody(
  decryption: RequestDecryption | undefined,
  body: Record<string, unknown>,
  encrypted: string | undefined,
): Promise<Record<string, unknown>> {
  if (encrypted === undefined) {
    if (decryption?.required)
      throw invalidEncryptionParameters(
        'this issuer requires the credential request encrypted (application/jwt)',
      );
    return body;
  }
  if (!decryption) throw invalidEncryptionParameters('this issuer offers no credential request encryption');
  let plaintext: Uint8Array;
  try {
    const { plaintext: bytes, protectedHeader } = await compactDecrypt(encrypted.trim(), decryption.key, {
      keyManagementAlgorithms: ['ECDH-ES'],
      contentEncryptionAlgorithms: [...RESPONSE_ENCRYPTION_ENCS],
    });
    if (protectedHeader.kid !== undefined && protectedHeader.kid !== decryption.publicJwk.kid)
      throw new Error('kid');
    plaintext = bytes;
  } catch {
    throw invalidEncryptionParameters(
      'the credential request does not decrypt with the key of credential_request_encryption (ECDH-ES, A128GCM or A256GCM, its kid)',
    );
  }
  let request: unknown;
  try {
    request = JSON.parse(new TextDecoder().decode(plaintext));
  } catch {
    request = undefined;
  }
  if (typeof request !== 'object' || request === null || Array.isArray(request))
    throw invalidEncryptionParameters('the decrypted credential request is not a JSON object');
  return request as Record<string, unknown>;
}
