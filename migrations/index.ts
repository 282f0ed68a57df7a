/**
 * The ordered list of migrations. Imported statically (not read from the file system) so the
 * same list works under tsx, vitest and a bundled worker image.
 */
import type { Migration, MigrationProvider } from 'kysely';
import * as m0001 from './0001_endpoint_records';
import * as m0002 from './0002_malformed_calls';
import * as m0003 from './0003_capability_budgets';
import * as m0004 from './0004_shell_runs';
import * as m0005 from './0005_record_host';
import * as m0006 from './0006_operator_settlement_counts';
import * as m0007 from './0007_event_write_time';

export const migrations: Record<string, Migration> = {
  '0001_endpoint_records': m0001,
  '0002_malformed_calls': m0002,
  '0003_capability_budgets': m0003,
  '0004_shell_runs': m0004,
  '0005_record_host': m0005,
  '0006_operator_settlement_counts': m0006,
  '0007_event_write_time': m0007,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
