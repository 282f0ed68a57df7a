-- Runs once, when the postgres container starts on an empty data volume.
-- Temporal's databases (temporal, temporal_visibility) are created by temporalio/auto-setup as
-- the superuser; settle's endpoint records get their own database and a role that owns it, so
-- settle's migrations can create tables in its public schema and touch nothing of Temporal's.
CREATE ROLE settle LOGIN PASSWORD 'settle';
CREATE DATABASE settle OWNER settle;
