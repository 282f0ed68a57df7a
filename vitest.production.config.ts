/**
 * The production-topology lane's tests (npm run test:production): run by scripts/production-lane.ts
 * against a Temporal server on PostgreSQL and two settle worker processes, never by `npm test`.
 */
import { defineConfig } from 'vitest/config';
import base from './vitest.config';

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    exclude: ['node_modules/**'], // the default config leaves the lane's files out
    include: [
      // Two external workers on the lane's task queue: the topology itself.
      'test/production/*.test.ts',
      // The e2e files that need no Web UI and no failpoint-killed workers.
      'test/e2e/orchestrator.test.ts',
      'test/e2e/trajectory.test.ts',
      'test/e2e/subagents.test.ts',
    ],
  },
});
