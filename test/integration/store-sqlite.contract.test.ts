import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { describeStoreContract } from '../contract/store-contract.js';

describeStoreContract('SQLite', async () => openSqliteStore(':memory:'));

describe('SQLite only', () => {
  const dir = mkdtempSync(join(tmpdir(), 'issuer-kit-locks-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('named locks hold across the connections of one file (the workers of WORKERS=N)', async () => {
    const file = join(dir, 'issuer.db');
    const first = openSqliteStore(file);
    const second = openSqliteStore(file);
    try {
      expect(await first.locks.tryAcquire('renewal-sweep', 'worker-1', 60_000)).toBe(true);
      expect(await second.locks.tryAcquire('renewal-sweep', 'worker-2', 60_000)).toBe(false);
      await second.locks.release('renewal-sweep', 'worker-2');
      expect(await second.locks.tryAcquire('renewal-sweep', 'worker-2', 60_000)).toBe(false);
      await first.locks.release('renewal-sweep', 'worker-1');
      expect(await second.locks.tryAcquire('renewal-sweep', 'worker-2', 60_000)).toBe(true);
    } finally {
      await first.close();
      await second.close();
    }
  });
});
