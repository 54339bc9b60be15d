import { X5cTrust } from '../../../oid4vci/x5c-trust.js';
import type { DoctorCheck } from '../doctor-context.js';
import { type DoctorLine, line } from '../line.js';

/**
 * OID4VCI_PROFILE=haip: every requirement of the high assurance profile the configuration does not
 * meet, each with the setting that fixes it (docs/haip.md). DPoP with server nonces is the
 * profile's own doing (a contradicting setting does not load), so it always passes.
 */
export const haip: DoctorCheck = {
  items: ['haip'],
  run({ config, identity }) {
    const { oid4vci } = config;
    if (oid4vci.profile !== 'haip') return [];
    const lines: DoctorLine[] = [];
    const fail = (detail: string) => lines.push(line('haip', 'FAIL', detail));
    if (!oid4vci.enabled) fail('the OpenID4VCI channel is off: set OID4VCI=on');
    if (!identity.origin.startsWith('https:'))
      fail(
        `ISSUER_ORIGIN ${identity.origin} is not https: HAIP's URLs are https; set an https ISSUER_ORIGIN`,
      );
    if (identity.mode !== 'x5c')
      fail(
        `SD_JWT_ISSUER=${identity.mode}: HAIP resolves the issuer's key through an x5c chain (credentials, status lists, signed metadata); set SD_JWT_ISSUER=x5c with a certificate chain for the signing key`,
      );
    const trust = (
      setting: 'OID4VCI_WALLET_TRUST' | 'OID4VCI_KEY_ATTESTATION_TRUST',
      file: string | undefined,
    ) => {
      const what =
        setting === 'OID4VCI_WALLET_TRUST'
          ? 'wallet attestations are required at the token endpoint'
          : 'key attestations (jwt proofs with key_attestation, and the attestation proof type) must be taken';
      if (file === undefined)
        return fail(`${what}: set ${setting} to a PEM file of the trusted certificates`);
      try {
        X5cTrust.fromFile(setting, file);
      } catch (err) {
        fail(`${what}: ${(err as Error).message}`);
      }
    };
    trust('OID4VCI_WALLET_TRUST', oid4vci.walletTrust);
    trust('OID4VCI_KEY_ATTESTATION_TRUST', oid4vci.keyAttestationTrust);
    if (!oid4vci.login)
      fail(
        'HAIP requires the authorization code flow (pushed authorization requests, PKCE S256): set OID4VCI_LOGIN_ISSUER, OID4VCI_LOGIN_CLIENT_ID and OID4VCI_LOGIN_CLIENT_SECRET (the OpenID Connect provider holders sign in at)',
      );
    if (lines.every((l) => l.verdict !== 'FAIL'))
      lines.unshift(
        line(
          'haip',
          'PASS',
          'OID4VCI_PROFILE=haip: wallet attestation and DPoP with server nonces required, wallet providers and key attesters trusted, x5c issuer, signed metadata, the authorization code flow with PAR',
        ),
      );
    return lines;
  },
};
