/**
 * `bash_execute` (A2): a command in the trajectory's sandbox.
 *
 * Intent: the exact command, working directory, sandbox and network grant, and where this
 * worker keeps its run markers — recorded before it runs. Probe: a shell command's effects are
 * not observable in general, but whether it started and how it ended are
 * (docs/design.md#shell-run-markers). The start is a row in the worker's database, committed
 * before the spawn; the output and exit status are sealed files. No start row → not applied (the
 * probe's own row fences it, so it can never start); a sealed exit marker → applied, with the
 * recorded output; started without one, or files that disagree with the database → unknown, for
 * an operator. Files never prove that nothing ran. settle never guesses.
 */
import type { Observation } from '../../core/observation';
import type { ProbeVerdict } from '../../core/records';
import { BASH_EXECUTE, type BashExecuteArgs, type BashExecuteIntent } from '../../core/tools/bash-execute';
import { NoEffect, type SettledTool } from '../settled/settled-tool';
import { runInSandbox, sandboxAvailability, SandboxRefused, type SandboxResult } from './sandbox';
import {
  inspectLegacyRun,
  markExited,
  newSealKey,
  prepareRun,
  readRunFiles,
  recordPid,
  removeRun,
  runsLocation,
  workerIdentity,
  type Liveness,
  type RecordedExit,
} from './shell-markers';
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
        markers: { root: runs.root, id: runs.id },
      },
    };
  },

  async execute(args, intent, env, ctx): Promise<Observation> {
    ctx.assertLeaseHeld();
    await failpoint('bash_execute.after_lease_check');
    const markers = intent.markers;
    if (!markers || !ctx.ledger) {
      throw new NoEffect('no start ledger for this execution (its start could not be recorded); command not started');
    }
    const at = { key: ctx.key, generation: ctx.generation };
    await prepareRun(markers, ctx.key, ctx.generation).catch((err: Error) => {
      throw new NoEffect(`could not make the run directory (${err.message}); command not started`);
    });
    // The start, committed where no sandbox reaches, before anything can run.
    const sealKey = newSealKey();
    if (!(await ctx.ledger.start(at, workerIdentity(), sealKey))) {
      throw new NoEffect('a probe fenced this execution (it found no start row) while this executor was paused; command not started');
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
        spawned = recordPid(markers, ctx.key, ctx.generation, pid, sealKey)
          .catch(() => {})
          .then(() => failpoint('bash_execute.after_start'));
      },
    }).catch((err: unknown) => {
      // Refused before anything started (no sandbox, or a workspace it may not use): provably no effect.
      if (err instanceof SandboxRefused) throw new NoEffect(err.message);
      throw err;
    });
    await spawned;
    // Only for a probe if this worker dies before the completion: a marker that cannot be written
    // (a full disk) must not lose the result this executor holds and is about to record.
    await markExited(markers, ctx.key, ctx.generation, r, sealKey).catch((err: Error) => {
      console.warn(`settle: exit marker of ${ctx.key.slice(0, 8)}… not written (${err.message}); the completion records the result`);
    });
    await failpoint('bash_execute.after_run');
    return observationOf(r, args.timeout_ms);
  },

  async probe(args, intent, _env, at): Promise<ProbeVerdict<Observation>> {
    const command = JSON.stringify(intent.command.slice(0, 80));
    if (intent.markers && at?.ledger) {
      const entry = await at.ledger.fence(at, workerIdentity());
      const files = await readRunFiles(intent.markers, at.key, at.generation, entry);
      if (entry.kind === 'fenced') {
        if (files.kind === 'tampered') {
          // Nothing can start any more (the fence holds), but evidence was forged: a person looks.
          return { verdict: 'unknown', detail: `${files.detail}: evidence was tampered with; an operator must settle ${command}` };
        }
        return {
          verdict: 'not_applied',
          detail: entry.fencedNow
            ? 'no start row in the database: the command was never started (fenced now, so it never will be)'
            : 'fenced by an earlier probe: the command was never started',
        };
      }
      switch (files.kind) {
        case 'exited':
          return {
            verdict: 'applied',
            result: observationOf(files.result, args.timeout_ms),
            detail: `sealed exit marker: the command ended with status ${files.result.exitStatus}; result from the recorded output`,
          };
        case 'tampered':
          return { verdict: 'unknown', detail: `${command} started (database): ${files.detail}; an operator must settle it` };
        case 'unreachable':
          // Another host's markers, or a wiped state directory: its worker may still record the end.
          return { verdict: 'unknown', detail: `${command} started (database); ${files.detail}; an operator must settle it` };
        case 'none':
        case 'no_exit':
          return startedWithoutExit(command, files.kind === 'no_exit' ? files.running : null, files.kind === 'no_exit' ? files.dir : null);
      }
    }
    if (intent.markers) {
      return { verdict: 'unknown', detail: `the start ledger is not available to this probe of ${command}; an operator must settle it` };
    }
    if (!intent.runs || !at) {
      return {
        verdict: 'unknown',
        detail: `no start record was kept for this execution of ${command}; an operator must settle it`,
      };
    }
    // An intent recorded before the start ledger: its start was only a file, which a sandboxed
    // command could have removed, so no marker proves nothing; the fence still stops a paused executor.
    const facts = await inspectLegacyRun(intent.runs, at.key, at.generation);
    switch (facts.kind) {
      case 'unreachable':
        return { verdict: 'unknown', detail: `${facts.detail}; an operator must settle ${command}` };
      case 'not_started':
        return {
          verdict: 'unknown',
          detail:
            `no start marker for ${command}, but its worker kept the start only in a file a sandboxed command could remove ` +
            `(recorded before start rows; ${facts.fencedNow ? 'fenced now' : 'fenced earlier'}, so it cannot start any more); an operator must settle it`,
        };
      case 'exited':
        return {
          verdict: 'applied',
          result: observationOf(facts.result, args.timeout_ms),
          detail: `exit marker: the command ended with status ${facts.result.exitStatus}; result from the recorded output`,
        };
      case 'started':
        return startedWithoutExit(command, facts.running, facts.dir);
    }
  },

  async afterSettled(_args, intent, at) {
    // The record now holds the outcome: the markers have served their purpose (the start row stays
    // until retention purges the record).
    const markers = intent.markers ?? intent.runs;
    if (markers) await removeRun(markers, at.key, at.generation);
  },
};

/** Started (the database or a legacy marker says so) and no exit recorded: unknown, saying whether it still runs. */
function startedWithoutExit(command: string, running: Liveness | null, dir: string | null): ProbeVerdict<Observation> {
  const state =
    running === null
      ? 'its worker left no pid or output marker (never written, or removed)'
      : running.kind === 'running'
        ? `it is still running (pid ${running.pid}) under its worker, which is alive${running.workerStopped ? ' but stopped (paused past its lease)' : ''}`
        : running.kind === 'not_running'
          ? `it is not running (${running.why}), and its effects may be partial`
          : `whether it still runs is unknown (${running.why})`;
  return {
    verdict: 'unknown',
    detail: `${command} started and no exit was recorded: ${state}${dir ? `; markers in ${dir}` : ''}. An operator must settle it`,
    // Final only when nobody alive can still record how it ended (its worker is gone and the
    // command is not running): then nothing changes until a person looks. A worker that is alive,
    // even paused, may yet complete the record, and a later probe sees it.
    final: running?.kind === 'not_running' && running.workerGone,
  };
}

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
