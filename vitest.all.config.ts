/** `npm run test:all`: every test file, the slow ones (SLOW_TESTS in vitest.config.ts) included. */
import { defineConfig } from 'vitest/config';
import base, { SLOW_TESTS } from './vitest.config';

// Not mergeConfig: it concatenates arrays, and the point is to drop the slow files' exclusion.
export default defineConfig({
  ...base,
  test: { ...base.test, exclude: base.test!.exclude!.filter((glob) => !SLOW_TESTS.includes(glob)) },
});
