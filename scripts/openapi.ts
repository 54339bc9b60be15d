// `npm run openapi [file]`: writes the OpenAPI 3.1 document of the route table (default
// openapi.json) for integrators, from a throwaway context (temporary keys and database).
// `npm run openapi -- --write-snapshot`: writes the committed contract snapshot
// (test/contract/openapi.json) in its fixed configuration (docs/operations.md "API contract and docs page").
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/config.js';
import { createContext } from '../src/context.js';
import { openApiDocument } from '../src/http/routes/index.js';
import { silentLogger } from '../src/observability/logger.js';
import { contractDocument, SNAPSHOT_FILE } from './openapi-contract.js';

if (process.argv[2] === '--write-snapshot') {
  writeFileSync(SNAPSHOT_FILE, `${JSON.stringify(await contractDocument(), null, 2)}\n`);
  console.log(`wrote ${SNAPSHOT_FILE}`);
} else {
  const out = process.argv[2] ?? 'openapi.json';
  const dir = mkdtempSync(join(tmpdir(), 'issuer-kit-openapi-'));
  try {
    const { config, secrets } = loadConfig({
      ...process.env,
      NODE_ENV: 'development',
      DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
      KEYS_DIR: join(dir, 'keys'),
      API_KEY: 'openapi',
      ADMIN_API_KEY: 'openapi-admin',
      PARTNER_ID: '00000000-0000-4000-8000-000000000000',
      SERVICE_V1_BASE_URL: 'http://127.0.0.1:9',
    });
    const ctx = await createContext(config, secrets, { log: silentLogger() });
    writeFileSync(out, `${JSON.stringify(openApiDocument(ctx), null, 2)}\n`);
    await ctx.close();
    console.log(`wrote ${out}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
