import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IssuerUrls, issuerFace, issuerIdentity } from '../../../src/identity/issuer-identity.js';
import { fileKeyHolder } from '../../../src/keys/key-holder.js';
import { bundledSchemas } from '../../fakes/issuance.js';
import { removeDir, tempDir } from '../../helpers/tmp.js';

// docs/interface.md: every public URL of the issuer, byte for byte as published.
describe('IssuerUrls', () => {
  const urls = new IssuerUrls('https://issuer.example');

  it('builds every public URL under the origin', () => {
    expect(urls.origin).toBe('https://issuer.example');
    expect(urls.did).toBe('did:web:issuer.example');
    expect(urls.partnerInfo('svc')).toBe('https://issuer.example/.well-known/svc-partner-info');
    expect(urls.statusList(3)).toBe('https://issuer.example/statuslist/3');
    expect(urls.vct('student-card-v1')).toBe('https://issuer.example/vct/student-card-v1');
    expect(urls.vct('a b/c')).toBe('https://issuer.example/vct/a%20b%2Fc');
    expect(urls.credentialStatus(42)).toBe('https://issuer.example/credential-status/42');
    expect(urls.oid4vciToken).toBe('https://issuer.example/oid4vci/token');
    expect(urls.oid4vciNonce).toBe('https://issuer.example/oid4vci/nonce');
    expect(urls.oid4vciCredential).toBe('https://issuer.example/oid4vci/credential');
    expect(urls.oid4vciOffer('abc')).toBe('https://issuer.example/oid4vci/offers/abc');
    expect(urls.at('/oid4vci/token')).toBe('https://issuer.example/oid4vci/token');
  });

  it("percent-encodes a port's ':' in the did:web (did:web method §3.2)", () => {
    expect(new IssuerUrls('http://localhost:3000').did).toBe('did:web:localhost%3A3000');
  });

  it('drops a trailing slash from the origin', () => {
    expect(new IssuerUrls('https://issuer.example/').vct('x')).toBe('https://issuer.example/vct/x');
  });
});

describe('issuerFace and issuerIdentity', () => {
  const settings = {
    publicOrigin: 'https://issuer.example',
    sdJwtIssuer: 'did:web',
    partnerId: 'p-1',
    partnerInfoService: 'svc',
    statusList: { partitionSize: 1024, bits: 2, ttlSeconds: 60 },
  } as const;

  it("is the config's ISSUER_ORIGIN, SD_JWT_ISSUER, STATUS_LIST_* and partner settings", () => {
    const face = issuerFace(settings);
    expect(face.origin).toBe('https://issuer.example');
    expect(face.mode).toBe('did:web');
    expect(face.partner).toEqual({ id: 'p-1', infoService: 'svc' });
    expect(face.statusLists).toEqual({ partitionSize: 1024, bits: 2, ttlSeconds: 60 });
    expect(face.urls.statusList(0)).toBe('https://issuer.example/statuslist/0');
    // The identification follows the mode and origin: a did:web `iss`, which also signs the lists.
    expect(face.identification.iss).toBe('did:web:issuer.example');
    expect(face.identification.statusListIssuer).toBe('did:web:issuer.example');
  });

  it('signs with the key holder and issues the schema catalogue it is given', async () => {
    const dir = tempDir();
    try {
      const keys = await fileKeyHolder(join(dir, 'keys'), true, undefined, 'development');
      const catalog = { schemas: bundledSchemas(), typeMetadata: new Map(), claimsProviders: new Map() };
      const identity = issuerIdentity(issuerFace(settings), keys, catalog);
      expect(identity.keys).toBe(keys);
      expect(identity.catalog).toBe(catalog);
      expect(identity.origin).toBe('https://issuer.example');
      expect(identity.identification.header(identity.keys.current().signing)).toEqual({
        kid: `did:web:issuer.example#${keys.current().signing.kid}`,
      });
      keys.close();
    } finally {
      removeDir(dir);
    }
  });
});
