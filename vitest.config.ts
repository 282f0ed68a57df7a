/**
 * `npm test`: the fast suite, every test file except the slow ones below. `npm run test:all`
 * (vitest.all.config.ts) runs them all; `.ci/run` runs both.
 */
import { defineConfig } from 'vitest/config';

/**
 * The slow files: scenario-style suites that kill and restart worker processes, wait out leases
 * and timeouts, drive a browser, or pack and install settle into a project of its own. They run
 * only in `npm run test:all`. The rule: a whole directory (or name pattern) where such scenarios
 * live, so a new file there is slow too; elsewhere a single file only when it is such a scenario
 * and takes half a minute or more. Measured per file in bench/results-test-durations.md.
 */
export const SLOW_TESTS: string[] = [
  // Directories of scenarios.
  'test/chaos/**', // real workers SIGKILLed and SIGSTOPped mid-effect, Postgres outages
  'test/mcp/gateway*.test.ts', // `settle mcp serve` processes in front of real servers, killed mid-call
  'test/ui/**', // headless Chromium against a real worker and the Web UI
  'test/package/**', // settle packed and installed offline into a project of its own
  'test/examples/**', // an example project built with its own tsc, its worker SIGKILLed
  'test/ai-sdk/**', // an AI SDK agent's worker SIGKILLed after the order was applied
  // Single scenario files among fast ones, each about half a minute or more on two quiet cores.
  'test/capability/operator-authority.test.ts', // a shell call left in doubt by a killed worker process
  'test/e2e/operating.test.ts', // a shell call in doubt, a worker that dies under `settle status`
  'test/cli/dev-workers.test.ts', // `settle dev --workers 2`, workers SIGKILLed
  'test/e2e/observability.test.ts', // a worker process's metrics and logs
];

/** The production lane's own files need its server and workers (npm run test:production). */
const NEVER: string[] = ['test/production/**', 'node_modules/**'];

/** `SETTLE_TEST_CANARY=1`: the command runs only the failing canary (.ci/run proves exit codes). */
export const CANARY = process.env.SETTLE_TEST_CANARY === '1';

export default defineConfig({
  test: {
    // One real Temporal dev server and one real PostgreSQL for the whole run; the workflow
    // bundle is built once there too (test/global-setup.ts).
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    include: CANARY ? ['test/canary/*.canary.ts'] : ['test/**/*.test.ts'],
    exclude: [...NEVER, ...SLOW_TESTS],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    server: { deps: { inline: ['kysely'] } },
  },
});
