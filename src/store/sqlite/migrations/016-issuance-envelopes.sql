-- Envelopes until delivered (docs/architecture.md "Envelopes until delivered").
--
-- An issuance's envelope (the dstorage/vcs body, about 2.5 KB of a 2.8 KB row) is needed only
-- until the hosting service has stored it. It now lives in issuance_envelopes, written in the
-- same transaction as its issuance and deleted by the same transaction as its "uploaded" mark, so
-- that table holds the outbox's backlog (its freed pages are reused) and issuances keep rows a
-- fifth of the size. The issuance keeps the SHA-256 of the ciphertext (envelope_sha256, hex, of
-- the decoded `data`), written with it.
--
-- issuances.envelope is retired and read by nothing. SQLite drops a column (or rebuilds the table)
-- only by rewriting every row, each page through the WAL: hours of I/O and twice the disk on a
-- large table. So it stays: rows recorded from now on hold '' in it, and rows recorded before keep
-- what it held (a delivered one its envelope without the ciphertext, with `dataSha256`; one
-- delivered before that, the whole envelope). The envelopes of uploads pending or failed now are
-- copied to issuance_envelopes, so the outbox still sends them.
ALTER TABLE issuances ADD COLUMN envelope_sha256 TEXT;

CREATE TABLE issuance_envelopes (
  credential_id  TEXT PRIMARY KEY,   -- the issuance's
  body           TEXT NOT NULL       -- JSON of the dstorage/vcs body (store.ts UploadBody)
);

INSERT INTO issuance_envelopes (credential_id, body)
  SELECT credential_id, envelope FROM issuances INDEXED BY issuances_outbox_pending
  WHERE upload_state = 'pending' AND json_extract(envelope, '$.data') IS NOT NULL;
INSERT INTO issuance_envelopes (credential_id, body)
  SELECT credential_id, envelope FROM issuances INDEXED BY issuances_upload_failed
  WHERE upload_state = 'failed' AND json_extract(envelope, '$.data') IS NOT NULL;
