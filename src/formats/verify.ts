import type { VerifyResult } from '../verify/check.js';
import type { VerifyOptions } from './format.js';
import { FORMATS } from './index.js';

export type { Check, VerifyResult } from '../verify/check.js';
export { DocumentFetcher } from '../verify/fetch-document.js';
export { trustAnchorsFromPem } from '../verify/issuer-keys.js';
export type { VerifyOptions } from './format.js';

/**
 * Verifies a credential as text with the verifier of the format it is: a compact serialization
 * (an SD-JWT VC, or a presentation of one) or a JSON document (an Iden3 W3C credential).
 */
export async function verifyCredential(text: string, options: VerifyOptions): Promise<VerifyResult> {
  const trimmed = text.trim();
  const json = trimmed.startsWith('{');
  let input: unknown = trimmed;
  if (json) {
    try {
      input = JSON.parse(trimmed);
    } catch {
      return unknown('the input starts with "{" but is not JSON');
    }
  }
  const candidates = FORMATS.filter((f) => (f.verifier.input === 'json') === json);
  const format = candidates.find((f) => f.verifier.recognizes(input));
  if (format) return format.verifier.verify(input, options);
  const expected = candidates.map((f) => f.verifier.expects).join(' or ');
  if (json) return unknown(`JSON, but not ${expected}`);
  return unknown(`neither ${FORMATS.map((f) => f.verifier.expects).join(' nor ')}`);
}

function unknown(detail: string): VerifyResult {
  return {
    ok: false,
    format: 'unknown',
    checks: [{ check: 'format', ok: false, code: 'UNKNOWN_FORMAT', detail }],
  };
}
