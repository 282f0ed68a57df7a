/**
 * The chaos workload: trajectories of file edits and shell commands whose effects can be counted
 * from the files themselves, independently of settle's records. Every logical effect has a unique
 * id (uid) and leaves exactly one line with it when it happens once: an edit inserts `<uid>` above
 * the `END` line of edits.txt, a command appends `<uid>` to shell.log.
 *
 * Two drivers: an orchestrator (SettleClient.runTurn, two effects a turn) that re-proposes, under
 * a new call id, every call settle reports as not executed — so a wrong "not executed" becomes a
 * visible duplicate; and scripted trajectories (all turns in the input). A3 trajectories need an
 * approval for every effect; the approver here grants them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { SettleClient } from '../../client/index';
import { handOverWorkspace } from '../../activities/tools/sandbox-identity';
import { mintCredential } from '../../activities/operator/operator-credentials';
import type { OperatorSigner } from '../../activities/operator/operator-keys';
import { SA_PENDING_APPROVALS } from '../../workflows/search-attributes';
import { callsQuery, type CallReport, type ProposedCall, type ScriptedTurn, type TrajectoryResult } from '../../workflows/definitions';

export type EffectTool = 'file_edit' | 'bash_execute';

export interface EffectPlan {
  uid: string;
  tool: EffectTool;
  /** A command that runs for a second (a wider window for faults mid-command). */
  slow: boolean;
}

export interface TrajectoryPlan {
  id: string;
  driver: 'orchestrated' | 'scripted';
  level: 'A2' | 'A3';
  /** The workspace as the workers see it. */
  workspace: string;
  /**
   * The workspace on each host's disk, as the harness sees it (one host: `[workspace]`). It is
   * made on its home host's disk only; the others get a stale copy once it is pinned there
   * (hosts.ts copyWhenPinned), so that a call run or probed elsewhere leaves its trace elsewhere.
   */
  disks: string[];
  /** Index of the host that holds it in `disks`. */
  home: number;
  effects: EffectPlan[];
}

export type EffectFinal =
  /** settle reported it COMPLETED (executed, replayed or settled). */
  | 'completed'
  /** settle reported it not executed (gave up) and nobody proposed it again (scripted). */
  | 'not_executed'
  /** Anything else settle answered (denied, invalid, …): a defect of the run. */
  | 'failed'
  /** The trajectory did not get to an answer for it in time. */
  | 'unfinished';

export interface EffectReport {
  uid: string;
  tool: EffectTool;
  proposals: number;
  final: EffectFinal;
  resolution: string | null;
}

export interface TrajectoryReport {
  id: string;
  driver: TrajectoryPlan['driver'];
  level: TrajectoryPlan['level'];
  outcome: 'completed' | 'failed' | 'unfinished';
  error: string | null;
  /** Tool calls proposed, reads and re-proposals included. */
  calls: number;
  /** runTurn updates that failed (an update must never record a transient failure as its answer). */
  failedTurns: number;
  effects: EffectReport[];
}

export const EDITS_FILE = 'edits.txt';
export const SHELL_LOG = 'shell.log';
const EFFECTS_PER_TURN = 2;

export function planTrajectories(options: {
  prefix: string;
  dir: string;
  orchestrated: number;
  scripted: number;
  effectsEach: number;
  /** Share of trajectories whose effects need approval (A3). */
  a3Share?: number;
  random: () => number;
  /** Workspaces spread over hosts, round robin: the workers' workspace root and each host's, as the harness sees it. */
  hosts?: { root: string; disks: string[] };
}): TrajectoryPlan[] {
  const plans: TrajectoryPlan[] = [];
  const total = options.orchestrated + options.scripted;
  for (let i = 0; i < total; i++) {
    const id = `${options.prefix}-t${i}`;
    const hosts = options.hosts;
    const home = hosts ? i % hosts.disks.length : 0;
    const disks = hosts ? hosts.disks.map((d) => path.join(d, `t${i}`)) : [path.join(options.dir, 'ws', `t${i}`)];
    makeWorkspace(disks[home]!);
    plans.push({
      id,
      driver: i < options.orchestrated ? 'orchestrated' : 'scripted',
      level: options.random() < (options.a3Share ?? 0) ? 'A3' : 'A2',
      workspace: hosts ? path.join(hosts.root, `t${i}`) : fs.realpathSync(disks[0]!),
      disks: hosts ? disks : [fs.realpathSync(disks[0]!)],
      home,
      effects: Array.from({ length: options.effectsEach }, (_, n) => ({
        uid: `${options.prefix}.t${i}.e${n}`,
        tool: n % 2 === 0 ? ('file_edit' as const) : ('bash_execute' as const),
        slow: n % 4 === 3,
      })),
    });
  }
  return plans;
}

/** A workspace as a trajectory starts with it: an edits file with its END line. */
export function makeWorkspace(dir: string): void {
  fs.mkdirSync(dir, { recursive: true });
  handOverWorkspace(dir); // as root, sandboxed commands run as the workspace's unprivileged owner
  fs.writeFileSync(path.join(dir, EDITS_FILE), 'END\n');
}

