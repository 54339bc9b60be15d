import {
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  randomBytes,
} from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CryptoKey, JWK, JWTPayload } from 'jose';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { EmulatorServer } from '../../../../src/development/emulator/index.js';
import { base58btcEncode, startEmulatorServer } from '../../../../src/development/emulator/index.js';

const PARTNER_ID = '6f1c1f1e-3b0a-4f4e-9d4a-2f7f5b1f0a11';
// Time is frozen: the emulator's clock and every token's iat/exp come from here.
const NOW = new Date('2030-01-01T00:00:00Z');
const NOW_S = Math.floor(NOW.getTime() / 1000);
const KID = 'partner-1';

let signingKey: CryptoKey;
let otherKey: CryptoKey;
let jwks: { keys: JWK[] };

interface TokenOptions {
  header?: Record<string, unknown>;
  claims?: JWTPayload;
  key?: CryptoKey;
}

async function partnerJwt(options: TokenOptions = {}): Promise<string> {
  const payload: JWTPayload = {
    partnerId: PARTNER_ID,
    scope: 'issue',
    iat: NOW_S,
    exp: NOW_S + 300,
    ...options.claims,
  };
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'ES256', kid: KID, typ: 'JWT', ...options.header })
    .sign(options.key ?? signingKey);
}

interface Reply {
  status: number;
  body: Record<string, unknown>;
}

async function call(url: string, init: RequestInit = {}): Promise<Reply> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> =>
  call(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');

function envelope(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const ephemeral = generateKeyPairSync('x25519').publicKey.export({ format: 'der', type: 'spki' });
  return {
    holderDid: 'did:key:z6LSexample',
    schemaId: 'membership-v1',
    expiresAt: '2031-01-01T00:00:00.000Z',
    data: b64(randomBytes(64)),
    iv: b64(randomBytes(12)),
    authTag: b64(randomBytes(16)),
    encryptedKey: b64(ephemeral),
    externalId: `ext-${randomBytes(6).toString('hex')}`,
    ...overrides,
  };
}

beforeAll(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true });
  jwks = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: KID, alg: 'ES256', use: 'sig' }] };
  signingKey = pair.privateKey;
  otherKey = (await generateKeyPair('ES256')).privateKey;
});

