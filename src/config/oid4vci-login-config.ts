import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Env } from './env.js';

// OID4VCI_LOGIN_* and OID4VCI_REFRESH_TOKENS: the OpenID4VCI channel's authorization code flow
// and the OpenID Connect provider that signs the holder in (the profile is oid4vci-config.ts's).

/** The OpenID Connect provider the issuer signs holders in at, as its relying party. */
export interface Oid4vciLoginConfig {
  /** OID4VCI_LOGIN_ISSUER: the provider's issuer identifier. */
  issuer: string;
  clientId: string;
  /** OID4VCI_LOGIN_CLIENT_KEY_FILE (resolved), for `private_key_jwt`; its secret is read at start. */
  clientKeyFile?: string;
  /** OID4VCI_LOGIN_USER_CLAIM: the ID token claim that is the claims provider's user id. */
  userClaim: string;
}

export interface Oid4vciFlowConfig {
  /** OID4VCI_LOGIN_*: unset, the authorization code flow is not offered. */
  login?: Oid4vciLoginConfig;
  refreshTokens: boolean;
}

/** The settings and the client secret (a secret: kept apart from the config). */
export function readOid4vciFlow(
  env: Env,
  options: { production: boolean; cwd: string },
  problems: string[],
): { flow: Oid4vciFlowConfig; clientSecret: string | undefined } {
  const flow: Oid4vciFlowConfig = {
    refreshTokens: env.OID4VCI_REFRESH_TOKENS === '1',
  };
  const issuer = env.OID4VCI_LOGIN_ISSUER;
  if (issuer === undefined) {
    for (const name of [
      'OID4VCI_LOGIN_CLIENT_ID',
      'OID4VCI_LOGIN_CLIENT_SECRET',
      'OID4VCI_LOGIN_CLIENT_KEY_FILE',
      'OID4VCI_LOGIN_USER_CLAIM',
    ] as const)
      if (env[name] !== undefined) problems.push(`${name}: only with OID4VCI_LOGIN_ISSUER`);
    return { flow, clientSecret: undefined };
  }
  let url: URL | undefined;
  try {
    url = new URL(issuer);
  } catch {
    problems.push('OID4VCI_LOGIN_ISSUER: not a URL');
  }
  if (url && options.production && url.protocol !== 'https:')
    problems.push('OID4VCI_LOGIN_ISSUER: must be https in production');
  if (url && url.protocol !== 'https:' && url.protocol !== 'http:')
    problems.push('OID4VCI_LOGIN_ISSUER: must be http or https');
  const clientId = env.OID4VCI_LOGIN_CLIENT_ID;
  if (clientId === undefined) problems.push('OID4VCI_LOGIN_CLIENT_ID: required with OID4VCI_LOGIN_ISSUER');
  const keyFile =
    env.OID4VCI_LOGIN_CLIENT_KEY_FILE && resolve(options.cwd, env.OID4VCI_LOGIN_CLIENT_KEY_FILE);
  if (keyFile && !existsSync(keyFile)) problems.push(`OID4VCI_LOGIN_CLIENT_KEY_FILE: no file ${keyFile}`);
  if (keyFile && env.OID4VCI_LOGIN_CLIENT_SECRET !== undefined)
    problems.push('OID4VCI_LOGIN_CLIENT_SECRET: not with OID4VCI_LOGIN_CLIENT_KEY_FILE: give one of them');
  if (!keyFile && env.OID4VCI_LOGIN_CLIENT_SECRET === undefined)
    problems.push(
      'OID4VCI_LOGIN_CLIENT_SECRET: required with OID4VCI_LOGIN_ISSUER (or OID4VCI_LOGIN_CLIENT_KEY_FILE)',
    );
  flow.login = {
    issuer,
    clientId: clientId ?? '',
    ...(keyFile ? { clientKeyFile: keyFile } : {}),
    userClaim: env.OID4VCI_LOGIN_USER_CLAIM ?? 'sub',
  };
  return { flow, clientSecret: env.OID4VCI_LOGIN_CLIENT_SECRET };
}
