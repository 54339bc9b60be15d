import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { verifyJWT } from 'did-jwt';
import { type DIDDocument, Resolver } from 'did-resolver';
import { decodeJwt, decodeProtectedHeader, type JWK } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { generateDevChain, prepareKey } from '../../src/cli/key-certificates.js';
import { generateMissingKeys } from '../../src/cli/keys.js';
import { loadConfig } from '../../src/config/config.js';
import { createContext } from '../../src/context.js';
import { attachChain, x5cToPem } from '../../src/keys/certificates.js';
import { issueDevLeaf, loadOrCreateDevCa } from '../../src/keys/dev-ca.js';
import { parseKeyFile, readKeys } from '../../src/keys/key-ring.js';
import { silentLogger } from '../../src/observability/logger.js';
import { issueDirectlyAndOpen } from '../helpers/issue-and-open.js';
import {
  startIssuer,
  TEST_ADMIN_API_KEY,
  TEST_API_KEY,
  TEST_PARTNER_ID,
  type TestIssuer,
  tempDir,
} from '../helpers/issuer.js';

// SD_JWT_ISSUER: how the credential and status list headers name the key, start-up
// checks, and rotation in each mode.
async function issue(issuer: TestIssuer) {
  const compact = await issueDirectlyAndOpen(issuer, { emailPrefix: 'ident' });
  const p = compact.split('~')[0]!.split('.')[1];
  return {
    header: decodeProtectedHeader(compact.split('~')[0]!) as Record<string, unknown>,
    payload: JSON.parse(Buffer.from(p!, 'base64url').toString()) as Record<string, unknown>,
  };
}

async function statusListHeader(issuer: TestIssuer) {
  const token = await (await fetch(`${issuer.url}/statuslist/0`)).text();
  return decodeProtectedHeader(token) as Record<string, unknown>;
}

const rotate = async (issuer: TestIssuer) =>
  issuer.admin('/admin/keys/rotate', { purpose: 'credential-signing' });

