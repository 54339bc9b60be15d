import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { ConfigError } from '../../../src/config/env.js';
import { tempDir } from '../../helpers/tmp.js';

function problems(env: Record<string, string>, cwd = '/srv/issuer'): string[] {
  try {
    loadConfig(env, cwd);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  return [];
}

// docs/configuration.md OID4VCI_PROFILE, OID4VCI_WALLET_TRUST, OID4VCI_KEY_ATTESTATION_TRUST.
describe('OpenID4VCI settings', () => {
  it('basic by default, as before: DPoP optional, no nonces, no trust anchors', () => {
    expect(loadConfig({}, '/srv/issuer').config.oid4vci).toEqual({
      enabled: true,
      profile: 'basic',
      requireDpop: false,
      dpopNonce: 'off',
      walletTrust: undefined,
      keyAttestationTrust: undefined,
      batchSize: 10,
      // No login provider: no authorization code flow.
      refreshTokens: false,
      responseEncryption: 'optional',
      requestEncryption: undefined,
      notifications: true,
      deferredSeconds: 86_400,
    });
  });

  it('a login provider needs its client id and one client authentication', () => {
    const login = (env: Record<string, string>) => problems(env).filter((p) => p.startsWith('OID4VCI_'));
    expect(login({ OID4VCI_LOGIN_CLIENT_ID: 'kit' })).toEqual([
      'OID4VCI_LOGIN_CLIENT_ID: only with OID4VCI_LOGIN_ISSUER',
    ]);
    expect(login({ OID4VCI_LOGIN_ISSUER: 'https://login.example' })).toEqual([
      'OID4VCI_LOGIN_CLIENT_ID: required with OID4VCI_LOGIN_ISSUER',
      'OID4VCI_LOGIN_CLIENT_SECRET: required with OID4VCI_LOGIN_ISSUER (or OID4VCI_LOGIN_CLIENT_KEY_FILE)',
    ]);
    const { config, secrets } = loadConfig(
      {
        OID4VCI_LOGIN_ISSUER: 'https://login.example',
        OID4VCI_LOGIN_CLIENT_ID: 'kit',
        OID4VCI_LOGIN_CLIENT_SECRET: 'a-secret',
        OID4VCI_REFRESH_TOKENS: '1',
      },
      '/srv/issuer',
    );
    expect(config.oid4vci).toMatchObject({
      login: { issuer: 'https://login.example', clientId: 'kit', userClaim: 'sub' },
      refreshTokens: true,
    });
    // The secret is kept with the secrets, never in the config.
    expect(JSON.stringify(config)).not.toContain('a-secret');
    expect(secrets.oid4vciLoginClientSecret).toBe('a-secret');
  });

  it('OID4VCI_NOTIFICATIONS=off and OID4VCI_DEFERRED_SECONDS', () => {
    const { config } = loadConfig(
      { OID4VCI_NOTIFICATIONS: 'off', OID4VCI_DEFERRED_SECONDS: '3600' },
      '/srv/issuer',
    );
    expect(config.oid4vci).toMatchObject({ notifications: false, deferredSeconds: 3600 });
  });

  it('request encryption: on with its key file (resolved), required only with it, a missing file refused', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'request.pem'), 'not read here');
    const { config } = loadConfig(
      { OID4VCI_REQUEST_ENCRYPTION_KEY_FILE: 'request.pem', OID4VCI_REQUEST_ENCRYPTION: 'required' },
      dir,
    );
    expect(config.oid4vci.requestEncryption).toEqual({ keyFile: join(dir, 'request.pem'), required: true });
    const mine = (env: Record<string, string>) =>
      problems(env, dir).filter((p) => p.startsWith('OID4VCI_REQ'));
    expect(mine({ OID4VCI_REQUEST_ENCRYPTION: 'required' })).toEqual([
      'OID4VCI_REQUEST_ENCRYPTION: required needs OID4VCI_REQUEST_ENCRYPTION_KEY_FILE',
    ]);
    expect(mine({ OID4VCI_REQUEST_ENCRYPTION_KEY_FILE: 'absent.pem' })).toEqual([
      `OID4VCI_REQUEST_ENCRYPTION_KEY_FILE: no file ${join(dir, 'absent.pem')}`,
    ]);
  });

  it('haip requires DPoP with server nonces; trust files resolved against the working folder', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'wallets.pem'), '');
    const { oid4vci } = loadConfig(
      { OID4VCI_PROFILE: 'haip', OID4VCI_WALLET_TRUST: 'wallets.pem' },
      dir,
    ).config;
    expect(oid4vci).toMatchObject({
      profile: 'haip',
      requireDpop: true,
      dpopNonce: 'required',
      walletTrust: join(dir, 'wallets.pem'),
    });
  });

  it('refuses a setting that contradicts haip, a missing trust file and an unknown profile, one line each', () => {
    expect(
      problems({
        OID4VCI_PROFILE: 'haip',
        OID4VCI_REQUIRE_DPOP: '0',
        OID4VCI_DPOP_NONCE: 'off',
        OID4VCI_WALLET_TRUST: 'nowhere.pem',
        OID4VCI_KEY_ATTESTATION_TRUST: '/etc/nowhere.pem',
      }),
    ).toEqual([
      'OID4VCI_REQUIRE_DPOP: 0 contradicts OID4VCI_PROFILE=haip, which requires DPoP; remove it',
      'OID4VCI_DPOP_NONCE: off contradicts OID4VCI_PROFILE=haip, which requires server-provided DPoP nonces; remove it',
      'OID4VCI_WALLET_TRUST: /srv/issuer/nowhere.pem does not exist (a PEM file of trust anchors)',
      'OID4VCI_KEY_ATTESTATION_TRUST: /etc/nowhere.pem does not exist (a PEM file of trust anchors)',
    ]);
    expect(problems({ OID4VCI_PROFILE: 'strict' })).toEqual([
      'OID4VCI_PROFILE: OID4VCI_PROFILE must be basic or haip',
    ]);
  });
});
