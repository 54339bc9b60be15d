import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { firstStartsAgree, startInstance } from '../helpers/first-starts.js';
import { removeDir } from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable } from '../helpers/services.js';

const available = await postgresAvailable('the concurrent first-start test');

const INSTANCES = 6;

// docs/several-instances.md: instances starting together on an empty database agree on one Iden3
// identity. One round here; test/slow/iden3-concurrent-start.test.ts repeats it, as a race shows
// only some of the time.
describe.skipIf(!available)('instances starting together on an empty PostgreSQL database', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) removeDir(d);
  });
  const start = (databaseUrl: string, kek: string) => startInstance(dirs, databaseUrl, kek);

  it(`all of ${INSTANCES} simultaneous first starts come up with the one Iden3 DID`, async () => {
    await firstStartsAgree(dirs, INSTANCES, 1);
  });

  it('a claims tree left without its identity still refuses the start', async () => {
    const db = await createTempDatabase();
    const kek = randomBytes(32).toString('hex');
    try {
      await (await start(db.url, kek)).close();
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        await client.query('DELETE FROM iden3_identity');
      } finally {
        await client.end();
      }
      await expect(start(db.url, kek)).rejects.toThrow(
        /^iden3_tree_roots: a claims tree exists without an identity/,
      );
    } finally {
      await db.drop();
    }
  });
});
