/**
 * `bash_execute` (A2): a command in the trajectory's sandbox.
 *
 * Intent: the exact command, working directory, sandbox and network grant, recorded before it
 * runs. Probe: a shell command's effects are not observable in general, so the probe always
 * answers `unknown` and an in-doubt command waits for an operator — settle never guesses.
 */
import type { Observation } from '../../core/observation';
import type { ProbeVerdict } from '../../core/records';
import { BASH_EXECUTE, type BashExecuteArgs, type BashExecuteIntent } from '../../core/tools/bash-execute';
import { NoEffect, type SettledTool } from '../settled/settled-tool';
import { runInSandbox, sandboxAvailability, SandboxRefused } from './sandbox';
import { failpoint } from '../failpoints';

export const bashExecute: SettledTool<BashExecuteArgs, BashExecuteIntent, Observation> = {
  name: BASH_EXECUTE,

  async plan(args, env) {
    return {
      kind: 'proceed',
      intent: { command: args.command, cwd: env.workspace, sandbox: sandboxAvailability().kind, network: env.network ?? false },
    };
  },

  async execute(args, intent, env, ctx): Promise<Observation> {
    ctx.assertLeaseHeld();
    await failpoint('bash_execute.after_lease_check');
    const r = await runInSandbox({
      command: args.command,
      workspace: env.workspace,
      timeoutMs: args.timeout_ms,
      network: intent.network,
    }).catch((err: unknown) => {
      // Refused before anything started (no sandbox, or a workspace it may not use): provably no effect.
      if (err instanceof SandboxRefused) throw new NoEffect(err.message);
      throw err;
    });
    await failpoint('bash_execute.after_run');
    const notes = [r.timedOut ? `timed out after ${args.timeout_ms} ms; the process group was killed` : null, r.note].filter(Boolean);
    const stderr = [r.stderr, ...notes.map((n) => `[settle: ${n}]`)].filter(Boolean).join('\n');
    return {
      output: r.stdout,
      error: stderr || null,
      exit_status: r.exitStatus,
      truncated: r.truncated,
    };
  },

  async probe(_args, intent): Promise<ProbeVerdict<Observation>> {
    return {
      verdict: 'unknown',
      detail: `the effects of a shell command cannot be observed in general (${JSON.stringify(intent.command.slice(0, 80))}); an operator must settle it`,
    };
  },
};
