import { recordColumns } from '../issuance-row.js';

/**
 * The pending uploads as `i`: the outbox's rows in issuance_envelopes (migration 023), whose
 * issuances are found by primary key, never by a scan of issuances.
 */
const PENDING = `issuance_envelopes e JOIN issuances i ON i.credential_id = e.credential_id
  WHERE e.due_at IS NOT NULL AND i.upload_state = 'pending'`;

/** The outbox's reads (exported for the query-plan tests); each names its parameters. */
export const OUTBOX_SQL = {
  /** $1 now, $2 the lease's end, $3 how many. */
  leaseDue: `UPDATE issuances i SET lease_until = $2
    FROM (SELECT e.credential_id, e.body FROM issuance_envelopes e JOIN issuances p ON p.credential_id = e.credential_id
          WHERE e.due_at <= $1 AND p.upload_state = 'pending' AND (p.lease_until IS NULL OR p.lease_until < $1)
          ORDER BY e.due_at LIMIT $3 FOR UPDATE OF p SKIP LOCKED) due
    WHERE i.credential_id = due.credential_id
    RETURNING ${recordColumns('i')}, due.body AS envelope_body`,
  // A leased upload is not due before its lease ends (else the worker would spin on it).
  nextDue: `SELECT MIN(GREATEST(i.next_attempt_at, i.lease_until)) AS t FROM ${PENDING}`,
  countPending: `SELECT count(*)::int AS n FROM ${PENDING}`,
  oldestPending: `SELECT min(i.created_at) AS t FROM ${PENDING}`,
  // Through issuances_upload_error_created: a failed upload always has an error (migration 023).
  countFailed:
    "SELECT count(*)::int AS n FROM issuances WHERE last_error IS NOT NULL AND upload_state = 'failed'",
  /**
   * $1 now, $2 the credential id the last page ended at ('' from the start), $3 the page's size,
   * $4 how many rows of issuance_envelopes_due's head to look at.
   *
   * A page of issuance_envelopes_undue (migration 025): each pending upload in it is given
   * its issuance's due time. The page is walked one index entry after another, each step the
   * next credential id after the last, so that no plan, with or without statistics, cached or
   * not, can read all the index's rows and sort them; each row of the page, and of the head, finds
   * its two rows by primary key in its own subquery (LIMIT 1 keeps it from being merged into a
   * join that reads the whole table), and the updates find their rows by primary key through
   * `= ANY`, as record_issuances does.
   *
   * The head of issuance_envelopes_due: a failed upload whose row still has a due time (an
   * instance of a version before 023 gave it up, writing issuances only) is taken out of that
   * index, which the outbox's reads would otherwise pass over every time.
   *
   * Rows another statement holds are skipped (found on a later pass), so this never waits on a
   * lock and takes part in no deadlock.
   */
  repairUnseen: `WITH RECURSIVE walk (credential_id, n) AS (
         SELECT (SELECT credential_id FROM issuance_envelopes WHERE due_at IS NULL AND credential_id > $2
                 ORDER BY credential_id LIMIT 1), 1
         UNION ALL
         SELECT (SELECT e.credential_id FROM issuance_envelopes e WHERE e.due_at IS NULL AND e.credential_id > w.credential_id
                 ORDER BY e.credential_id LIMIT 1), w.n + 1
         FROM walk w WHERE w.credential_id IS NOT NULL AND w.n < $3),
       page AS (SELECT credential_id FROM walk WHERE credential_id IS NOT NULL),
       unseen AS (SELECT u.credential_id FROM page CROSS JOIN LATERAL
         (SELECT e.credential_id FROM issuance_envelopes e JOIN issuances i ON i.credential_id = e.credential_id
          WHERE e.credential_id = page.credential_id AND i.credential_id = page.credential_id
            AND e.due_at IS NULL AND i.upload_state = 'pending'
          LIMIT 1 FOR UPDATE OF e, i SKIP LOCKED) u),
       head AS (SELECT credential_id FROM issuance_envelopes WHERE due_at IS NOT NULL ORDER BY due_at LIMIT $4),
       stale AS (SELECT s.credential_id FROM head CROSS JOIN LATERAL
         (SELECT e.credential_id FROM issuance_envelopes e JOIN issuances i ON i.credential_id = e.credential_id
          WHERE e.credential_id = head.credential_id AND i.credential_id = head.credential_id
            AND e.due_at IS NOT NULL AND i.upload_state = 'failed'
          LIMIT 1 FOR UPDATE OF e, i SKIP LOCKED) s),
       due AS (UPDATE issuance_envelopes e
         SET due_at = COALESCE((SELECT i.next_attempt_at FROM issuances i WHERE i.credential_id = e.credential_id), $1)
         WHERE e.credential_id = ANY (ARRAY(SELECT credential_id FROM unseen)) RETURNING e.credential_id),
       undue AS (UPDATE issuance_envelopes e SET due_at = NULL
         WHERE e.credential_id = ANY (ARRAY(SELECT credential_id FROM stale)) RETURNING e.credential_id)
     SELECT (SELECT count(*) FROM page)::int AS seen, (SELECT max(credential_id) FROM page) AS last,
       (SELECT count(*) FROM due)::int AS repaired, (SELECT count(*) FROM undue)::int AS cleared`,
};

/** How many rows of issuance_envelopes_undue one outbox sweep looks at (repairUnseenUploads). */
export const UNSEEN_PAGE = 500;
/** How many rows at the head of issuance_envelopes_due one outbox sweep looks at for stale ones. */
export const STALE_HEAD = 50;
