import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLocalJWKSet, type JWK, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEVELOPMENT_KEY_ENCRYPTION_KEY } from '../../src/config/key-encryption-key.js';
import type { Pkcs11Backend } from '../../src/keys/pkcs11-backend.js';
import { openSealedKey } from '../../src/keys/sealed-key.js';
import { issueOverHttp, seedMembers } from '../fixtures/status.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { issueDirectlyAndOpen } from '../helpers/issue-and-open.js';
import { startIssuer, type TestIssuer } from '../helpers/issuer.js';
import { processToken, softHsmAvailable } from '../helpers/softhsm.js';

const available = softHsmAvailable('the KEY_BACKEND=pkcs11 issuer tests');

// docs/security.md "Keys in a hardware security module": with KEY_BACKEND=pkcs11 the credential,
// status-list and partner-JWT keys are made in the token and every signature is made there; the
// independent verifiers below know only the published keys.
describe.skipIf(!available)('an issuer with KEY_BACKEND=pkcs11 (SoftHSM2)', () => {
  let issuer: TestIssuer;
  let users: string[];

  beforeAll(async () => {
    issuer = await startIssuer({ env: processToken().env });
    users = await seedMembers(issuer, 'pkcs11', 6);
  });
  afterAll(async () => {
    await issuer?.close();
  });

  const published = async () =>
    (
      (await (await fetch(`${issuer.url}/.well-known/jwt-vc-issuer`)).json()) as {
        jwks: { keys: JWK[] };
      }
    ).jwks.keys;

  it('generates its keys in the token: sensitive, not extractable, and no file or row holds private material', async () => {
    const ring = issuer.ctx.keys.current();
    expect(issuer.ctx.keys.backend.name).toBe('pkcs11');
    const backend = issuer.ctx.keys.backend as Pkcs11Backend;
    for (const key of [ring.signing, ring.partner]) {
      expect(key.custody).toBe('pkcs11');
      expect(key.privateKey).toBeUndefined();
    }
    const stored: Record<string, any>[] = [];
    if (issuer.ctx.store.keys) {
      for (const row of await issuer.ctx.store.keys.list())
        stored.push(
          openSealedKey(DEVELOPMENT_KEY_ENCRYPTION_KEY, row.kid, row.purpose, row.sealed) as Record<
            string,
            any
          >,
        );
    } else {
      const dir = join(issuer.dir, 'keys');
      for (const f of readdirSync(dir).filter((f) => /^(credential-signing|partner-jwt)-.*\.json$/.test(f)))
        stored.push(JSON.parse(readFileSync(join(dir, f), 'utf8')));
    }
    expect(stored).toHaveLength(2);
    for (const data of stored) {
      expect(data.privateJwk).toBeUndefined();
      expect(JSON.stringify(data)).not.toMatch(/"d"\s*:/);
      expect(await backend.inspect(data.token.id)).toEqual({
        extractable: false,
        sensitive: true,
        token: true,
        valueRefused: true,
      });
    }
  });

  it('a hosted credential and its status list verify with the published keys', async () => {
    const vc = await issueOverHttp(issuer, users[0]!);
    const verified = await verifySdJwtVc(issuer.url, vc.compact);
    expect(verified.header).toMatchObject({ alg: 'ES256', kid: issuer.ctx.keys.current().signing.kid });
    const list = await (await fetch(vc.uri)).text();
    const { protectedHeader } = await jwtVerify(list, createLocalJWKSet({ keys: await published() }), {
      typ: 'statuslist+jwt',
    });
    expect(protectedHeader.kid).toBe(issuer.ctx.keys.current().signing.kid);
  });

  it('direct issuance: the emulator accepts the token-signed partner JWT and stores a verifiable credential', async () => {
    const compact = await issueDirectlyAndOpen(issuer);
    expect((await verifySdJwtVc(issuer.url, compact)).payload.iss).toBe(issuer.url);
  });

  it('rotation makes a new token key; the old one stays published and its credentials verify', async () => {
    const before = await issueOverHttp(issuer, users[1]!);
    const oldKid = issuer.ctx.keys.current().signing.kid;
    const res = await issuer.admin('/admin/keys/rotate', { purpose: 'credential-signing' });
    expect(res.status).toBe(200);
    const created = ((await res.json()) as { created: { kid: string } }).created.kid;
    expect(created).not.toBe(oldKid);
    expect(issuer.ctx.keys.current().signing.custody).toBe('pkcs11');
    const after = await issueOverHttp(issuer, users[2]!);
    expect((await verifySdJwtVc(issuer.url, after.compact)).header.kid).toBe(created);
    expect((await verifySdJwtVc(issuer.url, before.compact)).header.kid).toBe(oldKid);
    const kids = (await published()).map((k) => k.kid);
    expect(kids).toEqual(expect.arrayContaining([oldKid, created]));
    const partner = await issuer.admin('/admin/keys/rotate', { purpose: 'partner-jwt' });
    expect(partner.status).toBe(200);
    expect((await verifySdJwtVc(issuer.url, await issueDirectlyAndOpen(issuer))).payload.iss).toBe(
      issuer.url,
    );
  });

  it('/readyz makes a test signature through the token', async () => {
    const res = await fetch(`${issuer.url}/readyz`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { checks: { keys: unknown } }).checks.keys).toEqual({ ok: true });
  });
});
