-- As sqlite/migrations/006-upload-failed.sql: an upload the hosting service refuses for
-- good stops being retried and becomes 'failed'; `uploads retry` puts it back to 'pending'.
ALTER TABLE issuances DROP CONSTRAINT issuances_upload_state_check;
ALTER TABLE issuances ADD CONSTRAINT issuances_upload_state_check
  CHECK (upload_state IN ('pending', 'uploaded', 'failed'));
