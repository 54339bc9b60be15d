import { describe, expect, it } from 'vitest';
import { parseKeyEncryptionKey } from '../../../src/config/key-encryption-key.js';
import { KeyError, newKeyData, parseKeyData } from '../../../src/keys/key-ring.js';
import { openSealedKey, sealKey } from '../../../src/keys/sealed-key.js';

const kek = Buffer.alloc(32, 7);

describe('sealed keys (AES-256-GCM under KEY_ENCRYPTION_KEY)', () => {
  it('opens to the same key, and the sealed text holds no part of the private key', async () => {
    const { kid, data } = await newKeyData('credential-signing', new Date('2030-01-01T00:00:00Z'));
    const sealed = sealKey(kek, kid, data);
    expect(sealed).not.toContain(String(data.privateJwk?.d));
    const key = await parseKeyData(openSealedKey(kek, kid, 'credential-signing', sealed), `database:${kid}`);
    expect(key.kid).toBe(kid);
    expect(key.publicJwk.kid).toBe(kid);
  });

  it('refuses another KEY_ENCRYPTION_KEY, another row (kid or purpose) and an altered text', async () => {
    const { kid, data } = await newKeyData('partner-jwt');
    const sealed = sealKey(kek, kid, data);
    expect(() => openSealedKey(Buffer.alloc(32, 8), kid, 'partner-jwt', sealed)).toThrow(KeyError);
    expect(() => openSealedKey(kek, 'other-kid', 'partner-jwt', sealed)).toThrow(KeyError);
    expect(() => openSealedKey(kek, kid, 'credential-signing', sealed)).toThrow(KeyError);
    const parts = sealed.split('.');
    // Another first character (one in 64 texts already starts with `A`).
    parts[3] = `${parts[3]!.startsWith('A') ? 'B' : 'A'}${parts[3]!.slice(1)}`;
    expect(() => openSealedKey(kek, kid, 'partner-jwt', parts.join('.'))).toThrow(/does not open/);
  });

  it('KEY_ENCRYPTION_KEY is 32 bytes as hex or base64', () => {
    expect(parseKeyEncryptionKey('ab'.repeat(32))).toEqual(Buffer.alloc(32, 0xab));
    expect(parseKeyEncryptionKey(Buffer.alloc(32, 1).toString('base64'))).toEqual(Buffer.alloc(32, 1));
    expect(parseKeyEncryptionKey('short')).toMatch(/32 bytes/);
  });
});
