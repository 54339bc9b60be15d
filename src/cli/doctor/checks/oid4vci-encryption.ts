import type { DoctorCheck } from '../doctor-context.js';
import { line } from '../line.js';

const item = 'oid4vci encryption';

/**
 * While the OpenID4VCI channel is on: its metadata offers `credential_response_encryption`, and
 * OpenID4VCI 1.0 (§12.2.4) asks for `credential_request_encryption` beside it, which only a key
 * file gives (a development start generates one); wallets that hold to the rule refuse metadata
 * with the first alone.
 */
export const oid4vciEncryption: DoctorCheck = {
  items: [item],
  run({ config }) {
    const { oid4vci } = config;
    if (!oid4vci.enabled) return [];
    if (oid4vci.requestEncryption)
      return [
        line(
          item,
          'PASS',
          `credential responses (${oid4vci.responseEncryption}) and requests (${oid4vci.requestEncryption.required ? 'required' : 'optional'}) may be encrypted`,
        ),
      ];
    return [
      line(
        item,
        'WARN',
        'the metadata offers credential_response_encryption without credential_request_encryption, which OpenID4VCI 1.0 asks for beside it: set OID4VCI_REQUEST_ENCRYPTION_KEY_FILE to a P-256 private key (PEM)',
      ),
    ];
  },
};
