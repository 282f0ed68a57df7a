/**
 * `settle doctor`'s answers about DATABASE_URL: reachable, the record store's requirements as
 * worker start checks them (core/record-store-requirements.ts), TLS to the server, the schema.
 */
import { redactUrl, tlsFailureFix } from '../../activities/store/database';
import { readRecordStoreSettings } from '../../activities/store/record-store-settings';
import { asError, errorMessage } from '../../core/errors';
import { databaseTlsFinding, readDatabaseTls } from '../../core/database-tls';
import { DURABILITY_VARIABLE, parseDurabilityMode, recordStoreFindings } from '../../core/record-store-requirements';
import { migrations } from '../../migrations/index';
import pg from 'pg';
import type { DoctorLine } from './lines';

export async function databaseLines(env: NodeJS.ProcessEnv): Promise<DoctorLine[]> {
  const url = env.DATABASE_URL;
  if (!url)
    return [{ level: 'fail', line: 'database: DATABASE_URL is not set: set it to the Postgres URL that holds the endpoint records' }];
  let mode;
  try {
    mode = parseDurabilityMode(env[DURABILITY_VARIABLE]);
  } catch (err) {
    return [{ level: 'fail', line: `database: ${errorMessage(err)}` }];
  }
  let tls: DoctorLine;
  try {
    tls = tlsLine(url, env);
  } catch (err) {
    return [{ level: 'fail', line: `database: DATABASE_URL is not a URL pg can read (${errorMessage(err)})` }];
  }
  let settings;
  try {
    settings = await readRecordStoreSettings(url);
  } catch (err) {
    const fix = tlsFailureFix(asError(err));
    return [
      fix
        ? { level: 'fail', line: `database: ${redactUrl(url)} refused over TLS (${errorMessage(err)}): ${fix}` }
        : {
            level: 'fail',
            line: `database: ${redactUrl(url)} is unreachable (${errorMessage(err)}): check DATABASE_URL, the server and the network`,
          },
      tls,
    ];
  }
  const lines: DoctorLine[] = [{ level: 'ok', line: `database: ${redactUrl(url)} answers` }, tls];
  lines.push(...recordStoreFindings(settings, mode).map(({ level, line }) => ({ level, line })));
  lines.push(await schemaLine(url));
  return lines;
}

/** From the URL, as pg reads it (core/database-tls.ts): the mode, what of the server's certificate is verified, the fix when unsafe. */
function tlsLine(url: string, env: NodeJS.ProcessEnv): DoctorLine {
  return databaseTlsFinding(readDatabaseTls(url, env));
}

/** Whether every migration this settle knows has run (workers run them on start; `settle migrate` does too). */
async function schemaLine(url: string): Promise<DoctorLine> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    // Two statements: a query naming a table that does not exist fails as a whole.
    const { rows: table } = await client.query<{ found: boolean }>("SELECT to_regclass('kysely_migration') IS NOT NULL AS found");
    const names = table[0]?.found ? (await client.query<{ name: string }>('SELECT name FROM kysely_migration')).rows : [];
    const applied = new Set(names.map((r) => r.name));
    const pending = Object.keys(migrations).filter((name) => !applied.has(name));
    if (pending.length === 0) return { level: 'ok', line: `schema: up to date (${applied.size} migrations)` };
    return {
      level: 'warn',
      line: `schema: ${pending.length} migration(s) not applied (${pending.join(', ')}): run settle migrate (workers migrate on start)`,
    };
  } catch (err) {
    return {
      level: 'fail',
      line: `schema: could not read it (${errorMessage(err)}): check that DATABASE_URL's role may read its database`,
    };
  } finally {
    await client.end().catch(() => {});
  }
}
