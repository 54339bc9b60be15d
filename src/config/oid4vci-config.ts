import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Env } from './env.js';

/** OID4VCI_PROFILE: `basic` (the default) or `haip` (OpenID4VC High Assurance Interoperability Profile 1.0). */
export const OID4VCI_PROFILES = ['basic', 'haip'] as const;
export type Oid4vciProfile = (typeof OID4VCI_PROFILES)[number];

/** The OpenID4VCI channel's settings (docs/configuration.md, docs/haip.md). */
export interface Oid4vciConfig {
  /** OID4VCI: the channel is open (on by default outside production). */
  enabled: boolean;
  /** OID4VCI_PROFILE. */
  profile: Oid4vciProfile;
  /** OID4VCI_REQUIRE_DPOP=1, or the `haip` profile. */
  requireDpop: boolean;
  /** OID4VCI_DPOP_NONCE, `required` under the `haip` profile. */
  dpopNonce: 'required' | 'off';
  /** OID4VCI_WALLET_TRUST: the PEM file of the wallet providers' trust anchors (absolute path). */
  walletTrust: string | undefined;
  /** OID4VCI_KEY_ATTESTATION_TRUST: the PEM file of the key attesters' trust anchors (absolute path). */
  keyAttestationTrust: string | undefined;
  /** OID4VCI_BATCH_SIZE: the most credentials (proofs) one credential request may ask for. */
  batchSize: number;
  /** OID4VCI_RESPONSE_ENCRYPTION: whether credential responses must be encrypted. */
  responseEncryption: 'optional' | 'required';
  /**
   * OID4VCI_REQUEST_ENCRYPTION_KEY_FILE (resolved; its secret is read at start) and
   * OID4VCI_REQUEST_ENCRYPTION: credential request encryption, absent when no key file is given.
   */
  requestEncryption: { keyFile: string; required: boolean } | undefined;
  /** OID4VCI_NOTIFICATIONS: the notification endpoint and ids (on by default). */
  notifications: boolean;
  /** OID4VCI_DEFERRED_SECONDS: how long a deferred credential's transaction waits. */
  deferredSeconds: number;
}

/**
 * Reads the OpenID4VCI settings. Under `haip` DPoP with server nonces is required; an explicit
 * setting that says otherwise is a contradiction, refused with a problem line, as is a trust file
 * that does not exist.
 */
export function readOid4vciConfig(
  env: Env,
  own: { production: boolean; cwd: string },
  problems: string[],
): Oid4vciConfig {
  const profile = env.OID4VCI_PROFILE ?? 'basic';
  const haip = profile === 'haip';
  if (haip && env.OID4VCI_REQUIRE_DPOP === '0')
    problems.push('OID4VCI_REQUIRE_DPOP: 0 contradicts OID4VCI_PROFILE=haip, which requires DPoP; remove it');
  if (haip && env.OID4VCI_DPOP_NONCE === 'off')
    problems.push(
      'OID4VCI_DPOP_NONCE: off contradicts OID4VCI_PROFILE=haip, which requires server-provided DPoP nonces; remove it',
    );
  const file = (name: string, value: string | undefined): string | undefined => {
    if (value === undefined) return undefined;
    const path = resolve(own.cwd, value);
    if (!existsSync(path)) problems.push(`${name}: ${path} does not exist (a PEM file of trust anchors)`);
    return path;
  };
  const requestKeyFile =
    env.OID4VCI_REQUEST_ENCRYPTION_KEY_FILE && resolve(own.cwd, env.OID4VCI_REQUEST_ENCRYPTION_KEY_FILE);
  if (requestKeyFile && !existsSync(requestKeyFile))
    problems.push(`OID4VCI_REQUEST_ENCRYPTION_KEY_FILE: no file ${requestKeyFile}`);
  if (env.OID4VCI_REQUEST_ENCRYPTION === 'required' && !requestKeyFile)
    problems.push('OID4VCI_REQUEST_ENCRYPTION: required needs OID4VCI_REQUEST_ENCRYPTION_KEY_FILE');
  return {
    enabled: (env.OID4VCI ?? (own.production ? 'off' : 'on')) === 'on',
    profile,
    requireDpop: haip || env.OID4VCI_REQUIRE_DPOP === '1',
    dpopNonce: haip ? 'required' : (env.OID4VCI_DPOP_NONCE ?? 'off'),
    walletTrust: file('OID4VCI_WALLET_TRUST', env.OID4VCI_WALLET_TRUST),
    keyAttestationTrust: file('OID4VCI_KEY_ATTESTATION_TRUST', env.OID4VCI_KEY_ATTESTATION_TRUST),
    batchSize: env.OID4VCI_BATCH_SIZE ?? 10,
    responseEncryption: env.OID4VCI_RESPONSE_ENCRYPTION ?? 'optional',
    requestEncryption: requestKeyFile
      ? { keyFile: requestKeyFile, required: env.OID4VCI_REQUEST_ENCRYPTION === 'required' }
      : undefined,
    notifications: (env.OID4VCI_NOTIFICATIONS ?? 'on') === 'on',
    deferredSeconds: env.OID4VCI_DEFERRED_SECONDS ?? 86_400,
  };
}
