import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { describe, expect, it } from 'vitest';
import { generateKey, KeyError, loadKeyRing, rotateKey } from '../../../src/keys/key-ring.js';
import { tempDir } from '../../helpers/tmp.js';

function writeKey(dir: string, name: string, body: unknown) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, name), JSON.stringify(body));
}

describe('key ring', () => {
  it('generates both keys on first dev run, mode 0600, kid = RFC 7638 thumbprint', async () => {
    const dir = tempDir();
    const ring = await loadKeyRing(dir, { generateIfMissing: true });
    for (const key of [ring.signing, ring.partner]) {
      expect(statSync(key.file).mode & 0o777).toBe(0o600);
      expect(key.kid).toBe(await calculateJwkThumbprint(key.publicJwk, 'sha256'));
      expect(key.alg).toBe('ES256');
      expect(key.publicJwk.d).toBeUndefined();
      expect(readFileSync(key.file, 'utf8')).toContain('"d"');
    }
    expect(ring.signing.kid).not.toBe(ring.partner.kid);
    // Stable across restarts.
    const again = await loadKeyRing(dir, { generateIfMissing: true });
    expect(again.signing.kid).toBe(ring.signing.kid);
  });

  it('refuses to generate in production', async () => {
    await expect(loadKeyRing(tempDir(), { generateIfMissing: false })).rejects.toThrow(/keys:generate/);
  });

  it('rejects a wrong curve, a missing private part and duplicate kids, naming the file', async () => {
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ format: 'jwk' });
    const dir1 = tempDir();
    writeKey(dir1, 'credential-signing-a.json', {
      purpose: 'credential-signing',
      createdAt: new Date().toISOString(),
      privateJwk: p384,
    });
    await expect(loadKeyRing(dir1, { generateIfMissing: true })).rejects.toThrow(
      /credential-signing-a\.json: privateJwk\.crv/,
    );

    const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
      format: 'jwk',
    }) as JWK;
    const { d: _d, ...pub } = p256;
    const dir2 = tempDir();
    writeKey(dir2, 'partner-jwt-b.json', {
      purpose: 'partner-jwt',
      createdAt: new Date().toISOString(),
      privateJwk: pub,
    });
    await expect(loadKeyRing(dir2, { generateIfMissing: true })).rejects.toThrow(
      /partner-jwt-b\.json: privateJwk\.d/,
    );

    const dir3 = tempDir();
    const body = {
      purpose: 'credential-signing',
      createdAt: new Date().toISOString(),
      privateJwk: { ...p256, kid: 'same' },
    };
    writeKey(dir3, 'credential-signing-x.json', body);
    writeKey(dir3, 'credential-signing-y.json', { ...body, retiredAt: new Date().toISOString() });
    await expect(loadKeyRing(dir3, { generateIfMissing: true })).rejects.toThrow(KeyError);
    await expect(loadKeyRing(dir3, { generateIfMissing: true })).rejects.toThrow(/duplicate kid same/);

    const dir4 = tempDir();
    writeKey(dir4, 'credential-signing-z.json', { purpose: 'credential-signing', privateJwk: p256 });
    await expect(loadKeyRing(dir4, { generateIfMissing: true })).rejects.toThrow(
      /credential-signing-z\.json: createdAt/,
    );
  });

  it('rotation keeps the retired key and makes the new one active', async () => {
    const dir = tempDir();
    const first = await loadKeyRing(dir, { generateIfMissing: true });
    const { created } = await rotateKey(dir, 'credential-signing');
    const ring = await loadKeyRing(dir, { generateIfMissing: false });
    expect(ring.signing.kid).toBe(created.kid);
    expect(ring.signingKeys.map((k) => k.kid)).toEqual([created.kid, first.signing.kid]);
    expect(ring.signingKeys[1]!.retiredAt).toBeInstanceOf(Date);
    expect(ring.partner.kid).toBe(first.partner.kid);
  });

  it('generateKey writes a loadable production key', async () => {
    const dir = tempDir();
    await generateKey(dir, 'credential-signing');
    await generateKey(dir, 'partner-jwt');
    const ring = await loadKeyRing(dir, { generateIfMissing: false });
    expect(ring.signingKeys).toHaveLength(1);
  });
});
