import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { expectError } from '../helpers/errors.js';
import { startIssuer, type TestIssuer } from '../helpers/issuer.js';

/**
 * A hosting service that hangs: it reads each request and never answers, except initialize-user
 * when `answerUsers` is set (then only dstorage hangs).
 */
async function hangingService(answerUsers: boolean): Promise<{ url: string; server: Server }> {
  const holder = generateHolderKeyPair();
  const server = createServer((req, res) => {
    req.resume();
    if (answerUsers && req.url?.endsWith('/auth/initialize-user')) {
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ userId: 'u-1', did: 'did:example:hang', publicKey: holder.publicKeyHex }));
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const body = {
  userId: 'deadline@example.com',
  schemaId: 'membership-v1',
  vct: 'https://issuer.example/vct/membership-v1',
  expiration: '2099-01-01T00:00:00Z',
  credentialSubject: {
    givenName: 'Dee',
    familyName: 'Line',
    email: 'deadline@example.com',
    memberSince: '2020-01-01',
    tier: 'gold',
    memberNumber: 7,
  },
};

// One deadline (ADMIN_ISSUE_DEADLINE_MS) bounds the whole /admin/issue-vc request.
describe.each([
  ['initialize-user hangs', false],
  ['dstorage hangs', true],
])('/admin/issue-vc against a hosting service where %s', (_name, answerUsers) => {
  let service: { url: string; server: Server };
  let issuer: TestIssuer;

  beforeAll(async () => {
    service = await hangingService(answerUsers);
    issuer = await startIssuer({
      // Without the deadline, the upload would wait UPLOAD_TIMEOUT_MS (two minutes, past the
      // test's timeout) and initialize-user would fail three 10 s timeouts without naming it.
      env: { SERVICE_V1_BASE_URL: service.url, ADMIN_ISSUE_DEADLINE_MS: '400', UPLOAD_TIMEOUT_MS: '120000' },
    });
  });
  afterAll(async () => {
    // The hanging service goes first, so the outbox's background attempt ends instead of timing out.
    const closed = new Promise((resolve) => service.server.close(resolve));
    service.server.closeAllConnections();
    await closed;
    await issuer.close();
  });

  it('answers at the deadline, not after the upstream timeouts', async () => {
    const res = await fetch(`${issuer.url}/admin/issue-vc`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-admin-api-key': 'test-admin-key-0123456789abcdef012345678',
      },
      body: JSON.stringify(body),
    });
    if (answerUsers) {
      // Recorded and queued: the outbox keeps trying; the caller hears "pending".
      expect(res.status).toBe(202);
      expect(await res.json()).toMatchObject({ uploadState: 'pending' });
    } else {
      const error = await expectError(res, 502, 'UPSTREAM_UNAVAILABLE');
      expect(error.message).toMatch(/ADMIN_ISSUE_DEADLINE_MS/);
    }
  });
});
