import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { expectError } from '../helpers/errors.js';
import { removeDir, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

// docs/operations.md "Database unreachable": a database that does not answer (a silent network
// partition, a refused connection, a locked SQLite file) answers 503 UNAVAILABLE within the
// configured bounds, never 502 or 500, and the service recovers by itself. Every answer below is
// awaited while the fault is still in place, so a request that hung for as long as the fault
// lasted would fail the test by its timeout: no wall-clock assertion is needed.

const available = await postgresAvailable('the database outage tests');
const KEK = 'b2'.repeat(32);
/** An address or port in a public body would tell a caller about the network behind the issuer. */
const INTERNALS = /127\.0\.0\.1|localhost|ECONN|:\d{2,5}\b/;

const holder = generateHolderKeyPair('x25519');
let userCount = 0;
/** A fresh hosted issuance (a new holder each time, so it writes rather than finding a repeat). */
function issue(issuer: TestIssuer, userId = 'demo-user-1'): Promise<Response> {
  userCount += 1;
  return issuer.post('/issue-vc', {
    holderDID: `did:example:outage-${userCount}`,
    pubKey: holder.publicKeyHex,
    userId,
    schemaId: 'membership-v1',
    proofType: 'SD_JWT_VC',
  });
}

async function expectUnavailable(res: Response): Promise<void> {
  const text = await res.clone().text();
  await expectError(res, 503, 'UNAVAILABLE');
  expect(text).not.toMatch(INTERNALS);
}

async function expectNotReady(issuer: TestIssuer): Promise<void> {
  const res = await fetch(`${issuer.url}/readyz`);
  const text = await res.text();
  expect(res.status).toBe(503);
  const body = JSON.parse(text) as { status: string; checks: { database: unknown } };
  expect(body).toMatchObject({
    status: 'not_ready',
    checks: { database: { ok: false, error: 'unavailable' } },
  });
  expect(text).not.toMatch(INTERNALS);
}

describe.skipIf(!available)('PostgreSQL behind a cuttable proxy', () => {
  let db: TempDatabase;
  const proxies: TcpProxy[] = [];
  const dirs: string[] = [];

  /** An issuer whose DATABASE_URL goes through a fresh proxy in front of the test database. */
  async function issuerThroughProxy(bounds: Record<string, string>) {
    const target = new URL(db.url);
    const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    proxies.push(proxy);
    const dir = tempDir();
    dirs.push(dir);
    const issuer = await startIssuer({
      dir,
      env: { DATABASE_URL: proxy.url(db.url), KEY_ENCRYPTION_KEY: KEK, ...bounds },
    });
    return { issuer, proxy };
  }
  const SHORT_BOUNDS = {
    DATABASE_CONNECT_TIMEOUT_MS: '500',
    DATABASE_QUERY_TIMEOUT_MS: '1000',
    DATABASE_ACQUIRE_TIMEOUT_MS: '1500',
  };

  beforeAll(async () => {
    db = await createTempDatabase();
  });
  afterAll(async () => {
    for (const proxy of proxies) {
      proxy.heal();
      await proxy.close();
    }
    await db?.drop();
    for (const dir of dirs) removeDir(dir);
  });

  it('a silent partition answers 503 within the bounds and heals without a restart', async () => {
    const { issuer, proxy } = await issuerThroughProxy(SHORT_BOUNDS);
    try {
      expect((await issue(issuer)).status).toBe(201);

      proxy.cut();
      // Pooled connections hold their queries unanswered; new ones never get the server's greeting.
      const [issued, history] = await Promise.all([issue(issuer), issuer.admin('/admin/issuance-history')]);
      await expectUnavailable(issued);
      await expectUnavailable(history);
      await expectNotReady(issuer);
      // Still cut: a second wave meets connections being opened, not only the pooled ones.
      await expectUnavailable(await issue(issuer, 'demo-user-2'));

      proxy.heal();
      expect((await issue(issuer)).status).toBe(201);
      expect((await issuer.admin('/admin/issuance-history')).status).toBe(200);
      expect((await fetch(`${issuer.url}/readyz`)).status).toBe(200);
    } finally {
      await issuer.close();
    }
  });

  it("a reset and refused database is 503 naming no address, not the claims source's 502", async () => {
    const { issuer, proxy } = await issuerThroughProxy(SHORT_BOUNDS);
    try {
      expect((await issue(issuer)).status).toBe(201);
      // Every connection reset, then the listener gone: ECONNRESET, then ECONNREFUSED. The claims
      // lookup (the built-in table) is the first to meet it: the database, not the claims source.
      proxy.reset();
      await proxy.close();
      await expectUnavailable(await issue(issuer));
      await expectUnavailable(await issuer.admin('/admin/issuance-history'));
      await expectNotReady(issuer);
    } finally {
      await issuer.close();
    }
  });

  it('/readyz answers 503 on its own short bound while requests still wait on theirs', async () => {
    // Bounds far longer than the test's timeout: only the probe's own bound can answer in time.
    const { issuer, proxy } = await issuerThroughProxy({
      DATABASE_QUERY_TIMEOUT_MS: '600000',
      DATABASE_ACQUIRE_TIMEOUT_MS: '600000',
      DATABASE_CONNECT_TIMEOUT_MS: '600000',
    });
    try {
      expect((await fetch(`${issuer.url}/readyz`)).status).toBe(200);
      proxy.cut();
      await expectNotReady(issuer);
      await expectNotReady(issuer);
      proxy.heal();
      // The probes' abandoned queries are answered once the partition heals; readiness is back.
      expect((await fetch(`${issuer.url}/readyz`)).status).toBe(200);
      expect((await issue(issuer)).status).toBe(201);
    } finally {
      await issuer.close();
    }
  });
});

describe('SQLite locked by another process past busy_timeout', () => {
  let issuer: TestIssuer;
  const dir = tempDir();
  beforeAll(async () => {
    issuer = await startIssuer({ dir, env: { DATABASE_URL: `sqlite:${dir}/issuer.db` } });
  });
  afterAll(async () => {
    await issuer?.close();
    removeDir(dir);
  });

  it('a write that cannot take the lock answers 503 UNAVAILABLE, then succeeds once it is released', async () => {
    expect((await issue(issuer)).status).toBe(201);
    // Another connection (as another process would) holds the write lock.
    const other = new Database(`${dir}/issuer.db`);
    try {
      other.exec('BEGIN IMMEDIATE');
      await expectUnavailable(await issue(issuer));
      other.exec('ROLLBACK');
    } finally {
      other.close();
    }
    expect((await issue(issuer)).status).toBe(201);
  });
});
