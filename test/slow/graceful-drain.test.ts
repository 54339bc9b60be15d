import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { TEST_ADMIN_API_KEY, TEST_API_KEY, TEST_PARTNER_ID } from '../helpers/issuer.js';
import { startMainProcess } from '../helpers/main-process.js';
import { tempDir } from '../helpers/tmp.js';

/** A hosting service that holds every call until the test lets it answer. */
async function holdingUpstream() {
  const held: { req: IncomingMessage; res: ServerResponse; path: string }[] = [];
  const arrivals = new EventEmitter();
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      held.push({ req, res, path: req.url ?? '' });
      arrivals.emit('call', held.length);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    held,
    async calls(n: number) {
      while (held.length < n) await once(arrivals, 'call');
    },
    releaseAll() {
      for (const { res, path } of held.splice(0)) {
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ storagePath: `stored${path}` }));
      }
    },
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** A development server on SQLite in `dir`, with the test keys. */
const startChild = (dir: string, env: Record<string, string>) =>
  startMainProcess({
    KEYS_DIR: join(dir, 'keys'),
    DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
    API_KEY: TEST_API_KEY,
    ADMIN_API_KEY: TEST_ADMIN_API_KEY,
    PARTNER_ID: TEST_PARTNER_ID,
    ...env,
  });

const issueVc = (url: string, holder: number) =>
  fetch(`${url}/issue-vc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
    body: JSON.stringify({
      holderDID: `did:example:drain-${holder}`,
      pubKey: generateHolderKeyPair('x25519').publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    }),
  });

// Graceful drain, on a real process receiving a real signal.
describe('graceful drain on SIGTERM', () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('requests in flight during the signal complete; new ones are refused; exit 0', async () => {
    const upstream = await holdingUpstream();
    cleanup.push(() => upstream.close());
    const child = await startChild(tempDir(), {
      SERVICE_V1_BASE_URL: upstream.url,
      // Far longer than the test needs: the drain ends when the held requests finish, however
      // long a busy machine takes to get there.
      SHUTDOWN_GRACE_MS: '600000',
    });
    cleanup.push(async () => child.proc.kill('SIGKILL'));

    const inFlight = [1, 2, 3].map((n) => issueVc(child.url, n));
    await upstream.calls(3);
    child.proc.kill('SIGTERM');
    await child.waitFor('shutdown');
    // A request after the signal: refused (connection refused, or 503 on a kept-alive socket).
    const late = await fetch(`${child.url}/readyz`).then(
      (r) => r.status,
      () => 'refused',
    );
    expect([503, 'refused']).toContain(late);
    upstream.releaseAll();
    const answers = await Promise.all(inFlight);
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201]);
    expect(await child.exit).toBe(0);
    expect(child.lines.find((l) => l.event === 'drained')).toMatchObject({
      inFlightAtStart: 3,
      finished: true,
    });
  });

  it('past SHUTDOWN_GRACE_MS the unfinished request is answered 503 and its Idempotency-Key claim released', async () => {
    const upstream = await holdingUpstream();
    cleanup.push(() => upstream.close());
    const dir = tempDir();
    const child = await startChild(dir, { SERVICE_V1_BASE_URL: upstream.url, SHUTDOWN_GRACE_MS: '200' });
    cleanup.push(async () => child.proc.kill('SIGKILL'));

    const pending = fetch(`${child.url}/admin/issue-vc`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-admin-api-key': TEST_ADMIN_API_KEY,
        'idempotency-key': 'drain-1',
      },
      body: JSON.stringify({
        userId: 'drain@example.org',
        schemaId: 'membership-v1',
        vct: 'https://issuer.example/vct/membership-direct',
        expiration: new Date(Date.now() + 86400_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        credentialSubject: {
          givenName: 'D',
          familyName: 'R',
          memberSince: '2020-01-01',
          tier: 'gold',
          memberNumber: 1,
        },
      }),
    }).then(
      async (r) => ({ status: r.status, code: ((await r.json()) as { code: string }).code }),
      () => 'cut',
    );
    await upstream.calls(1); // initialize-user is held: the claim is in progress
    child.proc.kill('SIGTERM');
    // The upstream never answers: the process still ends, on its own, and answers the request.
    expect(await child.exit).toBe(0);
    expect(await pending).toEqual({ status: 503, code: 'UNAVAILABLE' });
    expect(child.lines.find((l) => l.event === 'drain_timeout')).toMatchObject({
      unfinished: 1,
      releasedClaims: 1,
    });
    const db = new Database(join(dir, 'issuer.db'), { readonly: true });
    try {
      expect(db.prepare('SELECT COUNT(*) AS n FROM idempotency_keys').get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
  });

  it('a hosted issuance whose upload hangs past the grace is answered 503 and stays recorded, pending', async () => {
    const upstream = await holdingUpstream();
    cleanup.push(() => upstream.close());
    const dir = tempDir();
    const child = await startChild(dir, {
      SERVICE_V1_BASE_URL: upstream.url,
      SHUTDOWN_GRACE_MS: '300',
      UPLOAD_TIMEOUT_MS: '120000',
    });
    cleanup.push(async () => child.proc.kill('SIGKILL'));
    const answers = [1, 2].map((n) =>
      issueVc(child.url, 100 + n).then(
        async (r) => ({ status: r.status, code: ((await r.json()) as { code: string }).code }),
        () => 'cut',
      ),
    );
    await upstream.calls(2); // both uploads are held: the issuances are recorded
    child.proc.kill('SIGTERM');
    expect(await child.exit).toBe(0);
    expect(await Promise.all(answers)).toEqual([
      { status: 503, code: 'UNAVAILABLE' },
      { status: 503, code: 'UNAVAILABLE' },
    ]);
    const db = new Database(join(dir, 'issuer.db'), { readonly: true });
    try {
      expect(
        db.prepare('SELECT upload_state AS s, COUNT(*) AS n FROM issuances GROUP BY upload_state').all(),
      ).toEqual([{ s: 'pending', n: 2 }]);
    } finally {
      db.close();
    }
  });
});
