import type { Config, Secrets } from '../config/config.js';
import { consoleCheck } from './doctor/checks/console.js';
import { database } from './doctor/checks/database.js';
import { developmentState } from './doctor/checks/development-state.js';
import { didJson, jwksJson, jwtVcIssuer } from './doctor/checks/documents.js';
import { exampleSchema } from './doctor/checks/example-schema.js';
import { haip } from './doctor/checks/haip.js';
import { iden3Key } from './doctor/checks/iden3-key.js';
import { keyBackend } from './doctor/checks/key-backend.js';
import { keyFiles } from './doctor/checks/key-files.js';
import { keys } from './doctor/checks/keys.js';
import { mdocCertificates } from './doctor/checks/mdoc.js';
import { oid4vciEncryption } from './doctor/checks/oid4vci-encryption.js';
import { origin } from './doctor/checks/origin.js';
import { outbox } from './doctor/checks/outbox.js';
import { partnerJwt } from './doctor/checks/partner-jwt.js';
import { production } from './doctor/checks/production.js';
import { redis } from './doctor/checks/redis.js';
import { renewal } from './doctor/checks/renewal.js';
import { schemas } from './doctor/checks/schemas.js';
import { statusLists } from './doctor/checks/status-lists.js';
import { tenancy } from './doctor/checks/tenancy.js';
import { webhooks } from './doctor/checks/webhooks.js';
import { type DoctorCheck, type DoctorOptions, doctorContext } from './doctor/doctor-context.js';
import type { DoctorLine } from './doctor/line.js';

export { type DoctorOptions, HOUR_MS } from './doctor/doctor-context.js';
export type { DoctorLine, Verdict } from './doctor/line.js';

/**
 * `admin doctor`: the go-live check, as its checks in report order. It runs where the server runs,
 * with the server's environment (config read as the server reads it), reads the local keys,
 * schemas and database, and fetches the public documents from ISSUER_ORIGIN (or `--origin`) over
 * HTTP. Read-only: it never migrates, generates a key or writes a row. One file per check under
 * src/cli/doctor/checks/ (docs/operations.md lists the items).
 */
export const CHECKS: readonly DoctorCheck[] = [
  tenancy,
  production,
  origin,
  keys,
  keyBackend,
  keyFiles,
  developmentState,
  database,
  redis,
  iden3Key,
  mdocCertificates,
  didJson,
  jwtVcIssuer,
  jwksJson,
  statusLists,
  outbox,
  webhooks,
  schemas,
  renewal,
  exampleSchema,
  partnerJwt,
  consoleCheck,
  haip,
  oid4vciEncryption,
];

export async function runDoctor(
  config: Config,
  secrets: Secrets,
  options: DoctorOptions = {},
): Promise<DoctorLine[]> {
  const ctx = doctorContext(config, secrets, options);
  const lines: DoctorLine[] = [];
  try {
    for (const check of CHECKS) lines.push(...(await check.run(ctx)));
  } finally {
    await ctx.close();
  }
  return lines;
}
