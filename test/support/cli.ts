/** Runs the `settle` command as a user would (a separate process), for CLI tests. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const SETTLE_BIN = fileURLToPath(new URL('../../bin/settle.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Asynchronous on purpose: a synchronous spawn blocks the test worker's event loop for as long as
 * the command runs, and past 60 s (a slow command on a loaded machine) vitest's worker RPC times
 * out and fails the run although every test passed; an in-process Temporal worker could not
 * answer the command either.
 */
export function runSettle(args: string[], options: { input?: string | Buffer; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  return runNode([SETTLE_BIN, ...args], options);
}

/** Runs `node <args>` with the test's environment plus `env`, feeding `input` on stdin. */
export function runNode(
  args: string[],
  options: { input?: string | Buffer; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, ...options.env }, cwd: options.cwd });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.on('error', () => {}); // a command that exits before reading its input closes the pipe
    child.stdin.end(options.input ?? '');
  });
}

/** The same as runSettle (kept for tests written when runSettle was synchronous). */
export const runSettleAsync = runSettle;
