/**
 * One-shot migration entry point (the `migrate` service of docker-compose.yml).
 *
 *   DATABASE_URL  Postgres holding the endpoint records  (required)
 *
 * Brings the endpoint-record schema to the latest migration and exits: 0 when done (or already
 * up to date), 1 on error, 2 when DATABASE_URL is unset. Safe to run next to workers that
 * migrate on start: migrateToLatest serialises migrators with an advisory lock.
 */
import { assertReachable, migrateToLatest, redactUrl } from '../activities/store/database';

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    console.error('DATABASE_URL: must be set to the Postgres URL that holds the endpoint records');
    process.exit(2);
  }

  await assertReachable(databaseUrl);
  const applied = await migrateToLatest(databaseUrl);
  if (applied.length === 0) {
    console.log(`settle migrate: schema up to date (${redactUrl(databaseUrl)})`);
  } else {
    console.log(`settle migrate: applied ${applied.join(', ')} (${redactUrl(databaseUrl)})`);
  }
  process.exit(0);
}

main().catch((err) => {
  console.error(`settle migrate: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
