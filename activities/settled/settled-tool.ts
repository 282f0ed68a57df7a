/**
 * What a side-effecting tool provides so the runtime can settle its calls (docs/design.md#intent-before-effect).
 */
import type { ProbeVerdict } from '../../core/records';

/** Where a call runs. Resolved by the activity, never taken from the model. */
export interface ToolEnv {
  /** Real path of the trajectory's workspace directory. */
  workspace: string;
  /** The worker's workspace root (its policy): the sandbox opens the workspace from it (workspace-dir.ts). */
  workspaceRoot?: string;
  /** Whether sandboxed commands may use the network (the capability's `connect` right). */
  network?: boolean;
  /** With `network`: the capability's `host:` objects, the only hosts reached (through the egress proxy). */
  egress?: string[];
}

/**
 * The plan for one call, computed read-only before anything is touched.
 * - `proceed`: record `intent` on the endpoint record, then execute.
 * - `answer`: the call is decided without any effect (a refused path, zero matches…): its result
 *   is stored as COMPLETED, exactly like a result the tool returned after running.
 */
export type Plan<Intent, Result> = { kind: 'proceed'; intent: Intent } | { kind: 'answer'; result: Result };

export interface ExecutionContext {
  /** The call's idempotency key. */
  key: string;
  /** The fencing token of this claim; pass it downstream where the resource can check it. */
  generation: number;
  /**
   * Throws LeaseLost unless this executor still holds its lease with margin to spare. Call it
   * immediately before the effect (docs/design.md#fencing-and-leases: an executor acts only while it holds its lease).
   */
  assertLeaseHeld(): void;
  /** Where the start of an execution is recorded beyond any sandbox's reach (the worker's database). */
  ledger?: RunLedger;
}

/**
 * The worker's own record of which executions started, kept where no sandboxed command can reach
 * it (docs/design.md#shell-run-markers). One row per (key, generation): whoever writes it first —
 * the executor about to start, or a probe fencing — wins.
 */
export interface RunLedger {
  /** Executor: records that this execution starts now. False: a probe fenced it first, nothing may start. */
  start(at: CallGeneration, by: unknown, sealKey: string): Promise<boolean>;
  /** Probe: fences the execution unless it started; returns the row that won. */
  fence(at: CallGeneration, by: unknown): Promise<RunEntry>;
}

export type RunEntry =
  /** The executor recorded the start (the command may have run); `sealKey` seals its exit marker. */
  | { kind: 'started'; by: unknown; sealKey: string; fencedNow: false }
  /** A probe fenced it (`fencedNow`: this call did): it never starts. */
  | { kind: 'fenced'; by: unknown; fencedNow: boolean };

export interface SettledTool<Args, Intent, Result> {
  name: string;
  /**
   * Read-only. Runs before the claim (whose statement records the intent), so the pre-state it
   * describes may change before the effect: `execute` must re-check what it relies on (file_edit
   * compares the file's hash with `sha256_before` right before the rename) and throw NoEffect
   * when it no longer holds.
   */
  plan(args: Args, env: ToolEnv, at?: { key: string }): Promise<Plan<Intent, Result>>;
  /**
   * Performs the effect. Throw NoEffect only when it is certain nothing happened; any other
   * exception leaves the call IN_DOUBT.
   */
  execute(args: Args, intent: Intent, env: ToolEnv, ctx: ExecutionContext): Promise<Result>;
  /**
   * Optional: the part of `execute` that has no effect, started while the claim's statement
   * commits rather than after it (file_edit writes and syncs the new content to the intent's
   * temporary file: the effect is only the rename). The executor then applies the prepared
   * effect if it won the claim, and discards it otherwise. Anything prepare makes must be
   * something the probe of the recorded intent withdraws (a fence), and a prepare that fails
   * has, by this contract, had no effect: the call is released.
   */
  prepare?(args: Args, intent: Intent, env: ToolEnv, at: PrepareContext): Promise<PreparedEffect<Result>>;
  /**
   * Repeatable: did the recorded intent take effect? Changes nothing the call was about, but may
   * fence a prepared effect that has not happened (so a paused executor cannot apply it after a
   * "not applied" verdict).
   */
  probe(args: Args, intent: Intent, env: ToolEnv, at?: ProbeContext): Promise<ProbeVerdict<Result>>;
  /**
   * Optional, best effort: the executor recorded this execution's outcome itself (completed or
   * released); the tool may drop what it kept for a probe. Never called after a probe's verdict.
   */
  afterSettled?(args: Args, intent: Intent, at: CallGeneration): Promise<void>;
}

/** Who prepares: the call, and whether an earlier attempt of this execution may have died mid-way. */
export interface PrepareContext {
  key: string;
  /**
   * Temporal retried this activity (its previous attempt did not report: a dead worker, a missed
   * heartbeat): what that attempt prepared, and never claimed, may still lie around.
   */
  retried: boolean;
}

/** An effect prepared but not yet applied (SettledTool.prepare). */
export interface PreparedEffect<Result> {
  /** Performs the effect: same contract as `execute` (check the lease right before it; NoEffect only when certain). */
  apply(ctx: ExecutionContext): Promise<Result>;
  /** The claim was not won, or failed: remove what was prepared. Never after `apply`. */
  discard(): Promise<void>;
}

/** One execution of one call: the probe's and the clean-up's address. */
export interface CallGeneration {
  key: string;
  generation: number;
}

/** What a probe is about: one execution, and the ledger its executor recorded its start in. */
export interface ProbeContext extends CallGeneration {
  ledger?: RunLedger;
}

/** The tool proved that its effect did not happen (e.g. a precondition failed before any write). */
export class NoEffect extends Error {
  override readonly name: string = 'NoEffect';
}

/** The executor's lease is no longer safely held: it must not start the effect. */
export class LeaseLost extends NoEffect {
  override readonly name = 'LeaseLost';
}
