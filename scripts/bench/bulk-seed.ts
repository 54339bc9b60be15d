import type { SqliteStore } from '../../src/store/sqlite/index.js';
import { issuance, PARTITION_SIZE } from './scale.js';

/** Rows written per transaction: each commit's WAL is checkpointed before the next grows it. */
const CHUNK = 250_000;
/** The newest issuances, recorded through the store with their envelopes, uploads still pending. */
const PENDING = 50;
const DAY = 86_400_000;

/**
 * Millions of issuances on SQLite in minutes, for the benches that read a large table rather than
 * measure its inserts (`history-count`): the rows are built by SQL (`INSERT … SELECT` over a
 * recursive CTE) with the issuances table's own indexes dropped, and those indexes made again from
 * their definitions in the schema once the rows are in (a sort each, not millions of random
 * inserts). The i-th issuance is created at `endMs - (rows - 1 - i) * stepMs` (whole seconds),
 * valid 180 days, with the mix of `scale`'s seed: every third `kyc-v1` (else `membership-v1`),
 * every tenth `BJJ_SIG_2021`, every twentieth direct with an e-mail hash, 1% revoked, 0.5%
 * suspended, 0.2% uploads failed, the rest uploaded (no envelope kept), and the newest
 * {@link PENDING} recorded by the store's own insert with their envelopes, pending. Status slots
 * run in order through full partitions of {@link PARTITION_SIZE} 2-bit entries, each partition's
 * `allocated` its rows, as the server's slot allocation reads them (one more, empty, after).
 */
export async function seedSqliteBulk(
  store: SqliteStore,
  rows: number,
  { endMs, stepMs }: { endMs: number; stepMs: number },
): Promise<void> {
  const db = store.db;
  const bulk = Math.max(0, rows - PENDING);
  // Whole seconds: strftime's fraction of a whole second is exact ('.000', as toISOString writes it).
  const startS = Math.floor((endMs - (rows - 1) * stepMs) / 1000);
  const stepS = Math.max(1, Math.round(stepMs / 1000));
  const createdMs = (i: number) => (startS + i * stepS) * 1000;
  const indexes = db
    .prepare<[], { name: string; sql: string }>(
      "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'issuances' AND sql IS NOT NULL",
    )
    .all();
  // The primary key's index takes random UUIDs: a cache that holds it keeps its inserts off the disk.
  const cache = db.pragma('cache_size', { simple: true }) as number;
  db.pragma('cache_size = -1048576');
  try {
    db.transaction(() => {
      for (const { name } of indexes) db.exec(`DROP INDEX ${name}`);
      const partitions = db.prepare(
        `INSERT INTO status_list_partitions (partition, size, bits, allocated, created_at) VALUES (?, ?, 2, ?, ?)`,
      );
      const full = Math.ceil(rows / PARTITION_SIZE) + 1;
      for (let p = 0; p < full; p++)
        partitions.run(
          p,
          PARTITION_SIZE,
          Math.max(0, Math.min(PARTITION_SIZE, bulk - p * PARTITION_SIZE)),
          new Date(createdMs(p * PARTITION_SIZE)).toISOString(),
        );
    })();
    const insert = db.prepare<{ lo: number; hi: number; start: number; step: number }>(
      `INSERT INTO issuances (credential_id, channel, user_id, holder_did, schema_id, proof_type, revocation_nonce,
         status_partition, status_index, subject_hash, kid, created_at, expires_at, status, revoked_at, suspended_at,
         envelope, envelope_sha256, upload_state, upload_attempts, last_error, storage_path, uploaded_at, email_hash)
       WITH RECURSIVE n(i) AS (SELECT @lo UNION ALL SELECT i + 1 FROM n WHERE i + 1 < @hi),
       r AS (SELECT i, i + 1 AS nonce, @start + i * @step AS t,
         lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2)
           || '-' || substr('89ab', 1 + abs(random() % 4), 1) || substr(lower(hex(randomblob(2))), 2) || '-'
           || lower(hex(randomblob(6))) AS id FROM n),
       s AS (SELECT *, strftime('%Y-%m-%dT%H:%M:%fZ', t, 'unixepoch') AS created,
         CASE WHEN nonce % 100 = 0 THEN 1 WHEN nonce % 200 = 1 THEN 2 ELSE 0 END AS status,
         nonce % 500 = 7 AS failed FROM r)
       SELECT id, CASE WHEN i % 20 = 0 THEN 'direct' ELSE 'hosted' END, 'user-' || i, 'did:example:holder-' || (i % 5000),
         CASE WHEN i % 3 = 0 THEN 'kyc-v1' ELSE 'membership-v1' END,
         CASE WHEN i % 10 = 0 THEN 'BJJ_SIG_2021' ELSE 'SD_JWT_VC' END, nonce,
         i / ${PARTITION_SIZE}, i % ${PARTITION_SIZE}, lower(hex(randomblob(32))), 'bench', created,
         strftime('%Y-%m-%dT%H:%M:%fZ', t + ${(180 * DAY) / 1000}, 'unixepoch'), status,
         CASE WHEN status = 1 THEN created END, CASE WHEN status = 2 THEN created END,
         '', lower(hex(randomblob(32))), CASE WHEN failed THEN 'failed' ELSE 'uploaded' END,
         CASE WHEN failed THEN 5 ELSE 1 END, CASE WHEN failed THEN 'bench: upload failed' END,
         CASE WHEN failed THEN NULL ELSE '/vcs/' || id END, CASE WHEN failed THEN NULL ELSE created END,
         CASE WHEN i % 20 = 0 THEN 'hash-' || (i % 400) END
       FROM s`,
    );
    for (let lo = 0; lo < bulk; lo += CHUNK)
      db.transaction(() =>
        insert.run({ lo, hi: Math.min(bulk, lo + CHUNK), start: startS, step: stepS }),
      ).immediate();
    db.transaction(() => {
      for (const { sql } of indexes) db.exec(sql);
    }).immediate();
  } finally {
    db.pragma(`cache_size = ${cache}`);
  }
  // The newest through the store, as the server records them: envelope kept, upload pending.
  for (let i = bulk; i < rows; i++) {
    const outcome = await store.issuances.insertIssuance(issuance(i, createdMs(i)), { dedupe: false });
    if (outcome.kind !== 'inserted') throw new Error(`seeding: ${outcome.kind}`);
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
}
