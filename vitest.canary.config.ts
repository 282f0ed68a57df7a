/** The suite's config, pointed at the canary only (`.ci/run` expects this run to fail). */
import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config';

export default mergeConfig(base, defineConfig({ test: { include: ['test/canary/*.canary.ts'] } }));
