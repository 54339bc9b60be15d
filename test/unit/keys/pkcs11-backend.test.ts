import { createPublicKey, verify as cryptoVerify, type JsonWebKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey, loadKeyRing } from '../../../src/keys/key-ring.js';
import { openPkcs11Backend, type Pkcs11Backend } from '../../../src/keys/pkcs11-backend.js';
import { softwareBackend } from '../../../src/keys/software-backend.js';
import { processToken, softHsmAvailable } from '../../helpers/softhsm.js';
import { tempDir } from '../../helpers/tmp.js';

const available = softHsmAvailable('the PKCS#11 key backend unit tests');

/** An independent check of a JWS ES256 signature (RFC 7518 §3.4: r||s) with the published key. */
function verifies(publicJwk: JWK, data: Buffer, signature: Buffer): boolean {
  const key = createPublicKey({ key: publicJwk as JsonWebKey, format: 'jwk' });
  return cryptoVerify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature);
}

describe.skipIf(!available)('KEY_BACKEND=pkcs11 on a SoftHSM2 token', () => {
  let backend: Pkcs11Backend;
  let token: ReturnType<typeof processToken>;

  beforeAll(async () => {
    token = processToken();
    backend = await openPkcs11Backend(
      { kind: 'pkcs11', module: token.module, token: { label: token.label } },
      token.pin,
    );
  });
  afterAll(async () => {
    await backend?.close();
  });

  it('generates keys inside the token: kid the RFC 7638 thumbprint, sensitive, never extractable, value refused', async () => {
    const dir = tempDir();
    const key = await generateKey(dir, 'credential-signing', new Date(), { backend });
    expect(key.custody).toBe('pkcs11');
    expect(key.privateKey).toBeUndefined();
    const { kid: _kid, alg: _alg, use: _use, ...bare } = key.publicJwk;
    expect(key.kid).toBe(await calculateJwkThumbprint(bare, 'sha256'));
    const stored = JSON.parse(readFileSync(key.file, 'utf8')) as Record<string, any>;
    // The file keeps the public key and where the token holds the private half: no private part.
    expect(stored.privateJwk).toBeUndefined();
    expect(stored.publicJwk.d).toBeUndefined();
    expect(stored.token).toMatchObject({
      backend: 'pkcs11',
      label: `issuer-kit credential-signing ${key.kid}`,
    });
    expect(await backend.inspect(stored.token.id)).toEqual({
      extractable: false,
      sensitive: true,
      token: true,
      valueRefused: true,
    });
    const data = Buffer.from('header.payload');
    const signature = await key.sign(data);
    expect(signature).toHaveLength(64);
    expect(verifies(key.publicJwk, data, signature)).toBe(true);
    expect(verifies(key.publicJwk, Buffer.from('other'), signature)).toBe(false);
  });

  it('signs concurrently on pooled sessions, every signature valid', async () => {
    const dir = tempDir();
    const key = await generateKey(dir, 'partner-jwt', new Date(), { backend });
    const messages = Array.from({ length: 64 }, (_, i) => Buffer.from(`message ${i}`));
    const signatures = await Promise.all(messages.map((m) => key.sign(m)));
    expect(signatures.map((s, i) => verifies(key.publicJwk, messages[i]!, s))).toEqual(
      messages.map(() => true),
    );
  });

  it('imports a software key as a non-extractable token object with the same kid', async () => {
    const dir = tempDir();
    const software = await generateKey(dir, 'credential-signing', new Date(), { backend: softwareBackend });
    const jwk = software.privateKey!.export({ format: 'jwk' }) as JWK;
    const { kid, custody } = await backend.importKey('credential-signing', jwk);
    expect(kid).toBe(software.kid);
    const id = (custody as unknown as { token: { id: string } }).token.id;
    expect(await backend.inspect(id)).toMatchObject({
      extractable: false,
      sensitive: true,
      valueRefused: true,
    });
    const held = await backend.open(
      { purpose: 'credential-signing', createdAt: new Date().toISOString(), ...custody },
      'imported',
    );
    const data = Buffer.from('signed in the token');
    expect(verifies(software.publicJwk, data, await held.sign(data))).toBe(true);
    // Importing again keeps the object already there.
    expect((await backend.importKey('credential-signing', jwk)).kid).toBe(kid);
  });

  it('a ring of token keys loads only with the pkcs11 backend, naming the file', async () => {
    const dir = tempDir();
    await generateKey(dir, 'credential-signing', new Date(), { backend });
    await generateKey(dir, 'partner-jwt', new Date(), { backend });
    const ring = await loadKeyRing(dir, { generateIfMissing: false, backend });
    expect(ring.signing.custody).toBe('pkcs11');
    await expect(loadKeyRing(dir, { generateIfMissing: false })).rejects.toThrow(
      /token: held by KEY_BACKEND=pkcs11 .*this start uses KEY_BACKEND=software/,
    );
  });

  it('a stored key the token does not hold is refused at load, naming the file', async () => {
    const dir = tempDir();
    const key = await generateKey(dir, 'credential-signing', new Date(), { backend });
    const stored = JSON.parse(readFileSync(key.file, 'utf8')) as Record<string, any>;
    stored.token.id = '00'.repeat(32);
    await expect(backend.open(stored as never, join(dir, 'x.json'))).rejects.toThrow(/holds no key/);
  });

  it('an unknown token label is one configuration line', async () => {
    await expect(
      openPkcs11Backend(
        { kind: 'pkcs11', module: token.module, token: { label: 'no-such-token' } },
        token.pin,
      ),
    ).rejects.toThrow(/^PKCS11_TOKEN_LABEL: no token labelled "no-such-token"$/);
  });
});
