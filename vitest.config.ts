import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // One real Temporal dev server and one real PostgreSQL for the whole run; the workflow
    // bundle is built once there too (test/global-setup.ts).
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    // The production lane's own files need its server and workers (npm run test:production).
    exclude: ['test/production/**', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    server: { deps: { inline: ['kysely'] } },
  },
});
