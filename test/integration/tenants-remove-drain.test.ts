import { EventEmitter, once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { startTenants, type TestTenant, type TestTenants } from '../helpers/tenants.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * A claims source that answers only when the test says so: each lookup waits in `held` until
 * `release` answers it.
 */
async function heldClaimsSource() {
  const held: ServerResponse[] = [];
  const arrived = new EventEmitter();
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      held.push(res);
      arrived.emit('lookup');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/lookup`,
    /** Resolves once `count` lookups wait. */
    async waiting(count: number): Promise<void> {
      while (held.length < count) await once(arrived, 'lookup');
    },
    release(): void {
      for (const res of held.splice(0))
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ eligible: true, credentialSubject: { name: 'Zoë' } }));
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((done) => server.close(() => done()));
    },
  };
}

/** A schema folder whose one credential type asks `url` for its claims. */
function schemasAsking(url: string): string {
  const dir = join(tempDir(), 'schemas');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'remote.json'),
    JSON.stringify({
      schemaId: 'remote-v1',
      title: 'Remote',
      proofTypes: ['SD_JWT_VC'],
      expiresInSeconds: 3600,
      credentialSubject: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      // The lookup is held by the test; the deadline only has to outlast it.
      claims: { provider: 'http', url, timeoutMs: 60_000 },
      sdJwt: { vct: 'urn:vct:remote' },
    }),
  );
  return dir;
}

const holder = generateHolderKeyPair();

// docs/several-issuers.md "Removing a tenant": the operator's removal takes the tenant out of
// service at once and closes it only once its requests in flight have finished, up to
// SHUTDOWN_GRACE_MS.
describe('removing a tenant with a request in flight', () => {
  let claims: Awaited<ReturnType<typeof heldClaimsSource>>;
  let d: TestTenants | undefined;

  beforeAll(async () => {
    claims = await heldClaimsSource();
  });
  afterEach(async () => {
    claims.release();
    await d?.close();
    d = undefined;
  });
  afterAll(async () => {
    await claims?.close();
  });

  const issue = (t: TestTenant, holderDID: string) =>
    d!.holder(t, '/issue-vc', {
      holderDID,
      pubKey: holder.publicKeyHex,
      userId: 'u-1',
      schemaId: 'remote-v1',
    });

  it('lets the request finish with 201 before the tenant closes; new requests get the documented answers', async () => {
    d = await startTenants(0);
    const t = await d.add('t1', { schemasDir: schemasAsking(claims.url) });
    const inFlight = issue(t, 'did:example:in-flight');
    await claims.waiting(1);

    // Disabled: new issuances are refused at once, the one in flight goes on.
    expect((await d.operator('POST', '/operator/tenants/t1/disable')).status).toBe(200);
    const refused = await issue(t, 'did:example:after-disable');
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { code: string }).code).toBe('TENANT_DISABLED');

    // Removed: its host is no tenant's from then on (404, empty body), while the answer to the
    // removal waits for the request in flight.
    let removedAnswered = false;
    const removal = d.operator('DELETE', '/operator/tenants/t1').then((res) => {
      removedAnswered = true;
      return res;
    });
    await expect.poll(async () => (await d!.fetch(t.host, '/.well-known/jwt-vc-issuer')).status).toBe(404);
    const gone = await issue(t, 'did:example:after-remove');
    expect(gone.status).toBe(404);
    expect(await gone.text()).toBe('');
    expect(removedAnswered).toBe(false);

    claims.release();
    const answered = await inFlight;
    expect(answered.status).toBe(201);
    const removed = await removal;
    expect(removed.status).toBe(200);
    expect(await removed.json()).toEqual({ removed: 't1' });
    // What it issued was recorded and uploaded before the tenant's store and workers closed.
    expect(t.emulator.emulator.state.envelopes.size).toBe(1);
    expect((await d.operator('GET', '/operator/tenants/t1')).status).toBe(404);
  });

  it('answers 503 to a request still running when SHUTDOWN_GRACE_MS runs out, then closes the tenant', async () => {
    d = await startTenants(0, { env: { SHUTDOWN_GRACE_MS: '50' } });
    const t = await d.add('t1', { schemasDir: schemasAsking(claims.url) });
    const inFlight = issue(t, 'did:example:held');
    await claims.waiting(1);
    expect((await d.operator('POST', '/operator/tenants/t1/disable')).status).toBe(200);
    const removed = await d.operator('DELETE', '/operator/tenants/t1');
    expect(removed.status).toBe(200);
    const answered = await inFlight;
    expect(answered.status).toBe(503);
    expect(((await answered.json()) as { code: string }).code).toBe('UNAVAILABLE');
    expect(t.emulator.emulator.state.envelopes.size).toBe(0);
  });
});
