/**
 * `settle doctor`'s answers about DATABASE_URL: reachable, the record store's requirements as
 * worker start checks them (core/record-store-requirements.ts), TLS to the server, the schema.
 */
import { redactUrl } from '../../activities/store/database';
import { readRecordStoreSettings } from '../../activities/store/record-store-settings';
import { errorMessage } from '../../core/errors';
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
  let settings;
  try {
    settings = await readRecordStoreSettings(url);
  } catch (err) {
    return [
      {
        level: 'fail',
        line: `database: ${redactUrl(url)} is unreachable (${errorMessage(err)}): check DATABASE_URL, the server and the network`,
      },
    ];
  }
  const lines: DoctorLine[] = [{ level: 'ok', line: `database: ${redactUrl(url)} answers` }, tlsLine(url)];
  lines.push(...recordStoreFindings(settings, mode).map(({ level, line }) => ({ level, line })));
  lines.push(await schemaLine(url));
  return lines;
}

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\]|::1)$/;

/** From the URL, as pg reads it: TLS is asked for with sslmode (and sslrootcert for a private CA). */
function tlsLine(url: string): DoctorLine {
  const parsed = new URL(url);
  const sslmode = parsed.searchParams.get('sslmode') ?? (parsed.searchParams.get('ssl') === 'true' ? 'require' : null);
  if (sslmode && sslmode !== 'disable') return { level: 'ok', line: `database tls: sslmode=${sslmode}` };
  if (LOOPBACK.test(parsed.hostname) || parsed.hostname === '') return { level: 'ok', line: 'database tls: none (a loopback server)' };
  return {
    level: 'warn',
    line: `database tls: none to ${parsed.hostname}: add ?sslmode=verify-full (and sslrootcert=<CA file> for a private CA) to DATABASE_URL`,
  };
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
