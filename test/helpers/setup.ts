import { afterAll, afterEach } from 'vitest';
import { type ResponseMismatch, watchResponses } from '../../src/http/middleware/response-contract.js';
import { dropTestDatabases } from './issuer.js';

// Each test file drops the PostgreSQL databases its issuers used (TEST_STORE=postgres).
afterAll(dropTestDatabases);

// docs/operations.md "API contract and docs page": every answer an app of this process sends on a route of
// the table is checked against the route's description in /openapi.json; a mismatch fails the
// test that was running (or the file, when it came from a hook).
const mismatches: ResponseMismatch[] = [];
watchResponses((m) => mismatches.push(m));
const failOnMismatches = () => {
  if (mismatches.length === 0) return;
  const found = mismatches.splice(0);
  throw new Error(
    `${found.length} answer(s) do not match their route's description (src/http/routes: the row's doc.responses):\n${found
      .map((m) => `${m.route} → ${m.status}: ${m.problem}`)
      .join('\n')}`,
  );
};
afterEach(failOnMismatches);
afterAll(failOnMismatches);
