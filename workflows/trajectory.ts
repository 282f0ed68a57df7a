/**
 * One agent trajectory = one workflow (workflow id = trajectory id). DETERMINISTIC CODE ONLY:
 * runs in Temporal's sandbox; every side effect goes through an activity.
 *
 * Three drivers (see TrajectoryInput): scripted turns, an orchestrator sending `runTurn`
 * updates, or a model asked for calls in a loop. Every call goes through call-pipeline.ts.
 * On failure or cancellation, completed A2 calls are compensated in reverse order.
 * Long trajectories continue-as-new with their state, so nothing is lost or repeated.
 */
import {
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { InputError } from '../core/errors';
import { parseToolArguments } from '../core/json-text';
import type { ChatMessage } from '../core/model/chat';
import { failed, type Observation } from '../core/observation';
import { CATALOG, isToolName, publishedCatalog, type SideEffectLevel } from '../core/tools/catalog';
import { compensationCallId, compensationFor } from '../core/tools/compensation';
import type { SettleActivities } from '../activities/index';
import { applyOperatorVerdict, countProposal, runCall, type CallContext } from './call-pipeline';
import {
  approveCallUpdate,
  callsQuery,
  finishUpdate,
  runTurnUpdate,
  settleCallUpdate,
  waitingForQuery,
  type CallReport,
  type CarriedState,
  type CompensationReport,
  type FinishInput,
  type ProposedCall,
  type RunTurnInput,
  type TrajectoryInput,
  type TrajectoryResult,
} from './definitions';
import { SA_PARENT_TRAJECTORY } from './search-attributes';
import { TrajectoryState } from './trajectory-state';

export * from './definitions';

const MAX_CALLS_PER_TURN = 64;
const DEFAULT_MODEL_TURNS = 20;
/** Model arguments parsed as strict I-JSON (core/json-text.ts); histories from before parsed them with JSON.parse. */
const PATCH_STRICT_TOOL_ARGUMENTS = 'strict-tool-arguments-v1';

const { callModel } = proxyActivities<SettleActivities>({
  startToCloseTimeout: '3 minutes',
  retry: { initialInterval: '2 seconds', maximumInterval: '1 minute', maximumAttempts: 5 },
});

export async function trajectoryWorkflow(input: TrajectoryInput): Promise<TrajectoryResult> {
  const trajectoryId = workflowInfo().workflowId;
  assertValidInput(input);
  const state = new TrajectoryState(input.carried);
  const ctx: CallContext = { trajectoryId, input, state };
  // Mutated by update handlers; an object so the compiler does not narrow it to its initial value.
  const control: { finish: FinishInput | null; runningTurns: number; nextTicket: number; serving: number } = {
    finish: null,
    runningTurns: 0,
    nextTicket: 0,
    serving: 0,
  };

  setHandler(callsQuery, () => state.reports);
  setHandler(waitingForQuery, () => state.waitingFor);
  setHandler(settleCallUpdate, (s) => applyOperatorVerdict(state, s), {
    validator: (s) => {
      requireKey(s?.key, state.awaitingOperator, 'waiting for an operator');
      if (s.verdict !== 'applied' && s.verdict !== 'not_applied') throw new InputError('verdict', 'be applied or not_applied');
      requireText(s.operator, 'operator', 'a non-empty name');
      requireText(s.reason, 'reason', 'a non-empty explanation');
    },
  });
  setHandler(
    approveCallUpdate,
    (a) => {
      state.approvals.set(a.key, a);
      return { decision: a.decision };
    },
    {
      validator: (a) => {
        requireKey(a?.key, state.awaitingApproval, 'waiting for approval');
        if (a.decision !== 'approve' && a.decision !== 'deny') throw new InputError('decision', 'be approve or deny');
        requireText(a.approver, 'approver', 'a non-empty name');
        requireText(a.reason, 'reason', 'a non-empty explanation');
      },
    },
  );
  setHandler(
    runTurnUpdate,
    async (t) => {
      // Turns run one at a time, in arrival order: each handler waits for its ticket. (Chaining
      // one handler's work onto a previous handler's promise does not replay deterministically.)
      const ticket = control.nextTicket++;
      control.runningTurns++;
      try {
        await condition(() => control.serving === ticket);
        const calls: CallReport[] = [];
        for (const call of t.calls) calls.push(await runCall(ctx, t.turn, call));
        state.turnsDone.add(t.turn);
        return { turn: t.turn, calls };
      } finally {
        control.serving++;
        control.runningTurns--;
      }
    },
    { validator: (t) => validateTurn(t, control.finish) },
  );
  setHandler(
    finishUpdate,
    (f) => {
      control.finish = f;
      return { accepted: true as const };
    },
    {
      validator: (f) => {
        if (f?.outcome !== 'completed' && f?.outcome !== 'failed') throw new InputError('outcome', 'be completed or failed');
        requireText(f.reason, 'reason', 'a non-empty explanation');
      },
    },
  );

  if (input.parentTrajectoryId) upsertSearchAttributes([{ key: SA_PARENT_TRAJECTORY, value: input.parentTrajectoryId }]);
  state.publish('running', 'starting');

  let finalAnswer: string | null = null;
  let reason: string;
  try {
    if (input.model) {
      ({ finalAnswer, reason } = await driveByModel(ctx, input));
    } else if (input.turns) {
      reason = await driveByScript(ctx, input);
    } else {
      state.publish('running', 'waiting for the orchestrator: runTurn updates, then finish');
      await condition(() => control.finish !== null || (control.runningTurns === 0 && shouldContinueAsNew(input)));
      if (!control.finish) return await continueWithState(input, state);
      await condition(() => control.runningTurns === 0);
      reason = control.finish.reason;
    }
  } catch (err) {
    if (isCancellation(err)) {
      // Compensate even though the workflow is being cancelled, then end as cancelled.
      await CancellationScope.nonCancellable(() => compensate(ctx, 'cancelled'));
      throw err;
    }
    throw err;
  }

  if (control.finish?.outcome === 'failed') {
    const compensations = await compensate(ctx, 'failed');
    state.publish('failed', `failed: ${reason}; ${compensations.length} compensation(s) run`);
    await condition(allHandlersFinished);
    throw ApplicationFailure.create({
      type: 'SettleTrajectoryFailed',
      message: `trajectory failed: ${reason}`,
      nonRetryable: true,
      details: [{ trajectoryId, outcome: 'failed', calls: state.reports, reason, compensations } satisfies TrajectoryResult],
    });
  }
  state.publish('completed', `completed ${state.reports.length} calls: ${reason}`);
  await condition(allHandlersFinished);
  return { trajectoryId, outcome: 'completed', calls: state.reports, finalAnswer, reason };
}

async function driveByScript(ctx: CallContext, input: TrajectoryInput): Promise<string> {
  const turns = input.turns!;
  for (let i = input.carried?.nextScriptedTurn ?? 0; i < turns.length; i++) {
    if (shouldContinueAsNew(input)) await continueWithState(input, ctx.state, { nextScriptedTurn: i });
    const turn = turns[i]!;
    for (const call of turn.calls) await runCall(ctx, turn.turn, call);
    ctx.state.turnsDone.add(turn.turn);
  }
  return `${turns.length} scripted turns done`;
}

async function driveByModel(ctx: CallContext, input: TrajectoryInput): Promise<{ finalAnswer: string | null; reason: string }> {
  const model = input.model!;
  const { task, maxTurns = DEFAULT_MODEL_TURNS, maxTotalTokens, ...config } = model;
  const tools = publishedCatalog();
  const conversation = (input.carried?.conversation as ChatMessage[] | undefined) ?? [{ role: 'user', content: task }];
  let tokensUsed = input.carried?.tokensUsed ?? 0;
  for (let turn = input.carried?.modelTurn ?? 0; turn < maxTurns; turn++) {
    if (maxTotalTokens !== undefined && tokensUsed >= maxTotalTokens) {
      return { finalAnswer: null, reason: `token budget exhausted (${tokensUsed} of ${maxTotalTokens})` };
    }
    if (shouldContinueAsNew(input)) {
      await continueWithState(input, ctx.state, { conversation, modelTurn: turn, tokensUsed });
    }
    ctx.state.publish('running', `model turn ${turn}: asking ${config.model}`);
    const reply = await callModel({ config, messages: conversation, tools });
    tokensUsed += reply.totalTokens;
    if (reply.kind === 'final') {
      conversation.push({ role: 'assistant', content: reply.content });
      return { finalAnswer: reply.content, reason: 'the model gave a final answer' };
    }
    conversation.push({ role: 'assistant', content: reply.content, tool_calls: reply.calls });
    for (const c of reply.calls) {
      let observation: Observation;
      let args: unknown;
      let refused: InputError | undefined;
      try {
        args = parseToolArguments(c.function.arguments, () => patched(PATCH_STRICT_TOOL_ARGUMENTS));
      } catch (err) {
        args = undefined;
        refused = err as InputError;
        observation = failed(`invalid call: ${refused.message}`);
      }
      if (args !== undefined) {
        const proposed: ProposedCall = { call_id: c.id, tool: c.function.name, args: args as Record<string, unknown> };
        observation = (await runCall(ctx, turn, proposed)).observation ?? failed('no observation');
      } else {
        await countProposal(ctx, turn, { call_id: c.id, tool: c.function.name, args: {} }, { field: refused!.field, rule: refused!.rule });
        ctx.state.reports.push({
          turn,
          callId: c.id,
          tool: c.function.name,
          key: null,
          level: null,
          state: 'NO_RECORD',
          resolution: 'invalid',
          attempts: 0,
          observation: observation!,
        });
      }
      conversation.push({ role: 'tool', tool_call_id: c.id, content: JSON.stringify(observation!) });
    }
    ctx.state.turnsDone.add(turn);
  }
  return { finalAnswer: null, reason: `turn limit reached (${maxTurns})` };
}

/** Runs the compensators of completed A2 calls, newest first; each is a settled call itself. */
async function compensate(ctx: CallContext, why: 'failed' | 'cancelled'): Promise<CompensationReport[]> {
  const done: CompensationReport[] = [];
  const candidates = ctx.state.reports.filter(
    (r) =>
      r.level === 'A2' &&
      r.key !== null &&
      r.state === 'COMPLETED' &&
      r.observation?.exit_status === 0 &&
      !r.callId.endsWith('#compensate') &&
      !r.compensatedBy,
  );
  for (const original of candidates.reverse()) {
    const args = ctx.state.argsByKey.get(original.key!);
    const plan = args ? compensationFor(original.tool, args) : { kind: 'none' as const, reason: 'arguments unavailable' };
    if (plan.kind === 'none') {
      done.push({ forKey: original.key!, tool: original.tool, key: null, resolution: 'not_compensable', observation: failed(plan.reason) });
      continue;
    }
    ctx.state.publish('running', `trajectory ${why}: compensating ${original.tool} ${original.key!.slice(0, 8)}…`);
    const report = await runCall(ctx, original.turn, {
      call_id: compensationCallId({ call_id: original.callId }),
      tool: plan.tool,
      args: plan.args,
    });
    original.compensatedBy = report.key;
    done.push({ forKey: original.key!, tool: plan.tool, key: report.key, resolution: report.resolution, observation: report.observation });
  }
  return done;
}

function shouldContinueAsNew(input: TrajectoryInput): boolean {
  const info = workflowInfo();
  return info.continueAsNewSuggested || (input.maxHistoryEvents !== undefined && info.historyLength > input.maxHistoryEvents);
}

/** Hands the trajectory to a fresh run with its state: turns, reports (keys, states), conversation. */
async function continueWithState(input: TrajectoryInput, state: TrajectoryState, extra: Partial<CarriedState> = {}): Promise<never> {
  await condition(allHandlersFinished);
  const carried: CarriedState = {
    reports: state.reports,
    turnsDone: [...state.turnsDone],
    continuedAsNew: (input.carried?.continuedAsNew ?? 0) + 1,
    ...extra,
  };
  return continueAsNew<typeof trajectoryWorkflow>({ ...input, carried });
}

function assertValidInput(input: TrajectoryInput): void {
  const fail = (field: string, rule: string) => {
    throw ApplicationFailure.nonRetryable(new InputError(field, rule).message, 'SettleInvalidInput');
  };
  if (!input || typeof input.workspace !== 'string' || !input.workspace.startsWith('/')) fail('workspace', 'be an absolute path');
  if (input.turns && input.model) fail('turns', 'not be given together with model (choose one driver)');
  for (const [tool, level] of Object.entries(input.levelOverrides ?? {})) {
    if (!isToolName(tool)) fail(`levelOverrides.${tool}`, 'name a catalog tool');
    const order: SideEffectLevel[] = ['A0', 'A1', 'A2', 'A3'];
    if (!order.includes(level)) fail(`levelOverrides.${tool}`, 'be one of A0, A1, A2, A3');
    if (order.indexOf(level) < order.indexOf(CATALOG[tool as keyof typeof CATALOG].level)) {
      fail(`levelOverrides.${tool}`, `not lower the level (${CATALOG[tool as keyof typeof CATALOG].level} → ${level})`);
    }
  }
}

function validateTurn(t: RunTurnInput, finishRequest: FinishInput | null): void {
  if (finishRequest) throw new InputError('turn', 'arrive before finish (this trajectory is finishing)');
  if (!t || !Number.isSafeInteger(t.turn) || t.turn < 0) throw new InputError('turn', `be an integer ≥ 0 (got ${JSON.stringify(t?.turn)})`);
  if (!Array.isArray(t.calls) || t.calls.length < 1 || t.calls.length > MAX_CALLS_PER_TURN) {
    throw new InputError('calls', `be an array of 1 to ${MAX_CALLS_PER_TURN} calls`);
  }
  t.calls.forEach((c, i) => {
    if (!c || typeof c !== 'object') throw new InputError(`calls[${i}]`, 'be an object');
    if (typeof c.call_id !== 'string' || !c.call_id) throw new InputError(`calls[${i}].call_id`, 'be a non-empty string');
    if (typeof c.tool !== 'string') throw new InputError(`calls[${i}].tool`, 'be a string');
    if (!c.args || typeof c.args !== 'object' || Array.isArray(c.args)) throw new InputError(`calls[${i}].args`, 'be an object');
  });
}

function requireKey(key: unknown, waiting: Set<string>, what: string): void {
  if (typeof key !== 'string' || !waiting.has(key)) {
    throw new InputError('key', `name a call of this trajectory that is ${what} (got ${JSON.stringify(key)})`);
  }
}

function requireText(value: unknown, field: string, rule: string): void {
  if (typeof value !== 'string' || !value.trim()) throw new InputError(field, `be ${rule}`);
}
