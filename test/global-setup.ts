/**
 * Starts the real stack once per test run (Temporal dev server + PostgreSQL, migrated) and
 * bundles the workflow code once; tests receive the addresses through `inject`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { bundleWorkflowCode } from '@temporalio/worker';
import { startStack } from '../stack/index';
import { SETTLE_DIR } from '../stack/paths';
import { settleBundleOptions } from '../workers/workflow-bundle';
import { generateOperatorKey } from '../activities/operator/operator-keys';
import { TEST_OPERATOR } from './support/operator-name';
import './support/provided-context';

export default async function setup(project: TestProject) {
  // The node under test first on PATH, so `npm`, `npx` and `node` run by tests and their children
  // are this node too, not whichever one the machine has (.ci/run runs the suite on each LTS line).
  process.env.PATH = [path.dirname(process.execPath), process.env.PATH].filter(Boolean).join(path.delimiter);
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-test-'));
  fs.chmodSync(runDir, 0o755);
  // Shell run markers (activities/tools/shell-markers.ts) of every in-process and spawned worker.
  process.env.SETTLE_RUNS_DIR ??= path.join(runDir, 'runs');
  // The on-call operator's key (test/support/operator.ts), as an operator provisions it: the private
  // half for the CLI runs and tests that act as the operator, the public half for every worker.
  if (!process.env.SETTLE_OPERATOR_KEY) {
    const { privateText, publicText } = generateOperatorKey(TEST_OPERATOR);
    process.env.SETTLE_OPERATOR_KEY = privateText;
    process.env.SETTLE_OPERATOR_KEYS = publicText;
  }
  // The production lane (scripts/production-lane.ts) runs its own Temporal server on PostgreSQL.
  const external = process.env.SETTLE_EXTERNAL_TEMPORAL_ADDRESS;
  const stack = external
    ? {
        temporal: { address: external, uiUrl: null },
        databaseUrl: process.env.SETTLE_EXTERNAL_DATABASE_URL ?? '',
        stop: async () => {},
      }
    : await startStack({
        log: (line) => console.error(`[stack] ${line}`),
        postgres: { dataDir: path.join(SETTLE_DIR, 'pg', `test-${process.pid}`), ephemeral: true },
      });
  if (external && !stack.databaseUrl) throw new Error('SETTLE_EXTERNAL_DATABASE_URL: must be set with SETTLE_EXTERNAL_TEMPORAL_ADDRESS');
  const bundle = await bundleWorkflowCode(settleBundleOptions(quietLogger));
  const workflowBundlePath = path.join(runDir, 'workflow-bundle.js');
  fs.writeFileSync(workflowBundlePath, bundle.code);

  project.provide('temporalAddress', stack.temporal.address);
  project.provide('databaseUrl', stack.databaseUrl);
  project.provide('adminDatabaseUrl', 'postgres' in stack ? stack.postgres.adminUrl : stack.databaseUrl);
  project.provide('workflowBundlePath', workflowBundlePath);
  project.provide('uiUrl', stack.temporal.uiUrl);

  return async () => {
    await stack.stop();
    fs.rmSync(runDir, { recursive: true, force: true });
  };
}

const quietLogger = {
  log: () => {},
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};
