import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromPreviewFields, generateHolderKeyPair, openEnvelope } from '../../src/envelope/index.js';
import { expectError } from '../helpers/errors.js';
import { startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';

// docs/schemas-and-claims.md: the http provider's exact request and answers; an outage is 502, never "not eligible".
describe('claims providers', () => {
  let issuer: TestIssuer;
  let claimsServer: Server;
  let mode: 'ok' | 'ineligible' | 'down' | 'malformed' | 'slow' = 'ok';
  const seen: unknown[] = [];
  const holder = generateHolderKeyPair();

  beforeAll(async () => {
    claimsServer = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        seen.push(JSON.parse(body));
        if (mode === 'slow') return; // never answers: the provider's timeout fires
        res.setHeader('content-type', 'application/json');
        if (mode === 'down') res.writeHead(503).end('{}');
        else if (mode === 'malformed') res.writeHead(200).end('{"eligible": "yes"}');
        else if (mode === 'ineligible') res.writeHead(200).end('{"eligible": false}');
        else
          res.writeHead(200).end(
            JSON.stringify({
              eligible: true,
              credentialSubject: { name: 'Zoë' },
              expiresAt: '2099-01-01T00:00:00Z',
            }),
          );
      });
    });
    claimsServer.listen(0, '127.0.0.1');
    await once(claimsServer, 'listening');
    const port = (claimsServer.address() as AddressInfo).port;

    const schemas = tempDir();
    mkdirSync(schemas, { recursive: true });
    const common = {
      title: 'T',
      proofTypes: ['SD_JWT_VC'],
      expiresInSeconds: 60,
      credentialSubject: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    };
    writeFileSync(
      join(schemas, 'remote.json'),
      JSON.stringify({
        ...common,
        schemaId: 'remote-v1',
        // The answers come at once; the deadline only has to outlast a busy machine.
        claims: { provider: 'http', url: `http://127.0.0.1:${port}/lookup`, timeoutMs: 60_000 },
        sdJwt: { vct: 'urn:vct:remote' },
      }),
    );
    writeFileSync(
      join(schemas, 'remote-hang.json'),
      JSON.stringify({
        ...common,
        schemaId: 'remote-hang-v1',
        // Asked only while the source never answers: this deadline always fires.
        claims: { provider: 'http', url: `http://127.0.0.1:${port}/lookup`, timeoutMs: 200 },
        sdJwt: { vct: 'urn:vct:remote-hang' },
      }),
    );
    writeFileSync(
      join(schemas, 'mod.json'),
      JSON.stringify({
        ...common,
        schemaId: 'module-v1',
        claims: { provider: 'module', path: 'providers/static.mjs' },
        sdJwt: { vct: 'urn:vct:module' },
      }),
    );
    mkdirSync(join(schemas, 'providers'));
    writeFileSync(
      join(schemas, 'broken.json'),
      JSON.stringify({
        ...common,
        schemaId: 'broken-v1',
        claims: { provider: 'module', module: 'providers/broken.mjs' },
        sdJwt: { vct: 'urn:vct:broken' },
      }),
    );
    writeFileSync(
      join(schemas, 'providers', 'broken.mjs'),
      'export const claimsProvider = { async lookup() { return { eligible: true }; } };\n',
    );
    writeFileSync(
      join(schemas, 'providers', 'static.mjs'),
      'export default { async lookup({ userId }) { return userId === "mod-user" ? { eligible: true, credentialSubject: { name: "Mo" } } : { eligible: false }; } };\n',
    );
    issuer = await startIssuer({ env: { SCHEMAS_DIR: schemas } });
  });
  afterAll(async () => {
    await issuer.close();
    claimsServer.close();
  });

  const ask = (userId: string, schemaId?: string) =>
    issuer.post('/available-vc', {
      holderDID: 'did:example:c',
      pubKey: holder.publicKeyHex,
      userId,
      ...(schemaId ? { schemaId } : {}),
    });

  it('http provider: POSTs { userId, schemaId, proofType } and uses the answer', async () => {
    mode = 'ok';
    seen.length = 0;
    const res = await ask('u-1', 'remote-v1');
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      data: Array<{ credentialSubject: Parameters<typeof fromPreviewFields>[0] }>;
    };
    expect(openEnvelope(holder.privateKey, fromPreviewFields(body.data[0]!.credentialSubject))).toEqual({
      name: 'Zoë',
    });
    expect(seen).toEqual([{ userId: 'u-1', schemaId: 'remote-v1', proofType: 'SD_JWT_VC' }]);
    const issued = await issuer.post('/issue-vc', {
      holderDID: 'did:example:c',
      pubKey: holder.publicKeyHex,
      userId: 'u-1',
      schemaId: 'remote-v1',
    });
    expect(issued.status).toBe(201);
  });

  it('http provider: eligible false → no entry', async () => {
    mode = 'ineligible';
    expect(await (await ask('u-2', 'remote-v1')).json()).toEqual({ data: [] });
  });

  it.each(['down', 'malformed', 'slow'] as const)(
    'http provider %s → 502 UPSTREAM_UNAVAILABLE, never "not eligible"',
    async (m) => {
      mode = m;
      const schemaId = m === 'slow' ? 'remote-hang-v1' : 'remote-v1';
      const res = await ask('u-3', schemaId);
      await expectError(res, 502, 'UPSTREAM_UNAVAILABLE');
      const issued = await issuer.post('/issue-vc', {
        holderDID: 'did:example:c',
        pubKey: holder.publicKeyHex,
        userId: 'u-3',
        schemaId,
      });
      expect(issued.status).toBe(502);
    },
  );

  it('BJJ_SIG_2021 on a schema without iden3 settings → 400', async () => {
    mode = 'ok';
    const res = await issuer.post('/issue-vc', {
      holderDID: 'did:example:c',
      pubKey: holder.publicKeyHex,
      userId: 'u-1',
      schemaId: 'remote-v1',
      proofType: 'BJJ_SIG_2021',
    });
    await expectError(res, 400, 'INVALID_PARAMETER');
    // No schema lists BJJ here, so the Iden3 back-end is off and has no routes.
    expect(issuer.ctx.iden3).toBeUndefined();
    expect((await fetch(`${issuer.url}/credential-status/1`)).status).toBe(404);
  });

  it('a module provider with a malformed answer → 502, never a crash or "not eligible"', async () => {
    const res = await ask('anyone', 'broken-v1');
    await expectError(res, 502, 'UPSTREAM_UNAVAILABLE');
  });

  it('module provider', async () => {
    const res = await ask('mod-user', 'module-v1');
    expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(1);
    expect(await (await ask('other', 'module-v1')).json()).toEqual({ data: [] });
  });
});

describe('rate limits', () => {
  let issuer: TestIssuer;
  beforeAll(async () => {
    issuer = await startIssuer({ env: { RATE_LIMIT_PUBLIC_PER_MIN: '3', RATE_LIMIT_HOLDER_PER_MIN: '0' } });
  });
  afterAll(async () => {
    await issuer.close();
  });

  it('over the limit → 429 RATE_LIMITED with RateLimit headers; 0 turns a group off', async () => {
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 4; i++) {
      last = await fetch(`${issuer.url}/.well-known/jwks.json`);
      statuses.push(last.status);
      if (i < 3) await last.body?.cancel();
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    await expectError(last!, 429, 'RATE_LIMITED');
    expect(last!.headers.get('ratelimit-policy')).toMatch(/q=3/);
    expect(last!.headers.get('ratelimit')).toMatch(/r=0/);
    const holder = generateHolderKeyPair();
    for (let i = 0; i < 5; i++) {
      const res = await issuer.post('/available-vc', {
        holderDID: 'did:example:r',
        pubKey: holder.publicKeyHex,
        userId: 'nobody',
      });
      expect(res.status).toBe(200);
      await res.body?.cancel();
    }
  });
});
