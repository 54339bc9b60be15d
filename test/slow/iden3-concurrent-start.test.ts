import { afterAll, describe, it } from 'vitest';
import { firstStartsAgree } from '../helpers/first-starts.js';
import { removeDir } from '../helpers/issuer.js';
import { postgresAvailable } from '../helpers/services.js';

const available = await postgresAvailable('the repeated concurrent first-start test');

const INSTANCES = 6;
const ROUNDS = 8;

// docs/several-instances.md: instances starting together on an empty database agree on one Iden3
// identity. test/integration/iden3-concurrent-start.test.ts holds one round; a race between the
// starts shows only some of the time, so here it is run again and again.
describe.skipIf(!available)(
  'instances starting together on an empty PostgreSQL database, again and again',
  () => {
    const dirs: string[] = [];
    afterAll(() => {
      for (const d of dirs) removeDir(d);
    });

    it(`all of ${INSTANCES} simultaneous first starts come up with the one Iden3 DID, ${ROUNDS} times over`, async () => {
      await firstStartsAgree(dirs, INSTANCES, ROUNDS);
    });
  },
);
