-- Admin history reads page by keyset (docs/interface.md "Paging"): a filter is read through an
-- index that yields its rows in created_at order. SQLite uses a partial index only when the query
-- names the index's own WHERE term, so the rare status values get one each (`status != 0` of
-- issuances_nonzero_status does not serve `status = 1`); no insert writes them (a credential
-- starts valid). Iden3 credentials get one too: a full (proof_type, …) index would be written by
-- every insert and could be chosen over issuances_holder_created by the duplicate check. The
-- common values (valid, SD_JWT_VC, pending uploads) are read through issuances_created, checked
-- row by row within a bounded read.
CREATE INDEX issuances_revoked_created ON issuances (created_at) WHERE status = 1;
CREATE INDEX issuances_suspended_created ON issuances (created_at) WHERE status = 2;
CREATE INDEX issuances_bjj_created ON issuances (created_at) WHERE proof_type = 'BJJ_SIG_2021';