/** The call that performs `effect`; `attempt` > 0 for a re-proposal (a new call id, so a new key). */
export function proposal(plan: TrajectoryPlan, effect: EffectPlan, attempt: number): ProposedCall {
  const call_id = `${effect.uid}.${attempt}`;
  if (effect.tool === 'file_edit') {
    return {
      call_id,
      tool: 'file_edit',
      args: { path: path.join(plan.workspace, EDITS_FILE), old_str: 'END', new_str: `${effect.uid}\nEND` },
    };
  }
  const command = `${effect.slow ? 'sleep 1; ' : ''}echo ${effect.uid} >> ${SHELL_LOG}`;
  return { call_id, tool: 'bash_execute', args: { command } };
}

function read(plan: TrajectoryPlan, turn: number): ProposedCall {
  return { call_id: `read.${turn}`, tool: 'file_view', args: { path: path.join(plan.workspace, EDITS_FILE), offset: 1, limit: 5 } };
}

/** The uid an effect's call carries in its arguments (for the SRE, who reads records). */
export function uidOfArgs(args: unknown): string | null {
  const a = args as { new_str?: unknown; command?: unknown };
  const text = typeof a?.new_str === 'string' ? a.new_str : typeof a?.command === 'string' ? a.command : '';
  return /([\w-]+\.t\d+\.e\d+)/.exec(text)?.[1] ?? null;
}

function inputFor(plan: TrajectoryPlan, leaseMs: number | undefined) {
  return {
    workspace: plan.workspace,
    ...(leaseMs ? { leaseMs } : {}),
    backoff: { initialMs: 200, maxMs: 2_000 },
    ...(plan.level === 'A3' ? { levelOverrides: { file_edit: 'A3' as const, bash_execute: 'A3' as const } } : {}),
  };
}

/** Retries what failed because Temporal was unreachable (a restart); rethrows settle's own answers. */
async function untilAnswered<T>(deadline: number, fn: () => Promise<T>): Promise<T> {
  for (;;) {
    if (Date.now() > deadline) throw new Error('deadline passed');
    try {
      return await fn();
    } catch (err) {
      if (
        err instanceof WorkflowUpdateFailedError ||
        err instanceof WorkflowFailedError ||
        err instanceof WorkflowExecutionAlreadyStartedError ||
        Date.now() > deadline
      ) {
        throw err;
      }
      await new Promise((r) => setTimeout(r, 300));
    }
  }
}

export async function runTrajectory(
  settle: SettleClient,
  plan: TrajectoryPlan,
  deadline: number,
  leaseMs?: number,
): Promise<TrajectoryReport> {
  const report: TrajectoryReport = {
    id: plan.id,
    driver: plan.driver,
    level: plan.level,
    outcome: 'unfinished',
    error: null,
    calls: 0,
    failedTurns: 0,
    effects: plan.effects.map((e) => ({ uid: e.uid, tool: e.tool, proposals: 0, final: 'unfinished', resolution: null })),
  };
  // Every call of this trajectory ends by the deadline (gRPC deadline, also for the client's own
  // retries): none may outlive it, or it would meet the connection closed and the server stopped
  // at the scenario's teardown ("Channel has been shut down" from a retry timer, uncaught).
  try {
    await settle.client.connection.withDeadline(deadline, () =>
      plan.driver === 'orchestrated'
        ? orchestrate(settle, plan, report, deadline, leaseMs)
        : script(settle, plan, report, deadline, leaseMs),
    );
  } catch (err) {
    report.outcome = Date.now() > deadline ? 'unfinished' : 'failed';
    report.error = err instanceof Error ? `${err.name}: ${err.message}${causeOf(err)}` : String(err);
  }
  return report;
}

function causeOf(err: Error): string {
  const cause = (err as { cause?: { message?: string } }).cause?.message;
  return cause ? ` (${cause})` : '';
}

/** Records settle's answer for one effect's call; returns true when the orchestrator must propose it again. */
function take(report: TrajectoryReport, effect: EffectPlan, call: CallReport, mayRepropose: boolean): boolean {
  const e = report.effects.find((x) => x.uid === effect.uid)!;
  e.resolution = call.resolution;
  if (call.state === 'COMPLETED') {
    e.final = 'completed';
    return false;
  }
  if (call.resolution === 'gave_up') {
    e.final = 'not_executed';
    return mayRepropose;
  }
  e.final = 'failed';
  return false;
}

