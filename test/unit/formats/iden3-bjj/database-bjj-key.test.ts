import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newBjjKeyContent } from '../../../../src/formats/iden3-bjj/bjj-key.js';
import { BJJ_SEAL_PURPOSE, databaseBjjKey } from '../../../../src/formats/iden3-bjj/database-bjj-key.js';
import { sealJson } from '../../../../src/keys/sealed-key.js';
import { silentLogger } from '../../../../src/observability/logger.js';
import type { StoredIden3Key } from '../../../../src/store/store.js';
import { tempDir } from '../../../helpers/tmp.js';

// src/formats/iden3-bjj/database-bjj-key.ts: instances starting together on one database agree on
// the first key row written. Here the other instance stores its key, then its identity, right
// after this one's first look found neither (the interleaving behind a CI failure under load).
describe('the Iden3 key of instances starting together', () => {
  it('takes the key row another instance committed between its reads, never refusing as a copied database', async () => {
    const kek = randomBytes(32);
    const theirs = newBjjKeyContent('development');
    const theirRow: StoredIden3Key = {
      publicKey: theirs.publicKey,
      createdAt: new Date(),
      sealed: sealJson(kek, theirs.publicKey, BJJ_SEAL_PURPOSE, theirs),
    };
    const db: { key?: StoredIden3Key; identity?: { did: string; publicKey: string } } = {};
    let looks = 0;
    const keys = {
      iden3Key: async () => db.key,
      putIden3KeyIfAbsent: async (row: StoredIden3Key) => {
        db.key ??= row;
        return db.key;
      },
    };
    const iden3 = {
      getIdentity: async () => {
        const seen = db.identity;
        // The other instance commits its key row, then its identity, once this one has looked.
        if (looks++ === 0) {
          db.key = theirRow;
          db.identity = { did: 'did:iden3:privado:test:theirs', publicKey: theirs.publicKey };
        }
        return seen as never;
      },
    };
    const key = await databaseBjjKey(keys as never, iden3, {
      keysDir: tempDir(),
      generateIfMissing: true,
      kek,
      log: silentLogger(),
    });
    expect(key.publicKeyHex).toBe(theirs.publicKey);
  });
});
