import { afterAll } from 'vitest';
import { dropTestDatabases } from './issuer.js';

// Each test file drops the PostgreSQL databases its issuers used (TEST_STORE=postgres).
afterAll(dropTestDatabases);
