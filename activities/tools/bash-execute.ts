/**
 * `bash_execute` (A2): a command in the trajectory's sandbox.
 *
 * Intent: the exact command, working directory, sandbox and network grant, and where this
 * worker keeps its run markers — recorded before it runs. Probe: a shell command's effects are
 * not observable in general, but whether it started and how it ended are, from the markers the
 * worker writes around it (activities/tools/shell-markers.ts, docs/design.md#shell-run-markers):
 * no start marker → not applied (and fenced, so it can never start); an exit marker → applied,
 * with the recorded output; started without an exit → unknown, for an operator, saying whether
 * the process still runs. settle never guesses.
 */
import type { Observation } from '../../core/observation';
import type { ProbeVerdict } from '../../core/records';
import { BASH_EXECUTE, type BashExecuteArgs, type BashExecuteIntent } from '../../core/tools/bash-execute';
import { NoEffect, type SettledTool } from '../settled/settled-tool';
import { runInSandbox, sandboxAvailability, SandboxRefused, type SandboxResult } from './sandbox';
import { inspectRun, markExited, markStarted, recordPid, removeRun, runsLocation, type RecordedExit } from './shell-markers';
import { failpoint } from '../failpoints';

export const bashExecute: SettledTool<BashExecuteArgs, BashExecuteIntent, Observation> = {
  name: BASH_EXECUTE,

  async plan(args, env) {
    const runs = await runsLocation();
    return {
      kind: 'proceed',
      intent: {
        command: args.command,
        cwd: env.workspace,
        sandbox: sandboxAvailability().kind,
        network: env.network ?? false,
        ...(env.network && env.egress ? { egress: env.egress } : {}),
        runs: { root: runs.root, id: runs.id },
      },
    };
  },

  async execute(args, intent, env, ctx): Promise<Observation> {
    ctx.assertLeaseHeld();
    await failpoint('bash_execute.after_lease_check');
    const runs = intent.runs;
    if (runs && !(await markStarted(runs, ctx.key, ctx.generation))) {
      throw new NoEffect('a probe fenced this execution (no start marker was found) while this executor was paused; command not started');
    }
    // Without the root there is nothing to open the workspace from: fail closed.
    if (!env.workspaceRoot) throw new NoEffect('the worker named no workspace root for this call; command not started');
    let spawned: Promise<void> = Promise.resolve();
    const r = await runInSandbox({
      command: args.command,
      workspace: env.workspace,
      workspaceRoot: env.workspaceRoot,
      timeoutMs: args.timeout_ms,
      network: intent.network,
      egress: intent.egress ?? [],
      onStarted: (pid) => {
        spawned = (runs ? recordPid(runs, ctx.key, ctx.generation, pid).catch(() => {}) : Promise.resolve()).then(() =>
          failpoint('bash_execute.after_start'),
        );
      },
    }).catch((err: unknown) => {
      // Refused before anything started (no sandbox, or a workspace it may not use): provably no effect.
      if (err instanceof SandboxRefused) throw new NoEffect(err.message);
      throw err;
    });
    await spawned;
    if (runs) await markExited(runs, ctx.key, ctx.generation, r);
    await failpoint('bash_execute.after_run');
    return observationOf(r, args.timeout_ms);
  },

  async probe(args, intent, _env, at): Promise<ProbeVerdict<Observation>> {
    const command = JSON.stringify(intent.command.slice(0, 80));
    if (!intent.runs || !at) {
      return {
        verdict: 'unknown',
        detail: `no run markers were kept for this execution of ${command}; an operator must settle it`,
      };
    }
    const facts = await inspectRun(intent.runs, at.key, at.generation);
    switch (facts.kind) {
      case 'unreachable':
        // Another host's markers, or a wiped state directory: its worker may still record the end.
        return { verdict: 'unknown', detail: `${facts.detail}; an operator must settle ${command}` };
      case 'not_started':
        return {
          verdict: 'not_applied',
          detail: facts.fencedNow
            ? 'no start marker: the command was never started (fenced now, so it never will be)'
            : 'fenced by an earlier probe: the command was never started',
        };
      case 'exited':
        return {
          verdict: 'applied',
          result: observationOf(facts.result, args.timeout_ms),
          detail: `exit marker: the command ended with status ${facts.result.exitStatus}; result from the recorded output`,
        };
      case 'started': {
        const running = facts.running;
        const state =
          running.kind === 'running'
            ? `it is still running (pid ${running.pid}) under its worker, which is alive${running.workerStopped ? ' but stopped (paused past its lease)' : ''}`
            : running.kind === 'not_running'
              ? `it is not running (${running.why}), and its effects may be partial`
              : `whether it still runs is unknown (${running.why})`;
        return {
          verdict: 'unknown',
          detail: `${command} started and no exit was recorded: ${state}; markers in ${facts.dir}. An operator must settle it`,
          // Final only when nobody alive can still record how it ended (its worker is gone and
          // the command is not running): then nothing changes until a person looks. A worker
          // that is alive, even paused, may yet complete the record, and a later probe sees it.
          final: running.kind === 'not_running' && running.workerGone,
        };
      }
    }
  },

  async afterSettled(_args, intent, at) {
    // The record now holds the outcome: the markers have served their purpose.
    if (intent.runs) await removeRun(intent.runs, at.key, at.generation);
  },
};

/** The observation for a finished command: the same whether it is returned now or rebuilt by a probe. */
function observationOf(r: SandboxResult | RecordedExit, timeoutMs: number): Observation {
  const notes = [r.timedOut ? `timed out after ${timeoutMs} ms; the process group was killed` : null, r.note].filter(Boolean);
  const stderr = [r.stderr, ...notes.map((n) => `[settle: ${n}]`)].filter(Boolean).join('\n');
  return {
    output: r.stdout,
    error: stderr || null,
    exit_status: r.exitStatus,
    truncated: r.truncated,
    ...(r.usage ? { resources: r.usage } : {}),
  };
}
