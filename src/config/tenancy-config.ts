import type { Env } from './env.js';
import { secretProblem } from './secret-strength.js';

/** TENANCY and OPERATOR_API_KEY (docs/several-issuers.md). */
export interface TenancyConfig {
  /** `multi`: the process serves the tenants of its registry, routed by `Host`. */
  mode: 'single' | 'multi';
  /** OPERATOR_API_KEY: kept apart from the config object with the other secrets. */
  operatorApiKey: string | undefined;
}

/**
 * The variables that make one issuer (its origin, its keys to the routes, its partner registration)
 * are each tenant's own under `TENANCY=multi`: the deployment does not require them then.
 */
const PER_ISSUER: ReadonlySet<string> = new Set([
  'ISSUER_ORIGIN',
  'API_KEY',
  'ADMIN_API_KEY',
  'PARTNER_ID',
  'SERVICE_V1_BASE_URL',
]);

export function readTenancy(
  env: Env,
  production: boolean,
  problems: string[],
): TenancyConfig & { requires: (name: string) => boolean } {
  const mode = env.TENANCY ?? 'single';
  const operatorApiKey = env.OPERATOR_API_KEY;
  if (mode === 'multi') {
    if (operatorApiKey === undefined && production)
      problems.push('OPERATOR_API_KEY: required in production with TENANCY=multi');
    const weak = operatorApiKey !== undefined && production ? secretProblem(operatorApiKey) : undefined;
    if (weak) problems.push(`OPERATOR_API_KEY: ${weak} in production`);
  }
  return { mode, operatorApiKey, requires: (name) => mode === 'single' || !PER_ISSUER.has(name) };
}
