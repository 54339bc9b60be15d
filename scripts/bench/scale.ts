import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';
import type { HistoryQuery, NewIssuance } from '../../src/store/store.js';
import type { Row } from './issuance.js';

/**
 * Admin history reads as the issuances table grows (docs/interface.md "Paging"), on SQLite:
 * `BENCH_SCALE_ROWS` (default 10000,300000) issuances recorded through the store's insert, then
 * the first page and a walk to the last page by cursor, for no filter and each filter, and the
 * last page by OFFSET for comparison. Reads run in this process: what one page holds the thread.
 */
const SIZES = (process.env.BENCH_SCALE_ROWS || '10000,300000').split(',').map(Number);
const T0 = Date.parse('2030-01-01T00:00:00Z');
const MINUTE = 60_000;

export function issuance(i: number, createdAtMs = T0 + i * MINUTE): NewIssuance {
  const credentialId = randomUUID();
  const createdAt = new Date(createdAtMs);
  // Valid for 30 days: a table of years holds mostly expired credentials.
  const expiresAt = new Date(createdAt.getTime() + 30 * 86_400_000);
  return {
    credentialId,
    channel: i % 20 === 0 ? 'direct' : 'hosted',
    userId: `user-${i}`,
    holderDid: `did:example:holder-${i % 5000}`,
    schemaId: i % 3 === 0 ? 'kyc-v1' : 'membership-v1',
    proofType: i % 10 === 0 ? 'BJJ_SIG_2021' : 'SD_JWT_VC',
    revocationNonce: i + 1,
    statusSlot: null,
    subjectHash: credentialId,
    kid: 'bench',
    createdAt,
    expiresAt,
    ...(i % 20 === 0 ? { emailHash: `hash-${i % 400}` } : {}),
    envelope: {
      holderDid: `did:example:holder-${i % 5000}`,
      schemaId: 'membership-v1',
      expiresAt: expiresAt.toISOString(),
      data: randomBytes(300).toString('base64'),
      iv: 'aXY=',
      authTag: 'dGFn',
      encryptedKey: 'a2V5',
      externalId: credentialId,
    },
  };
}

export async function seed(
  store: SqliteStore,
  rows: number,
  createdAtMs: (i: number) => number = (i) => T0 + i * MINUTE,
): Promise<void> {
  for (let i = 0; i < rows; i += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, rows - i) }, (_, k) =>
        store.issuances.insertIssuance(issuance(i + k, createdAtMs(i + k)), { dedupe: false }),
      ),
    );
  }
  // Statuses and uploads as a live table has them: 1% revoked, 0.5% suspended, 0.2% failed
  // uploads, the newest 50 still pending, the rest uploaded.
  store.db.exec(`
    UPDATE issuances SET status = 1, revoked_at = created_at WHERE revocation_nonce % 100 = 0;
    UPDATE issuances SET status = 2, suspended_at = created_at WHERE revocation_nonce % 200 = 1;
    UPDATE issuances SET upload_state = 'uploaded', next_attempt_at = NULL, storage_path = '/vcs/x'
      WHERE revocation_nonce <= ${rows - 50};
    UPDATE issuances SET upload_state = 'failed', next_attempt_at = NULL WHERE revocation_nonce % 500 = 7;
  `);
}

const FILTERS: Array<[string, Partial<HistoryQuery>]> = [
  ['no filter', {}],
  ['status=valid', { status: 'valid' }],
  ['status=revoked', { status: 'revoked' }],
  ['status=suspended', { status: 'suspended' }],
  ['status=expired', { status: 'expired' }],
  ['status=upload_pending', { status: 'upload_pending' }],
  ['status=upload_failed', { status: 'upload_failed' }],
  ['schemaId', { schemaId: 'kyc-v1' }],
  ['proofType=BJJ_SIG_2021', { proofType: 'BJJ_SIG_2021' }],
  ['holderDid', { holderDid: 'did:example:holder-42' }],
  ['email', { emailHash: 'hash-20' }],
  ['schemaId+status=revoked', { schemaId: 'kyc-v1', status: 'revoked' }],
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

export async function benchScale(): Promise<Row[]> {
  const rows: Row[] = [];
  for (const size of SIZES) {
    const dir = mkdtempSync(join(tmpdir(), 'bench-scale-'));
    const store = openSqliteStore(join(dir, 'issuer.db'));
    try {
      const started = performance.now();
      await seed(store, size);
      process.stdout.write(
        `  (seeded ${size} issuances in ${((performance.now() - started) / 1000).toFixed(1)} s)\n`,
      );
      const now = new Date(T0 + (size - 1000) * MINUTE);
      const base = { limit: 100, order: 'createdAt_desc' as const, now };
      for (const [name, filter] of FILTERS) {
        const first: number[] = [];
        for (let k = 0; k < 5; k++) {
          const t = performance.now();
          await store.history.list({ ...base, ...filter });
          first.push(performance.now() - t);
        }
        // Walk every page by cursor: the slowest page is the one that holds the thread longest.
        const pages: number[] = [];
        let after: HistoryQuery['after'];
        do {
          const t = performance.now();
          const page = await store.history.list({ ...base, ...filter, after });
          pages.push(performance.now() - t);
          after = page.next ?? undefined;
        } while (after);
        const label = `scale ${size.toLocaleString('en-US')}: ${name}`;
        rows.push(
          { name: `${label}, first page`, value: median(first), unit: 'ms' },
          { name: `${label}, last page by cursor`, value: pages[pages.length - 1]!, unit: 'ms' },
          { name: `${label}, median of ${pages.length} pages`, value: median(pages), unit: 'ms' },
          // The slowest page includes whatever else the machine did meanwhile (GC, other processes).
          { name: `${label}, slowest page`, value: Math.max(...pages), unit: 'ms' },
        );
      }
      const total = (await store.history.list({ ...base, limit: 1, total: true })).total ?? 0;
      const t = performance.now();
      await store.history.list({ ...base, page: Math.ceil(total / 100) });
      rows.push({
        name: `scale ${size.toLocaleString('en-US')}: no filter, last page by OFFSET`,
        value: performance.now() - t,
        unit: 'ms',
      });
    } finally {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return rows;
}
