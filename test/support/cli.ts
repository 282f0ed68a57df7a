/** Runs the `settle` command as a user would (a separate process), for CLI tests. */
import { spawn, spawnSync } from 'node:child_process';
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

/** As runSettle, without blocking the event loop: for commands an in-process worker must answer. */
export function runSettleAsync(args: string[], options: { env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SETTLE_BIN, ...args], {
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