describe('SD_JWT_ISSUER', () => {
  let issuer: TestIssuer | undefined;
  afterEach(async () => {
    await issuer?.close();
    issuer = undefined;
  });

  it('refuses an unknown mode with one line naming the variable', () => {
    expect(() => loadConfig({ NODE_ENV: 'test', SD_JWT_ISSUER: 'jwks' })).toThrow(
      /^SD_JWT_ISSUER: SD_JWT_ISSUER must be url, did:web or x5c$/,
    );
  });

  it('did:web: iss is the did, kid the did URL, for credentials and status lists, across a rotation', async () => {
    issuer = await startIssuer({ env: { SD_JWT_ISSUER: 'did:web' } });
    const did = `did:web:${new URL(issuer.url).host.replace(':', '%3A')}`;
    const first = await issue(issuer);
    const kid1 = issuer.ctx.keys.current().signing.kid;
    expect(first.payload.iss).toBe(did);
    expect(first.header.kid).toBe(`${did}#${kid1}`);
    expect((await statusListHeader(issuer)).kid).toBe(`${did}#${kid1}`);
    expect((await rotate(issuer)).status).toBe(200);
    const kid2 = issuer.ctx.keys.current().signing.kid;
    expect(kid2).not.toBe(kid1);
    expect((await issue(issuer)).header.kid).toBe(`${did}#${kid2}`);
    expect((await statusListHeader(issuer)).kid).toBe(`${did}#${kid2}`);
    const doc = (await (await fetch(`${issuer.url}/.well-known/did.json`)).json()) as {
      assertionMethod: string[];
    };
    expect(doc.assertionMethod).toEqual(expect.arrayContaining([`${did}#${kid1}`, `${did}#${kid2}`]));
    const meta = (await (await fetch(`${issuer.url}/.well-known/jwt-vc-issuer`)).json()) as {
      jwks: { keys: JWK[] };
    };
    expect(meta.jwks.keys.map((k) => k.kid)).toEqual(expect.arrayContaining([kid1, kid2]));
  });

  it('did:web: the status list token names the DID as iss, and a generic DID-JWT verifier accepts it', async () => {
    issuer = await startIssuer({ env: { SD_JWT_ISSUER: 'did:web' } });
    const did = `did:web:${new URL(issuer.url).host.replace(':', '%3A')}`;
    await issue(issuer);
    const token = await (await fetch(`${issuer.url}/statuslist/0`)).text();
    expect(decodeJwt(token).iss).toBe(did);
    // did-jwt resolves `iss` and finds the header kid among the document's assertion methods; the
    // resolver hands it the document our server serves (web-did-resolver would insist on https).
    const served = issuer;
    const resolver = new Resolver({
      web: async () => ({
        didDocument: (await (await fetch(`${served.url}/.well-known/did.json`)).json()) as DIDDocument,
        didResolutionMetadata: { contentType: 'application/did+json' },
        didDocumentMetadata: {},
      }),
    });
    const verified = await verifyJWT(token, { resolver, policies: { aud: false } });
    expect(verified.issuer).toBe(did);
    expect(verified.signer.id).toBe(`${did}#${issuer.ctx.keys.current().signing.kid}`);
    // Tampering still fails: the same verifier refuses a token whose payload was altered.
    const [h, , sig] = token.split('.');
    const altered = Buffer.from(JSON.stringify({ ...decodeJwt(token), ttl: 1 })).toString('base64url');
    await expect(
      verifyJWT(`${h}.${altered}.${sig}`, { resolver, policies: { aud: false } }),
    ).rejects.toThrow();
  });

  it('url and x5c modes keep the status list token without iss', async () => {
    issuer = await startIssuer();
    await issue(issuer);
    const token = await (await fetch(`${issuer.url}/statuslist/0`)).text();
    expect(decodeJwt(token).iss).toBeUndefined();
  });

  it('x5c: start-up refuses an active key without a chain, naming the key file', async () => {
    const dir = tempDir();
    const keysDir = join(dir, 'keys');
    await generateMissingKeys(keysDir);
    const file = (await readKeys(keysDir)).find((k) => k.purpose === 'credential-signing')!.file;
    const { config, secrets } = loadConfig({
      NODE_ENV: 'test',
      SD_JWT_ISSUER: 'x5c',
      ISSUER_ORIGIN: 'http://127.0.0.1:4999',
      KEYS_DIR: keysDir,
      DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`,
      API_KEY: TEST_API_KEY,
      ADMIN_API_KEY: TEST_ADMIN_API_KEY,
      PARTNER_ID: TEST_PARTNER_ID,
      // Never reached: the key check comes first.
      SERVICE_V1_BASE_URL: 'http://127.0.0.1:9/v1',
    });
    await expect(createContext(config, secrets, { log: silentLogger() })).rejects.toThrow(
      new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: SD_JWT_ISSUER=x5c needs a valid chain`),
    );
    // A chain for another host is refused the same way.
    await generateDevChain(keysDir, { ISSUER_ORIGIN: 'https://other.example', NODE_ENV: 'test' });
    await expect(createContext(config, secrets, { log: silentLogger() })).rejects.toThrow(
      /does not name IP address 127\.0\.0\.1/,
    );
  });

  it('x5c: the header carries the chain; rotation certifies the new key with the development CA', async () => {
    issuer = await startIssuer({
      env: { SD_JWT_ISSUER: 'x5c' },
      prepare: async (dir, origin) => {
        await generateMissingKeys(join(dir, 'keys'));
        await generateDevChain(join(dir, 'keys'), { ISSUER_ORIGIN: origin, NODE_ENV: 'test' });
      },
    });
    const first = await issue(issuer);
    const key1 = issuer.ctx.keys.current().signing;
    expect(first.payload.iss).toBe(issuer.url);
    expect(first.header.x5c).toEqual(key1.x5c);
    expect((await statusListHeader(issuer)).x5c).toEqual(key1.x5c);
    expect((await rotate(issuer)).status).toBe(200);
    const key2 = issuer.ctx.keys.current().signing;
    expect(key2.kid).not.toBe(key1.kid);
    expect(key2.x5c?.[1]).toBe(key1.x5c?.[1]);
    expect((await issue(issuer)).header.x5c).toEqual(key2.x5c);
    expect((await statusListHeader(issuer)).x5c).toEqual(key2.x5c);
  });

  it('x5c: without a development CA, rotation needs a certified standby key and then promotes it', async () => {
    const caDir = tempDir();
    let keysDir = '';
    issuer = await startIssuer({
      env: { SD_JWT_ISSUER: 'x5c' },
      prepare: async (dir, origin) => {
        keysDir = join(dir, 'keys');
        await generateMissingKeys(keysDir);
        // A CA kept elsewhere, as a real one would be: KEYS_DIR holds no dev-ca.json.
        const ca = await loadOrCreateDevCa(caDir);
        const key = (await readKeys(keysDir)).find((k) => k.purpose === 'credential-signing')!;
        attachChain(key.file, await issueDevLeaf(ca, key.publicKey, origin));
      },
    });
    const before = issuer.ctx.keys.current().signing.kid;
    const refused = await rotate(issuer);
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { code: string }).code).toBe('CONFLICT');
    expect(issuer.ctx.keys.current().signing.kid).toBe(before);

    const standby = await prepareKey(keysDir, issuer.url);
    const uncertified = await rotate(issuer);
    expect(uncertified.status).toBe(409);
    expect(issuer.ctx.keys.current().signing.kid).toBe(before);

    const ca = await loadOrCreateDevCa(caDir);
    const key = await parseKeyFile(standby.file);
    writeFileSync(join(caDir, 'chain.pem'), x5cToPem(await issueDevLeaf(ca, key.publicKey, issuer.url)));
    const { attachCertificate } = await import('../../src/cli/key-certificates.js');
    await attachCertificate(keysDir, standby.kid, join(caDir, 'chain.pem'), issuer.url);
    const ok = await rotate(issuer);
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { created: { kid: string } }).created.kid).toBe(standby.kid);
    expect(issuer.ctx.keys.current().signing.kid).toBe(standby.kid);
    expect((await issue(issuer)).header.x5c).toEqual(issuer.ctx.keys.current().signing.x5c);
  });
});
