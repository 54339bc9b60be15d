// The committed snapshot of /openapi.json and the rule that guards it (docs/operations.md
// "API contract and docs page"): a breaking change needs a "Breaking" entry in CHANGELOG.md and a
// new major version; any other change only a deliberate update of the snapshot.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiCompare } from 'api-smart-diff';
import { loadConfig } from '../src/config/config.js';
import { createContext } from '../src/context.js';
import { openApiDocument } from '../src/http/routes/index.js';
import { silentLogger } from '../src/observability/logger.js';

export const SNAPSHOT_FILE = 'test/contract/openapi.json';
export const UPDATE_COMMAND = 'npm run openapi -- --write-snapshot';

/**
 * The document in one fixed configuration, whatever the environment: every optional route on
 * (OID4VCI, the Iden3 back-end and type metadata of the example schema), a fixed origin.
 */
export async function contractDocument(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'issuer-kit-openapi-'));
  try {
    const { config, secrets } = loadConfig({
      NODE_ENV: 'development',
      ISSUER_ORIGIN: 'https://issuer.example',
      DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
      KEYS_DIR: join(dir, 'keys'),
      SCHEMAS_DIR: 'schemas',
      API_KEY: 'openapi-contract-api-key-0123456789abcdef',
      ADMIN_API_KEY: 'openapi-contract-admin-key-0123456789abcd',
      PARTNER_ID: '00000000-0000-4000-8000-000000000000',
      SERVICE_V1_BASE_URL: 'http://127.0.0.1:9',
      OID4VCI: 'on',
    });
    const ctx = await createContext(config, secrets, { log: silentLogger() });
    try {
      return JSON.parse(JSON.stringify(openApiDocument(ctx))) as Record<string, unknown>;
    } finally {
      await ctx.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface ContractChange {
  /** JSON pointer-like path in the document. */
  path: string;
  description: string;
}

/**
 * The breaking changes from `before` to `after`: what api-smart-diff classifies as breaking (but an
 * enum value added), and
 * the changes it leaves unclassified that a client would still notice (a default changed).
 */
export function breakingChanges(before: object, after: object): ContractChange[] {
  const { diffs } = apiCompare(before, after);
  return diffs
    .filter(
      (d) =>
        // A value added to an enum of an answer (a new proof type in the history) is growth, as
        // docs/operations.md says: the library deems it breaking, a client only meets a new value.
        (d.type === 'breaking' && !(d.path.at(-2) === 'enum' && d.action === 'add')) ||
        // A changed default changes what a client that leaves the field out gets.
        (d.path.at(-1) === 'default' && d.action !== 'add') ||
        // A value no longer answered (or accepted) breaks a client that switches on it, and a
        // changed type one that reads it, wherever they are (the library deems both harmless in answers).
        (d.path.at(-2) === 'enum' && d.action === 'remove') ||
        (['type', 'const'].includes(String(d.path.at(-1))) && d.action !== 'add'),
    )
    .map((d) => ({
      path: d.path.join('/'),
      description: d.description ?? `${d.action} ${JSON.stringify(d.before)} → ${JSON.stringify(d.after)}`,
    }));
}

/** The major number of a semver version. */
export const major = (version: string): number => Number(/^(\d+)\./.exec(version)?.[1] ?? Number.NaN);

/**
 * Whether CHANGELOG.md's `## Unreleased` section has a "Breaking" entry (a `### Breaking` heading
 * or a line that starts with `Breaking` or `**Breaking`).
 */
export function unreleasedHasBreakingEntry(changelog: string): boolean {
  const unreleased = /^## Unreleased\b[^\n]*\n([\s\S]*?)(?=^## |$(?![\s\S]))/m.exec(changelog)?.[1] ?? '';
  return /^(#{3,4} Breaking\b|[-*] (\*\*)?Breaking\b|(\*\*)?Breaking\b)/m.test(unreleased);
}
