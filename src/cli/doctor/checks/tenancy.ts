import type { DoctorCheck } from '../doctor-context.js';
import { line } from '../line.js';

/**
 * TENANCY=multi: the checks that follow are of one issuer (ISSUER_ORIGIN, KEYS_DIR, the
 * deployment's own database), not of the tenants, so the report says so first, as a WARN
 * (docs/several-issuers.md "The operator" shows each tenant's health).
 */
export const tenancy: DoctorCheck = {
  items: ['tenancy'],
  run: ({ config }) =>
    config.tenancy === 'multi'
      ? [
          line(
            'tenancy',
            'WARN',
            "TENANCY=multi: the items below check one issuer from this environment (ISSUER_ORIGIN, KEYS_DIR, DATABASE_URL's own namespace), not the tenants; each tenant's health: npm run admin -- tenants show <id>",
          ),
        ]
      : [],
};
