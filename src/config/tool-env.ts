import { z } from 'zod';

/**
 * Variables read by the commands, scripts and tests around the server (never by the server,
 * whose variables are `EnvSchema`). Listed here so docs/configuration.md documents them too;
 * each command parses its own. `readBy` names who reads it.
 */
const tool = (description: string, fallback: string, readBy: string) =>
  z.string().optional().meta({ description, default: fallback, readBy });

export const ToolEnvSchema = z.object({
  ISSUER_URL: tool(
    'Where the admin CLI and the demo reach the server (never `ISSUER_ORIGIN`, whose proxy may not forward admin routes).',
    'the `ADMIN_PORT` listener, else `http://localhost:$PORT`',
    '`npm run admin`, `npm run demo`, `npm run wallet`',
  ),
  KEY_ENCRYPTION_KEY_PREVIOUS: tool(
    'The `KEY_ENCRYPTION_KEY` being replaced (same format); never given to the server ([security.md](security.md#keys-shared-by-several-instances)).',
    'unset',
    '`npm run admin -- keys reseal`, `npm run admin -- doctor`',
  ),
  EMULATOR_URL: tool(
    'The emulator whose stored envelopes the demo reads.',
    'the one `npm start` wrote to `keys/dev-emulator.json`',
    '`npm run demo`',
  ),
  DEMO_USER_ID: tool('The user the demo asks credentials for.', '`demo-user-1`', '`npm run demo`'),
  DEMO_SCHEMA_ID: tool('The schema the demo asks for.', '`membership-v1`', '`npm run demo`'),
  EMULATOR_PORT: tool('Port of the standalone emulator.', '`4000`', '`npm run emulator`'),
  EMULATOR_HOST: tool('Address of the standalone emulator.', '`127.0.0.1`', '`npm run emulator`'),
  EMULATOR_JWKS_URL: tool(
    "Where the standalone emulator fetches the issuer's partner-JWT keys.",
    '`http://127.0.0.1:3000/.well-known/jwks.json`',
    '`npm run emulator`',
  ),
  BENCH_DATABASE_URL: tool(
    'The PostgreSQL server the bench creates its databases on.',
    '`postgres://postgres@127.0.0.1:5432/postgres`',
    '`npm run bench`',
  ),
  BENCH_CPU_PROF: tool(
    "A folder for the issuer's V8 CPU profile (the tenants bench: `single/` and `multi/` in it).",
    'unset',
    '`npm run bench`',
  ),
  BENCH_LOOP_FILE: tool(
    'Set by the bench for the issuer it starts, not by hand: where `scripts/bench/loop-probe.mjs` writes the issuer\'s event-loop delay and GC pauses (docs/benchmarks.md "The tail").',
    'unset',
    '`npm run bench`',
  ),
  BENCH_PIN: tool(
    '`0`: do not pin the issuer to its own CPU with `taskset` (docs/benchmarks.md "A fair bench").',
    'pinned when there are two CPUs or more and `taskset` is installed',
    '`npm run bench`',
  ),
  BENCH_SECONDS: tool('How long each hosted bench run lasts.', 'the section’s own', '`npm run bench`'),
  BENCH_WEBHOOK_ROUNDS: tool(
    'Rounds of windows without and with one webhook endpoint in the webhooks section (docs/benchmarks.md "Webhooks").',
    '`4`',
    '`npm run bench -- webhooks`',
  ),
  BENCH_SCALE_ROWS: tool(
    'Table sizes the scale section seeds, comma-separated.',
    '`10000,300000`',
    '`npm run bench -- scale`',
  ),
  BENCH_BULK_COUNT: tool(
    'Credentials the bulk section revokes in one job, on each engine.',
    '`50000`',
    '`npm run bench -- bulk`',
  ),
  BENCH_BULK_CRASH_COUNT: tool(
    'Credentials of the job the bulk-crash section SIGKILLs half-way and resumes in a second process, on each engine.',
    '`100000`',
    '`npm run bench -- bulk-crash`',
  ),
  BENCH_HISTORY_COUNT_ROWS: tool(
    'Issuances the history-count section seeds on SQLite before measuring hosted `/issue-vc` beside an admin reading page 1 with its total.',
    '`3000000`',
    '`npm run bench -- history-count`',
  ),
  BENCH_SEAMS_BASE: tool(
    "The commit the seams section runs beside this checkout (from this repository's history, with this checkout's `node_modules`).",
    '`292459f`',
    '`npm run bench -- seams`',
  ),
  BENCH_SEAMS_ROUNDS: tool(
    'Rounds of the seams section, made even: each round runs the base and this checkout once, the order flipped each round (ABBA).',
    '`4`',
    '`npm run bench -- seams`',
  ),
  BENCH_MERKLIZE_CREDENTIALS: tool(
    'Generated credentials the merklization equivalence section compares (the test compares the first 250).',
    '`1000`',
    '`npm run bench -- merklize-equivalence`',
  ),
  BENCH_TENANTS: tool(
    'Tenants the tenants section adds to its TENANCY=multi process, hosted issuance spread over them.',
    '`1000`',
    '`npm run bench -- tenants`',
  ),
  BENCH_TENANTS_ROUNDS: tool(
    'Rounds of the tenants section: each round one window on the single deployment and one on the tenants, the order flipped each round.',
    '`3`',
    '`npm run bench -- tenants`',
  ),
  BENCH_TENANTS_STORE: tool(
    'The engine of the tenants section: `sqlite` (a file per tenant) or `postgres` (a schema per tenant, on `BENCH_DATABASE_URL`; its backends’ CPU counted with the issuer’s).',
    '`sqlite`',
    '`npm run bench -- tenants`',
  ),
  BENCH_RENEWAL_COUNT: tool(
    'Direct credentials the renewal section issues, then has the renewal sweep renew.',
    '`300`',
    '`npm run bench -- renewal`',
  ),
  BENCH_SCALE_POSTGRES_ROWS: tool(
    'Table sizes the scale section seeds on PostgreSQL (`BENCH_DATABASE_URL`), comma-separated; empty for none.',
    '`300000`',
    '`npm run bench -- scale`',
  ),
  BENCH_CONSOLE_ROWS: tool(
    'Issuances the console section seeds before timing its pages.',
    '`1000000`',
    '`npm run bench -- console`',
  ),
  FLOOR_WITH: tool(
    "The kit's layers put back into the floor server (`express`, `sdjwt`, `store`, comma-separated).",
    'none',
    '`npm run bench -- floor`',
  ),
  TEST_DATABASE_URL: tool(
    'The PostgreSQL server tests create their databases on.',
    '`postgres://postgres@127.0.0.1:5432/postgres`',
    'tests',
  ),
  TEST_REDIS_URL: tool('The Redis server of the Redis tests.', '`redis://127.0.0.1:6379`', 'tests'),
  TEST_STORE: tool(
    '`postgres` runs every test issuer on a fresh PostgreSQL database instead of SQLite.',
    '`sqlite`',
    'tests',
  ),
  REQUIRE_SERVICES: tool(
    '`1` (CI): a test whose PostgreSQL, Redis or Chromium is missing fails instead of skipping.',
    'unset',
    'tests',
  ),
  MERKLIZE_CREDENTIALS: tool(
    'How many generated credentials the merklization equivalence test compares.',
    '`250`',
    'tests',
  ),
  DOCS_SCREENSHOT: tool('A file for a screenshot of `/docs` taken by the browser test.', 'unset', 'tests'),
});
