/** The suite's config, pointed at the canary only (`.ci/run` expects this run to fail). */
import { defineConfig } from 'vitest/config';
import base from './vitest.config';

// Not mergeConfig: it concatenates arrays, which would run the canary *and* the whole suite.
export default defineConfig({ ...base, test: { ...base.test, include: ['test/canary/*.canary.ts'] } });
