/** `bash_execute` arguments (source listing 5): a command in the task's sandbox. */
import { z } from 'zod';
import { lazy } from '../lazy';

export const BASH_EXECUTE = 'bash_execute';

/** Built on first use (core/lazy.ts). */
export const bashExecuteArgs = lazy(() =>
  z
    .object({
      command: z.string().min(1).max(8192).describe('Shell command line, run by bash -c in the workspace directory.'),
      timeout_ms: z
        .number()
        .int()
        .min(1000)
        .max(300_000)
        .default(30_000)
        .describe(
          'Wall-clock limit in milliseconds, 1000 to 300000 (default 30000 when absent); the whole process group is killed at the limit.',
        ),
    })
    .strict()
    .describe(
      "Runs a shell command in the task's sandbox (the workspace as working directory, a scrubbed environment, no " +
        'network unless granted) and returns stdout, stderr and the exit status, each output cut with a marker past ' +
        '64 KiB. A timed-out command reports exit status 124.',
    ),
);

export type BashExecuteArgs = z.output<ReturnType<typeof bashExecuteArgs>>;

/** Recorded before the command runs, so an operator can see exactly what may have happened. */
export interface BashExecuteIntent {
  command: string;
  cwd: string;
  sandbox: 'bubblewrap' | 'none';
  network: boolean;
  /** With `network`: the capability's `host:` objects the egress proxy allowed. Absent before egress existed. */
  egress?: string[];
  /**
   * Where the executing worker keeps the run markers (docs/design.md#shell-run-markers): its root
   * directory and that root's id; the start itself is a row in the worker's database.
   */
  markers?: { root: string; id: string };
  /**
   * The same, in intents recorded before the start ledger (the start kept in a file). A new intent
   * names `markers` instead, so that a worker of that older version answers unknown for it rather
   * than reading a missing start file as "never started".
   */
  runs?: { root: string; id: string };
}
