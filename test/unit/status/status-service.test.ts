import { join } from 'node:path';
import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list';
import { decodeJwt } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { type KeyRing, loadKeyRing } from '../../../src/keys/key-ring.js';
import { StatusService } from '../../../src/status/status-service.js';
import { openSqliteStore, type SqliteStore } from '../../../src/store/sqlite/index.js';
import { identityOf } from '../../fixtures/identity.js';
import { allocateThroughSignAndRecord } from '../../fixtures/status.js';
import { removeDir, tempDir } from '../../helpers/tmp.js';

// docs/several-instances.md "Storage engines": a status change is visible at once, even when it lands while a token is being built.
describe('StatusService token cache', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  async function setup() {
    const dir = tempDir();
    const store = openSqliteStore(join(dir, 'issuer.db'));
    cleanup.push(() => removeDir(dir));
    cleanup.push(() => store.close());
    const ring = await loadKeyRing(join(dir, 'keys'), { generateIfMissing: true });
    const nonces: number[] = [];
    for (let n = 0; n < 3; n++)
      nonces.push((await allocateThroughSignAndRecord(store.issuances, 16, 2)).revocationNonce);
    let duringSign: (() => void) | undefined;
    const service = (current: () => KeyRing = () => ring) =>
      new StatusService({
        identity: identityOf('https://issuer.example', current),
        store: store.status,
        lookup: (nonce) => store.issuances.getByNonce(nonce),
      });
    // A key ring lookup that lets a status change land between reading the statuses and caching.
    const racing = service(() => {
      const hook = duringSign;
      duringSign = undefined;
      hook?.();
      return ring;
    });
    return { store, status: service(), racing, nonces, during: (fn: () => void) => (duringSign = fn) };
  }

  const statusAt = async (store: SqliteStore, token: string, nonce: number) => {
    const record = await store.issuances.getByNonce(nonce);
    return getListFromStatusListJWT(token).getStatus(record!.statusSlot!.index);
  };

  it('a revoke that lands while a GET re-signs the list is not hidden behind the cached token', async () => {
    const { store, status, racing, nonces, during } = await setup();
    const nonce = nonces[0]!;
    during(() => store.status.applyStatusChange(nonce, 'revoke', new Date()));
    // The racing build started before the revoke: it may answer the old list to its own caller...
    await racing.partitionToken(0);
    expect((await store.issuances.getByNonce(nonce))!.status).toBe(1);
    // ...but every later read sees the revoke.
    const after = await status.partitionToken(0);
    expect(await statusAt(store, after.token, nonce)).toBe(1);
  });

  it('the same holds for publishAll and for suspend', async () => {
    const { store, status, racing, nonces, during } = await setup();
    during(() => store.status.applyStatusChange(nonces[1]!, 'suspend', new Date()));
    await racing.publishAll();
    expect(await statusAt(store, (await status.partitionToken(0)).token, nonces[1]!)).toBe(2);
  });

  it('without a change, a build is cached and served until ttl has passed', async () => {
    const { status } = await setup();
    const first = await status.partitionToken(0);
    expect((await status.partitionToken(0)).etag).toBe(first.etag);
    await status.change(123, 'revoke').catch(() => undefined);
    expect((await status.partitionToken(0)).etag).toBe(first.etag);
  });

  it('a token cached under another origin is signed again for this one, not served', async () => {
    const { store, status } = await setup();
    const ring = await loadKeyRing(join(tempDir(), 'keys'), { generateIfMissing: true });
    const elsewhere = new StatusService({
      identity: identityOf('https://old-origin.example', () => ring),
      store: store.status,
      lookup: (nonce) => store.issuances.getByNonce(nonce),
    });
    const old = await elsewhere.partitionToken(0);
    expect(decodeJwt(old.token).sub).toBe('https://old-origin.example/statuslist/0');
    const here = await status.partitionToken(0);
    expect(decodeJwt(here.token).sub).toBe('https://issuer.example/statuslist/0');
    // And cached for this origin from then on.
    expect((await status.partitionToken(0)).etag).toBe(here.etag);
  });
});