async function orchestrate(settle: SettleClient, plan: TrajectoryPlan, report: TrajectoryReport, deadline: number, leaseMs?: number) {
  await untilAnswered(deadline, () => settle.start(plan.id, inputFor(plan, leaseMs))).catch((err: unknown) => {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  });
  const pending = plan.effects.map((effect) => ({ effect, attempt: 0 }));
  for (let turn = 0; pending.length > 0; turn++) {
    if (Date.now() > deadline) throw new Error(`deadline passed at turn ${turn}`);
    const batch = pending.splice(0, EFFECTS_PER_TURN);
    const calls = batch.map(({ effect, attempt }) => proposal(plan, effect, attempt));
    if (turn % 2 === 0) calls.push(read(plan, turn));
    report.calls += calls.length;
    for (const { effect } of batch) report.effects.find((e) => e.uid === effect.uid)!.proposals++;
    let answer;
    try {
      answer = await untilAnswered(deadline, () => settle.runTurn(plan.id, turn, calls));
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) report.failedTurns++;
      throw err;
    }
    for (const item of batch) {
      const call = answer.calls.find((c) => c.callId === `${item.effect.uid}.${item.attempt}`);
      if (!call) throw new Error(`turn ${turn}: no report for ${item.effect.uid}`);
      // Told "not executed", an orchestrator proposes the effect again under a new call id.
      if (take(report, item.effect, call, true)) pending.push({ effect: item.effect, attempt: item.attempt + 1 });
    }
  }
  await untilAnswered(deadline, () => settle.finish(plan.id, 'completed', 'chaos workload done'));
  await untilAnswered(deadline, () => settle.result(plan.id));
  report.outcome = 'completed';
}

async function script(settle: SettleClient, plan: TrajectoryPlan, report: TrajectoryReport, deadline: number, leaseMs?: number) {
  const turns: ScriptedTurn[] = [];
  for (let i = 0, turn = 0; i < plan.effects.length; i += EFFECTS_PER_TURN, turn++) {
    const calls = plan.effects.slice(i, i + EFFECTS_PER_TURN).map((e) => proposal(plan, e, 0));
    if (turn % 2 === 0) calls.push(read(plan, turn));
    turns.push({ turn, calls });
  }
  report.calls = turns.reduce((n, t) => n + t.calls.length, 0);
  for (const e of report.effects) e.proposals = 1;
  await untilAnswered(deadline, () => settle.start(plan.id, { ...inputFor(plan, leaseMs), turns })).catch((err: unknown) => {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  });
  const result: TrajectoryResult = await untilAnswered(deadline, () => settle.result(plan.id));
  for (const effect of plan.effects) {
    const call = result.calls.find((c) => c.callId === `${effect.uid}.0`);
    if (call) take(report, effect, call, false);
  }
  report.outcome = 'completed';
}

/**
 * Grants every approval the A3 trajectories wait for, until `done` resolves — as approvers on
 * duty would: each trajectory on its own, concurrently. Who waits comes from visibility (the
 * SettlePendingApprovals search attribute: no worker needed); each such trajectory is then asked
 * for its calls and approved in a task of its own. Every request has its own deadline
 * (`requestMs`): a query to a trajectory whose worker was just killed may hang until the server
 * gives up on that worker, and must hold up neither the next round for it nor anyone else.
 */
export async function approveWhileRunning(
  settle: SettleClient,
  /** The approver on duty's operator key: each decision is signed with it. */
  approver: OperatorSigner,
  plans: TrajectoryPlan[],
  done: Promise<unknown>,
  options: { requestMs?: number; intervalMs?: number } = {},
): Promise<number> {
  const a3 = new Set(plans.filter((p) => p.level === 'A3').map((p) => p.id));
  if (a3.size === 0) return 0;
  const requestMs = options.requestMs ?? 5_000;
  let finished = false;
  void done.finally(() => (finished = true));
  const bounded = <T>(fn: () => Promise<T>) => settle.client.connection.withDeadline(Date.now() + requestMs, fn);
  const approved = new Set<string>();
  const busy = new Map<string, Promise<void>>();
  const approveWaiting = async (id: string) => {
    try {
      const calls = await bounded(() => settle.handle(id).query(callsQuery));
      await Promise.all(
        calls
          .filter((c) => c.resolution === 'awaiting_approval' && c.key && !approved.has(c.key))
          .map(async (c) => {
            const claim = await bounded(() =>
              settle.approvalClaim({ trajectoryId: id, key: c.key!, decision: 'approve', reason: 'chaos workload' }),
            );
            const credential = mintCredential(approver, claim);
            await bounded(() => settle.approve(id, credential));
            approved.add(c.key!);
          }),
      );
    } catch {
      // A request past its deadline, a closed trajectory, Temporal restarting: next round.
    }
  };
  const query = `${SA_PENDING_APPROVALS.name} > 0 AND ExecutionStatus = "Running"`;
  while (!finished) {
    const waiting: string[] = [];
    await bounded(async () => {
      for await (const w of settle.client.workflow.list({ query })) if (a3.has(w.workflowId)) waiting.push(w.workflowId);
    }).catch(() => {}); // Temporal restarting: next round
    for (const id of waiting) {
      if (busy.has(id)) continue;
      busy.set(
        id,
        approveWaiting(id).finally(() => busy.delete(id)),
      );
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 300));
  }
  await Promise.all(busy.values());
  return approved.size;
}
