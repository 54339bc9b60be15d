import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KeyRing, loadKeyRing } from '../../../src/keys/key-ring.js';
import { postJson } from '../../../src/outbound/http-json.js';
import { PartnerJwtSigner } from '../../../src/service-client/partner-jwt.js';
import { ServiceClient, UpstreamError } from '../../../src/service-client/service-client.js';
import { tempDir } from '../../helpers/tmp.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

// docs/interface.md "Direct issuance": the client of the hosting service, against a loopback server.
describe('ServiceClient', () => {
  let server: Server;
  let url: string;
  let ring: KeyRing;
  let handler: Handler = (_req, _body, res) => res.end();
  const seen: Array<{ path: string; headers: IncomingMessage['headers']; body: unknown }> = [];

  beforeAll(async () => {
    ring = await loadKeyRing(join(tempDir(), 'keys'), { generateIfMissing: true });
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        seen.push({ path: req.url ?? '', headers: req.headers, body: body ? JSON.parse(body) : undefined });
        handler(req, body, res);
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  // Answered at once unless a test says otherwise: the deadline only has to outlast a busy machine.
  const client = (timeoutMs = 60_000) =>
    new ServiceClient(
      () => url,
      new PartnerJwtSigner({
        partnerId: 'p-1',
        identity: { origin: 'https://issuer.example' },
        key: () => ring.partner,
      }),
      postJson,
      timeoutMs,
    );
  const envelope = {
    holderDid: 'did:example:h',
    schemaId: 's',
    expiresAt: '2030-01-01T00:00:00.000Z',
    data: 'AA==',
    iv: 'AA==',
    authTag: 'AA==',
    encryptedKey: 'AA==',
    externalId: 'ext-1',
  };
  const answer =
    (status: number, body: string) => (_req: IncomingMessage, _b: string, res: ServerResponse) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(body);
    };

  it('sends the partner JWT (docs/interface.md "The partner JWT"), the email in the body, and parses initialize-user', async () => {
    handler = answer(200, JSON.stringify({ userId: 'u', did: 'did:example:u', publicKey: 'abcd' }));
    seen.length = 0;
    await expect(client().initializeUser('a.person@example.org')).resolves.toEqual({
      userId: 'u',
      did: 'did:example:u',
      publicKey: 'abcd',
    });
    const { path, headers, body } = seen[0]!;
    expect(path).toBe('/v1/auth/initialize-user');
    expect(body).toEqual({ email: 'a.person@example.org' });
    const token = headers['x-partner-auth'] as string;
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'ES256', kid: ring.partner.kid, typ: 'JWT' });
    const { payload } = await jwtVerify(token, createLocalJWKSet({ keys: [ring.partner.publicJwk] }));
    expect(payload).toMatchObject({ partnerId: 'p-1', scope: 'issue', iss: 'https://issuer.example' });
    expect(payload.exp! - payload.iat!).toBe(300);
    expect(payload).not.toHaveProperty('email');
  });

  it('stores an envelope with its externalId as idempotency-key; a 2xx without storagePath still counts', async () => {
    handler = answer(201, JSON.stringify({ storagePath: 'vcs/1', state: 'stored' }));
    seen.length = 0;
    await expect(client().storeEnvelope(envelope, 'SD_JWT_VC')).resolves.toMatchObject({
      storagePath: 'vcs/1',
    });
    expect(seen[0]!.headers['idempotency-key']).toBe('ext-1');
    // ProofType beside the envelope fields, as the reference issuer sends it.
    expect(seen[0]!.body).toEqual({ ...envelope, proofType: 'SD_JWT_VC' });
    handler = answer(201, '{}');
    await expect(client().storeEnvelope(envelope, 'SD_JWT_VC')).resolves.toEqual({});
  });

  it.each([
    ['a 409', answer(409, '{"message":"consent rejected"}'), 'status', 409, 'consent rejected', false],
    ['a 500', answer(500, '{}'), 'status', 500, undefined, true],
    ['non-JSON', answer(201, 'not json'), 'malformed', undefined, undefined, true],
  ] as const)(
    '%s is a typed UpstreamError',
    async (_name, h, failure, status, upstreamMessage, retryable) => {
      handler = h;
      const err = await client()
        .storeEnvelope(envelope, 'SD_JWT_VC')
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UpstreamError);
      expect(err).toMatchObject({ failure, status, upstreamMessage, retryable });
    },
  );

  it('a timeout and an unreachable service are typed too', async () => {
    handler = () => {}; // never answers
    await expect(client(100).storeEnvelope(envelope, 'SD_JWT_VC')).rejects.toMatchObject({
      failure: 'timeout',
    });
    const gone = new ServiceClient(
      () => 'http://127.0.0.1:1/v1',
      new PartnerJwtSigner({
        partnerId: 'p',
        identity: { origin: 'https://i.example' },
        key: () => ring.partner,
      }),
      postJson,
    );
    await expect(gone.storeEnvelope(envelope, 'SD_JWT_VC')).rejects.toMatchObject({ failure: 'network' });
  });

  it('caches the partner JWT until 30 s before it expires', async () => {
    let now = 1_700_000_000_000;
    const signer = new PartnerJwtSigner({
      partnerId: 'p',
      identity: { origin: 'https://i.example' },
      key: () => ring.partner,
      now: () => now,
    });
    const first = await signer.token();
    now += 269_000;
    expect(await signer.token()).toBe(first);
    now += 2_000;
    expect(await signer.token()).not.toBe(first);
  });

  it('does not reuse a partner JWT issued after the current time (the clock stepped back)', async () => {
    let now = 1_700_000_000_000;
    const signer = new PartnerJwtSigner({
      partnerId: 'p',
      identity: { origin: 'https://i.example' },
      key: () => ring.partner,
      now: () => now,
    });
    const ahead = await signer.token();
    now -= 120_000;
    const fresh = await signer.token();
    expect(fresh).not.toBe(ahead);
    expect(decodeJwt(fresh).iat).toBe(Math.floor(now / 1000));
  });
});
