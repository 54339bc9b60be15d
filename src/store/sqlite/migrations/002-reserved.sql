-- Intentionally empty. Migration numbers run without gaps (the runner refuses one), and 002 was
-- skipped when the first migrations were written; this file closes the gap for every database.
SELECT 1;
