import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { EMAIL_HASH_SALT_KEY, emailHasher, normaliseEmail } from '../../../src/issuance/email-hash.js';
import { openSqliteStore, type SqliteStore } from '../../../src/store/sqlite/index.js';

// `history --email`: the keyed hash stored with direct issuances.
describe('email hash', () => {
  const stores: SqliteStore[] = [];
  const open = () => {
    const store = openSqliteStore(':memory:');
    stores.push(store);
    return store;
  };
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });

  it('normalises case and surrounding whitespace only', () => {
    expect(normaliseEmail('  Alice.Smith+Tag@Example.ORG\t')).toBe('alice.smith+tag@example.org');
  });

  it('is HMAC-SHA256 under a 32-byte key made once in meta, shared by every hasher of the database', async () => {
    const store = open();
    expect(await store.meta.get(EMAIL_HASH_SALT_KEY)).toBeUndefined();
    const [a, b] = await Promise.all([
      emailHasher(store.meta)('alice@example.org'),
      emailHasher(store.meta)(' ALICE@example.org '),
    ]);
    expect(a).toBe(b);
    const key = Buffer.from((await store.meta.get(EMAIL_HASH_SALT_KEY))!, 'base64url');
    expect(key).toHaveLength(32);
    expect(a).toBe(createHmac('sha256', key).update('alice@example.org').digest('base64url'));
    expect(await emailHasher(store.meta)('bob@example.org')).not.toBe(a);
  });

  it('another database (another key) hashes the same address differently', async () => {
    const one = await emailHasher(open().meta)('alice@example.org');
    const two = await emailHasher(open().meta)('alice@example.org');
    expect(one).not.toBe(two);
  });
});
