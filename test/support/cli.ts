/** Runs the `settle` command as a user would (a separate process), for CLI tests. */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const SETTLE_BIN = fileURLToPath(new URL('../../bin/settle.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Synchronous: do not use while an in-process worker must answer the command. */
export function runSettle(args: string[], options: { input?: string | Buffer; env?: NodeJS.ProcessEnv } = {}): CliResult {
  const r = spawnSync(process.execPath, [SETTLE_BIN, ...args], {
    input: options.input ?? '',
    encoding: 'utf8',
    env: { ...process.env, ...options.env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
