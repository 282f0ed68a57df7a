/**
 * A stand-in worker for test/tools/bash-execute.test.ts: runs one command through the sandbox and
 * kills itself with SIGKILL — the instant the sandbox process is spawned (`spawn`: bubblewrap has
 * not armed --die-with-parent yet), or once the command was let start (`started`).
 *
 *   node --import tsx die-with-worker.fixture.ts <spawn|started> <workspace> <command>
 */
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';

const [mode, workspace, command] = process.argv.slice(2) as [string, string, string];
const die = () => process.kill(process.pid, 'SIGKILL');
if (mode === 'spawn') {
  const spawn = childProcess.spawn;
  childProcess.spawn = ((...args: Parameters<typeof spawn>) => {
    const child = spawn(...args);
    if (args[0] !== '/bin/true') die();
    return child;
  }) as typeof spawn;
  syncBuiltinESMExports();
}
const { runInSandbox } = await import('../../activities/tools/sandbox');
void runInSandbox({
  command,
  workspace,
  workspaceRoot: path.dirname(workspace),
  timeoutMs: 60_000,
  network: false,
  onStarted: mode === 'started' ? die : undefined,
});