describe('hosting-service emulator (JWKS from a function)', () => {
  let server: EmulatorServer;
  let base: string;
  let auth: Record<string, string>;

  beforeAll(async () => {
    server = await startEmulatorServer({ jwks: async () => jwks, partnerId: PARTNER_ID, now: () => NOW });
    base = server.url;
    auth = { 'x-partner-auth': await partnerJwt() };
  });
  afterAll(() => server.close());
  beforeEach(() => {
    server.emulator.state.reset();
    server.emulator.faults.clear();
  });

  describe('POST /auth/initialize-user (docs/interface.md "Direct issuance")', () => {
    it('creates a holder with an X25519 key and a did:key, stable per email', async () => {
      const first = await post(`${base}/auth/initialize-user`, { email: 'Alice@Example.com' }, auth);
      expect(first.status).toBe(200);
      const { userId, did, publicKey } = first.body as Record<string, string>;
      expect(userId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(publicKey).toMatch(/^302a300506032b656e032100[0-9a-f]{64}$/);
      // did:key of an X25519 key (multicodec 0xec) always starts with z6LS.
      expect(did).toMatch(/^did:key:z6LS[1-9A-HJ-NP-Za-km-z]+$/);

      const again = await post(`${base}/auth/initialize-user`, { email: 'alice@example.com' }, auth);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);

      const other = await post(`${base}/auth/initialize-user`, { email: 'bob@example.com' }, auth);
      expect(other.body.did).not.toBe(did);
      expect(server.emulator.state.holders.size).toBe(2);
    });

    it.each([
      'admin@example.com',
      'noreply@example.com',
      'no-reply@example.com',
      'support@example.com',
      'info@example.com',
      'postmaster@example.com',
      'team@example.com',
      'Support+billing@example.com',
      'not-an-email',
      '',
    ])('rejects %j with 400', async (email) => {
      const res = await post(`${base}/auth/initialize-user`, { email }, auth);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('INVALID_PARAMETER');
      expect(server.emulator.state.holders.size).toBe(0);
    });

    it('rejects a missing email and malformed JSON with 400 JSON', async () => {
      const missing = await post(`${base}/auth/initialize-user`, {}, auth);
      expect(missing.status).toBe(400);
      expect(missing.body.code).toBe('INVALID_PARAMETER');
      expect(missing.body.message).toMatch(/^email/);

      const malformed = await post(`${base}/auth/initialize-user`, '{"email": ', auth);
      expect(malformed.status).toBe(400);
      expect(malformed.body.code).toBe('INVALID_PARAMETER');
    });
  });

  describe('partner JWT (docs/interface.md "Authentication")', () => {
    const cases: [string, () => Promise<Record<string, string>>][] = [
      ['no header', async () => ({})],
      ['not a JWT', async () => ({ 'x-partner-auth': 'not-a-jwt' })],
      ['wrong key', async () => ({ 'x-partner-auth': await partnerJwt({ key: otherKey }) })],
      ['unknown kid', async () => ({ 'x-partner-auth': await partnerJwt({ header: { kid: 'nope' } }) })],
      ['missing kid', async () => ({ 'x-partner-auth': await partnerJwt({ header: { kid: undefined } }) })],
      ['typ not JWT', async () => ({ 'x-partner-auth': await partnerJwt({ header: { typ: 'at+jwt' } }) })],
      [
        'expired',
        async () => ({
          'x-partner-auth': await partnerJwt({ claims: { iat: NOW_S - 900, exp: NOW_S - 600 } }),
        }),
      ],
      [
        'exp too far',
        async () => ({ 'x-partner-auth': await partnerJwt({ claims: { exp: NOW_S + 3600 } }) }),
      ],
      ['exp missing', async () => ({ 'x-partner-auth': await partnerJwt({ claims: { exp: undefined } }) })],
      [
        'partnerId mismatch',
        async () => ({ 'x-partner-auth': await partnerJwt({ claims: { partnerId: 'someone-else' } }) }),
      ],
      [
        'partnerId missing',
        async () => ({ 'x-partner-auth': await partnerJwt({ claims: { partnerId: undefined } }) }),
      ],
      [
        'scope missing',
        async () => ({ 'x-partner-auth': await partnerJwt({ claims: { scope: undefined } }) }),
      ],
    ];

    it.each(cases)('answers 401 UNAUTHORIZED for %s, on both routes', async (_name, headers) => {
      const h = await headers();
      const init = await post(`${base}/auth/initialize-user`, { email: 'carol@example.com' }, h);
      expect(init.status).toBe(401);
      expect(init.body.code).toBe('UNAUTHORIZED');
      const store = await post(`${base}/dstorage/vcs`, envelope(), h);
      expect(store.status).toBe(401);
      expect(store.body.code).toBe('UNAUTHORIZED');
      expect(server.emulator.state.holders.size).toBe(0);
      expect(server.emulator.state.envelopes.size).toBe(0);
    });

    it('accepts a token without iat whose exp is within 5 minutes of now', async () => {
      const token = await partnerJwt({ claims: { iat: undefined, exp: NOW_S + 240 } });
      const res = await post(
        `${base}/auth/initialize-user`,
        { email: 'dave@example.com' },
        { 'x-partner-auth': token },
      );
      expect(res.status).toBe(200);
    });
  });

  describe('POST /dstorage/vcs (docs/interface.md "The envelope")', () => {
    it('stores an envelope and answers 201 with the store response', async () => {
      const env = envelope();
      const res = await post(`${base}/dstorage/vcs`, env, {
        ...auth,
        'idempotency-key': String(env.externalId),
      });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        storagePath: expect.any(String),
        state: 'stored',
        envelopeVersion: '1',
        createdAt: NOW.toISOString(),
      });
      expect(server.emulator.state.envelopes.get(String(env.externalId))?.envelope).toEqual(env);
    });

    it('answers a repeat of the same envelope with the same stored answer and one record', async () => {
      const env = envelope();
      const first = await post(`${base}/dstorage/vcs`, env, auth);
      const second = await post(`${base}/dstorage/vcs`, env, auth);
      expect(first.status).toBe(201);
      expect(second.status).toBe(201);
      expect(second.body).toEqual(first.body);
      expect(server.emulator.state.envelopes.size).toBe(1);
    });

    it('answers 409 CONFLICT for the same externalId with a different envelope', async () => {
      const env = envelope();
      expect((await post(`${base}/dstorage/vcs`, env, auth)).status).toBe(201);
      const res = await post(`${base}/dstorage/vcs`, { ...env, data: b64(randomBytes(64)) }, auth);
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('CONFLICT');
      expect(server.emulator.state.envelopes.size).toBe(1);
    });

    it.each(['holderDid', 'schemaId', 'expiresAt', 'data', 'iv', 'authTag', 'encryptedKey', 'externalId'])(
      'answers 400 naming a missing %s',
      async (field) => {
        const env = envelope();
        delete env[field];
        const res = await post(`${base}/dstorage/vcs`, env, auth);
        expect(res.status).toBe(400);
        expect(res.body.code).toBe('INVALID_PARAMETER');
        expect(String(res.body.message).startsWith(`${field}:`)).toBe(true);
      },
    );

    it.each([
      ['expiresAt', 'next year'],
      ['data', 'not base64!'],
      ['iv', b64(randomBytes(16))],
      ['authTag', b64(randomBytes(12))],
      ['encryptedKey', b64(randomBytes(32))],
      ['holderDid', 'alice'],
      ['schemaId', 42],
    ])('answers 400 naming an invalid %s', async (field, value) => {
      const res = await post(`${base}/dstorage/vcs`, envelope({ [field]: value }), auth);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('INVALID_PARAMETER');
      expect(String(res.body.message).startsWith(`${field}:`)).toBe(true);
    });

    it('answers 400 for malformed JSON', async () => {
      const res = await post(`${base}/dstorage/vcs`, '{"holderDid"', auth);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('INVALID_PARAMETER');
    });
  });

  describe('fault injection and the request log', () => {
    it('fails twice, then stores once; the log shows the same externalId each time', async () => {
      const injected = await post(`${base}/_emulator/faults`, { route: 'dstorage', count: 2 });
      expect(injected.status).toBe(200);
      const env = envelope();
      const headers = { ...auth, 'idempotency-key': String(env.externalId) };

      const statuses: number[] = [];
      for (let attempt = 0; attempt < 3; attempt++) {
        const res = await post(`${base}/dstorage/vcs`, env, headers);
        statuses.push(res.status);
        if (res.status === 500) expect(res.body.code).toBe('INTERNAL');
      }
      expect(statuses).toEqual([500, 500, 201]);
      expect(server.emulator.state.envelopes.size).toBe(1);

      const log = await call(`${base}/_emulator/requests`);
      expect(log.body.requests).toEqual(
        [500, 500, 201].map((status) => ({
          at: NOW.toISOString(),
          route: 'dstorage',
          email: null,
          externalId: env.externalId,
          idempotencyKey: env.externalId,
          requestId: null,
          status,
        })),
      );
    });

    it('injects a chosen status programmatically, and clear() removes pending faults', async () => {
      server.emulator.faults.failNext('initialize-user', 1, 503);
      const failed = await post(`${base}/auth/initialize-user`, { email: 'erin@example.com' }, auth);
      expect(failed.status).toBe(503);
      expect(server.emulator.state.holders.size).toBe(0);

      server.emulator.faults.failNext('initialize-user', 5);
      server.emulator.faults.clear();
      expect((await post(`${base}/auth/initialize-user`, { email: 'erin@example.com' }, auth)).status).toBe(
        200,
      );
    });

    it('rejects a malformed fault request with 400', async () => {
      const res = await post(`${base}/_emulator/faults`, { route: 'nowhere', count: 1 });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('INVALID_PARAMETER');
    });
  });

  describe('read-back routes (/_emulator)', () => {
    it('reads envelopes back by externalId and by holderDid', async () => {
      const a = envelope({ holderDid: 'did:key:z6LSholderA' });
      const b = envelope({ holderDid: 'did:key:z6LSholderB' });
      await post(`${base}/dstorage/vcs`, a, { ...auth, 'idempotency-key': String(a.externalId) });
      await post(`${base}/dstorage/vcs`, b, auth);

      const one = await call(`${base}/_emulator/envelopes/${encodeURIComponent(String(a.externalId))}`);
      expect(one.status).toBe(200);
      expect(one.body).toMatchObject({
        envelope: a,
        state: 'stored',
        envelopeVersion: '1',
        idempotencyKey: a.externalId,
        partnerId: PARTNER_ID,
      });

      const list = await call(
        `${base}/_emulator/envelopes?holderDid=${encodeURIComponent('did:key:z6LSholderB')}`,
      );
      expect((list.body.envelopes as { envelope: unknown }[]).map((e) => e.envelope)).toEqual([b]);
      const all = await call(`${base}/_emulator/envelopes`);
      expect(all.body.envelopes).toHaveLength(2);

      const missing = await call(`${base}/_emulator/envelopes/unknown`);
      expect(missing.status).toBe(404);
      expect(missing.body.code).toBe('NOT_FOUND');
    });

    it('creates holders without a JWT and returns a private key that pairs with publicKey', async () => {
      const created = await post(`${base}/_emulator/holders`, { email: 'frank@example.com' });
      expect(created.status).toBe(201);
      const again = await post(`${base}/_emulator/holders`, { email: 'frank@example.com' });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(created.body);

      const viaApi = await post(`${base}/auth/initialize-user`, { email: 'frank@example.com' }, auth);
      const read = await call(`${base}/_emulator/holders/${encodeURIComponent('frank@example.com')}`);
      expect(read.status).toBe(200);
      const holder = read.body as Record<string, string>;
      expect(viaApi.body).toEqual({ userId: holder.userId, did: holder.did, publicKey: holder.publicKey });

      // The pair is real: ECDH from either side gives the same secret.
      const holderPriv = createPrivateKey({
        key: Buffer.from(holder.privateKeyPkcs8Hex ?? '', 'hex'),
        format: 'der',
        type: 'pkcs8',
      });
      const holderPub = createPublicKey({
        key: Buffer.from(holder.publicKey ?? '', 'hex'),
        format: 'der',
        type: 'spki',
      });
      const eph = generateKeyPairSync('x25519');
      expect(diffieHellman({ privateKey: holderPriv, publicKey: eph.publicKey })).toEqual(
        diffieHellman({ privateKey: eph.privateKey, publicKey: holderPub }),
      );

      expect((await call(`${base}/_emulator/holders/nobody%40example.com`)).status).toBe(404);
      expect((await post(`${base}/_emulator/holders`, { email: 'admin@example.com' })).status).toBe(400);
    });

    it('answers unknown routes with 404 JSON', async () => {
      const res = await call(`${base}/nowhere`);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('NOT_FOUND');
    });
  });
});

