import type { VerifyResult } from '../verify/check.js';
import { type Iden3VerifyOptions, isW3cCredential, verifyIden3Credential } from './iden3-bjj/verifier.js';
import { type SdJwtVcVerifyOptions, verifySdJwtVc } from './sd-jwt-vc/verifier.js';

export type { Check, VerifyResult } from '../verify/check.js';
export { DocumentFetcher } from '../verify/fetch-document.js';
export { trustAnchorsFromPem } from '../verify/issuer-keys.js';

export type VerifyOptions = SdJwtVcVerifyOptions & Iden3VerifyOptions;

/**
 * Verifies a credential as text: a compact SD-JWT VC (or a presentation of one), or the JSON of an
 * Iden3 W3C credential (`BJJ_SIG_2021`).
 */
export async function verifyCredential(text: string, options: VerifyOptions): Promise<VerifyResult> {
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) {
    let json: unknown;
    try {
      json = JSON.parse(trimmed);
    } catch {
      return unknown('the input starts with "{" but is not JSON');
    }
    if (isW3cCredential(json)) return verifyIden3Credential(json, options);
    return unknown('JSON, but not a W3C credential with a BJJSignature2021 proof');
  }
  if (/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*~/.test(trimmed))
    return verifySdJwtVc(trimmed, options);
  return unknown('neither a compact SD-JWT VC nor an Iden3 credential JSON');
}

function unknown(detail: string): VerifyResult {
  return {
    ok: false,
    format: 'unknown',
    checks: [{ check: 'format', ok: false, code: 'UNKNOWN_FORMAT', detail }],
  };
}
