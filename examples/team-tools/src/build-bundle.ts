/**
 * The team's workflow bundle, built once at build time (`npm run bundle` after `npm run build`):
 * a worker given it (WORKFLOW_BUNDLE) starts without running webpack, which takes seconds of CPU
 * at every start, and longer on a loaded host. Needs no DATABASE_URL and no Temporal.
 *   node dist/build-bundle.js [out file, default dist/workflow-bundle.js]
 * Rebuild it whenever the workflows or the installed @temporalio/workflow change.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { SettlePlugin } from 'settle/worker';
import { teamTools } from './tools.js';

const out = process.argv[2] ?? fileURLToPath(new URL('./workflow-bundle.js', import.meta.url));
const { code } = await bundleWorkflowCode({
  workflowsPath: fileURLToPath(new URL('./workflows.js', import.meta.url)),
  // The same plugin as the worker's: with `models` it adds the AI SDK's globals to the bundle.
  plugins: [new SettlePlugin({ tools: [...teamTools] })],
  logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: (message: string) => console.error(message) },
});
fs.writeFileSync(out, code);
console.log(`team-tools: workflow bundle written to ${out}`);