describe('hosting-service emulator (JWKS from a URL)', () => {
  let jwksServer: ReturnType<typeof createServer>;
  let server: EmulatorServer;

  beforeAll(async () => {
    jwksServer = createServer((req, res) => {
      if (req.url !== '/.well-known/jwks.json') {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jwks));
    });
    await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
    const { port } = jwksServer.address() as AddressInfo;
    server = await startEmulatorServer({
      jwks: `http://127.0.0.1:${port}/.well-known/jwks.json`,
      now: () => NOW,
    });
  });
  afterAll(async () => {
    await server.close();
    jwksServer.closeAllConnections();
    await new Promise<void>((resolve) => jwksServer.close(() => resolve()));
  });

  it('verifies the partner JWT against the fetched JWKS', async () => {
    const ok = await post(
      `${server.url}/auth/initialize-user`,
      { email: 'gina@example.com' },
      {
        'x-partner-auth': await partnerJwt(),
      },
    );
    expect(ok.status).toBe(200);
  });

  it('answers 401 for a kid the JWKS does not have and for a bad signature', async () => {
    const unknown = await post(
      `${server.url}/auth/initialize-user`,
      { email: 'gina@example.com' },
      {
        'x-partner-auth': await partnerJwt({ header: { kid: 'rotated-away' } }),
      },
    );
    expect(unknown.status).toBe(401);
    expect(unknown.body.code).toBe('UNAUTHORIZED');
    const forged = await post(
      `${server.url}/auth/initialize-user`,
      { email: 'gina@example.com' },
      {
        'x-partner-auth': await partnerJwt({ key: otherKey }),
      },
    );
    expect(forged.status).toBe(401);
    expect(forged.body.code).toBe('UNAUTHORIZED');
  });
});

describe('base58btc', () => {
  it('matches known vectors, leading zeros included', () => {
    expect(base58btcEncode(new TextEncoder().encode('Hello World!'))).toBe('2NEpo7TZRRrLZSi2U');
    expect(base58btcEncode(Uint8Array.of(0, 0, 1))).toBe('112');
    expect(base58btcEncode(new Uint8Array())).toBe('');
  });
});
