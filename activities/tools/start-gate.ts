/**
 * The start gate of a sandboxed command: the command starts only once its sandbox is armed to
 * die with the worker, and never after the worker died (docs/design.md#shell-run-markers).
 *
 * bubblewrap's `--die-with-parent` takes effect only once bubblewrap has run far enough to set
 * it: a worker killed a few milliseconds after the spawn would leave an orphaned sandbox that
 * runs the command anyway. So the command line is wrapped: inside the sandbox (after all of
 * bubblewrap's setup) the wrapper says "ready" on its gate descriptor and waits for the worker's "go" before it
 * execs the command. A worker that dies before "go" closes the gate and the wrapper exits without
 * running anything; once "go" is sent, the sandbox is armed and dies with the worker.
 */
import type { ChildProcess } from 'node:child_process';
import type { Duplex } from 'node:stream';

/** Exit status of a wrapper whose worker never said "go" (the command did not run). */
export const GATE_CLOSED_STATUS = 125;

/** `bash -c` text that waits at the gate, then runs `command` exactly as `bash -c command` would. */
export function gatedCommand(command: string, fd: number): string {
  const quoted = `'${command.replace(/'/g, `'\\''`)}'`;
  return (
    `printf r >&${fd} && IFS= read -r -n 1 go <&${fd} && [ "$go" = g ] || exit ${GATE_CLOSED_STATUS}; ` +
    `exec ${fd}>&- </dev/null; exec /bin/bash -c ${quoted}`
  );
}

/** Waits for the wrapper's "ready" and answers "go". Resolves false if the child ended before that. */
export function openGate(child: ChildProcess, fd: number): Promise<boolean> {
  const gate = child.stdio[fd] as Duplex | null | undefined;
  if (!gate) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (opened: boolean) => {
      gate.removeAllListeners('data');
      resolve(opened);
    };
    gate.once('data', () => {
      gate.end('g');
      done(true);
    });
    gate.once('error', () => done(false));
    gate.once('close', () => done(false));
    child.once('exit', () => done(false));
  });
}
