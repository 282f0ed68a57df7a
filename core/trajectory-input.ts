/**
 * The input contract: what a trajectory accepts, defined once (docs/design.md#input-contract).
 *
 * One zod schema serves every entry: a spec file (`settle start`), `SettleClient.start`, the
 * workflow's own input check, `runTurn` updates and the calls a model proposes. Limits that keep
 * history healthy (argument size and depth, calls per turn) are part of the contract, so a
 * hostile or broken caller is refused before anything enters history.
 */
import { z } from 'zod';
import { CapabilityToken } from './capability/token';
import { jsonDepth, jsonLength, MAX_JSON_DEPTH } from './json-limits';
import { isReservedVariable, RESERVED_VARIABLES_RULE } from './reserved-variables';
import { isReservedChildId, RESERVED_CHILD_ID_RULE } from './trajectory-ids';
import { COMPENSATION_SUFFIX } from './tools/compensation';
import { CATALOG, isToolName, LEVEL_ORDER, levelAtLeast, type SideEffectLevel } from './tools/catalog';
import { lazy } from './lazy';

/** A call's arguments, as JSON text, at most this many characters (well under Temporal's 2 MB payload limit). */
export const MAX_ARGS_CHARS = 128 * 1024;
/** All arguments of one turn together: an update payload stays under Temporal's 512 KB warning threshold. */
export const MAX_TURN_ARGS_CHARS = 512 * 1024;
export const MAX_CALLS_PER_TURN = 64;
export const MAX_CALL_ID_CHARS = 255;

// Every schema is built on first use and kept in a closure (core/lazy.ts): this module is
// preloaded into the workflow sandbox's shared module cache, which is deep-frozen after the
// preload, and a zod schema must stay out of its reach (workers/workflow-bundle.ts). Built once
// per worker thread, not once per trajectory.

const Level = lazy(() => z.enum(LEVEL_ORDER as [SideEffectLevel, ...SideEffectLevel[]]));

/** A call's arguments: a JSON object within the depth and size limits. */
export const CallArgs = lazy(() =>
  z.record(z.string(), z.unknown()).superRefine((args, ctx) => {
    if (jsonDepth(args) > MAX_JSON_DEPTH) {
      ctx.addIssue({ code: 'custom', message: `nest at most ${MAX_JSON_DEPTH} levels deep` });
      return;
    }
    const length = jsonLength(args);
    if (length > MAX_ARGS_CHARS)
      ctx.addIssue({ code: 'custom', message: `be at most ${MAX_ARGS_CHARS} characters of JSON (got ${length})` });
  }),
);

/** A tool call as a model or orchestrator proposes it. Its arguments are checked against the tool later. */
export const ProposedCallSchema = lazy(() =>
  z
    .object({
      call_id: z
        .string()
        .min(1)
        .max(MAX_CALL_ID_CHARS)
        .refine((id) => !id.endsWith(COMPENSATION_SUFFIX), { error: `not end with ${COMPENSATION_SUFFIX} (reserved for compensations)` }),
      tool: z.string().min(1).max(64),
      args: CallArgs(),
    })
    .strict(),
);

const turnCalls = lazy(() =>
  z
    .array(ProposedCallSchema())
    .min(1)
    .max(MAX_CALLS_PER_TURN)
    .superRefine((calls, ctx) => {
      const total = calls.reduce((sum, c) => sum + jsonLength(c.args), 0);
      if (total > MAX_TURN_ARGS_CHARS) {
        ctx.addIssue({ code: 'custom', message: `carry at most ${MAX_TURN_ARGS_CHARS} characters of arguments per turn (got ${total})` });
      }
    }),
);

export const RunTurnInputSchema = lazy(() => z.object({ turn: z.number().int().min(0), calls: turnCalls() }).strict());
export const ScriptedTurnSchema = RunTurnInputSchema;

export const ModelDriverSchema = lazy(() =>
  z
    .object({
      /** e.g. http://127.0.0.1:8000/v1 — the adapter POSTs to `${baseUrl}/chat/completions`. */
      baseUrl: z.url({ protocol: /^https?$/ }).max(2048),
      model: z.string().min(1).max(200),
      /**
       * Name of the worker's environment variable holding the API key (the key never enters history).
       * The worker sends it only when its operator lists it (SETTLE_MODEL_KEY_ENVS) and only to an
       * allowed base URL (SETTLE_MODEL_ENDPOINTS).
       */
      apiKeyEnv: z
        .string()
        .regex(
          /^[A-Z_][A-Z0-9_]*$/,
          'be an environment variable name: capital letters, digits and _, not starting with a digit (e.g. MODEL_API_KEY)',
        )
        .max(128)
        .refine((name) => !isReservedVariable(name), { error: RESERVED_VARIABLES_RULE })
        .optional(),
      system: z.string().max(100_000).optional(),
      temperature: z.number().min(0).max(2).optional(),
      task: z.string().min(1).max(100_000),
      maxTurns: z.number().int().min(1).max(1000).optional(),
      maxTotalTokens: z.number().int().min(1).optional(),
    })
    .strict(),
);

/** State a run hands to its continuation (continue-as-new); set by settle, never by callers. */
const CarriedStateSchema = lazy(() =>
  z
    .object({
      reports: z.array(z.looseObject({})),
      turnsDone: z.array(z.number().int().min(0)),
      conversation: z.array(z.unknown()).optional(),
      modelTurn: z.number().int().min(0).optional(),
      tokensUsed: z.number().min(0).optional(),
      nextScriptedTurn: z.number().int().min(0).optional(),
      continuedAsNew: z.number().int().min(0),
      droppedReports: z.number().int().min(0).optional(),
    })
    .loose(),
);

const trajectoryFields = lazy(() => ({
  /** Absolute path of this trajectory's workspace directory. */
  workspace: z
    .string()
    .min(2)
    .max(1024)
    .regex(/^\/[^\0]*$/, 'be an absolute path without NUL characters'),
  /** Scripted driver: run these turns, then complete. */
  turns: z.array(ScriptedTurnSchema()).max(10_000).optional(),
  /** Model driver: ask this OpenAI-compatible model for calls until a final answer or a limit. */
  model: ModelDriverSchema().optional(),
  /** Endpoint-record lease, renewed by heartbeats (every leaseMs/3) and equal to the heartbeat timeout. Default 3 s. */
  leaseMs: z.number().int().min(500).max(3_600_000).optional(),
  /** Backoff between retries of a busy or not-executed call: initial × 2^n, capped. Default 1 s, 30 s. */
  backoff: z
    .object({ initialMs: z.number().int().min(10).max(3_600_000).optional(), maxMs: z.number().int().min(10).max(3_600_000).optional() })
    .strict()
    .optional(),
  /** Grants nothing by itself: sandboxed commands get the network only from the capability's `connect` right. Kept for recorded inputs. */
  network: z.boolean().optional(),
  /** How long an A3 call waits for `approveCall` before it is denied. Default 1 hour. */
  approvalTimeoutMs: z
    .number()
    .int()
    .min(1000)
    .max(30 * 24 * 3600_000)
    .optional(),
  /** Raise tools' levels for this trajectory (e.g. require approval for every shell command). Lowering is refused. */
  levelOverrides: z.record(z.string(), Level()).optional(),
  /** Parent trajectory id, for sub-agents (shown as a search attribute). */
  parentTrajectoryId: z.string().min(1).max(1000).optional(),
  /**
   * `hmac`: keys are HMAC-SHA-256 with the worker's SETTLE_KEY_SECRET (docs/design.md#key-derivation),
   * derived by a local activity: the secret never enters workflow code or history. Default `sha256`.
   */
  keyMode: z.enum(['sha256', 'hmac']).optional(),
  /** The trajectory's signed capability (`settle cap mint`), checked in the activity at every access. */
  capability: CapabilityToken().optional(),
  /** Continue-as-new once history passes this many events (default: when Temporal suggests it). */
  maxHistoryEvents: z.number().int().min(10).max(50_000).optional(),
}));

type TrajectoryFields = z.infer<z.ZodObject<ReturnType<typeof trajectoryFields>>>;

/** Rules across fields, shared by the input and the spec. */
function crossFieldRules(input: TrajectoryFields, ctx: z.RefinementCtx): void {
  if (input.turns && input.model)
    ctx.addIssue({ code: 'custom', path: ['model'], message: 'not be given together with turns (choose one driver)' });
  for (const [tool, level] of Object.entries(input.levelOverrides ?? {})) {
    if (!isToolName(tool)) {
      ctx.addIssue({ code: 'custom', path: ['levelOverrides', tool], message: `name a catalog tool (${Object.keys(CATALOG).join(', ')})` });
    } else if (CATALOG[tool].level === 'A0' && level !== 'A0') {
      // A read-only tool runs without an endpoint record; there is no settled path to raise it to.
      ctx.addIssue({
        code: 'custom',
        path: ['levelOverrides', tool],
        message: `not be raised: ${tool} is read-only (A0) and runs without an endpoint record`,
      });
    } else if (!levelAtLeast(level, CATALOG[tool].level)) {
      ctx.addIssue({ code: 'custom', path: ['levelOverrides', tool], message: `not lower the level (${CATALOG[tool].level} → ${level})` });
    }
  }
  const backoff = input.backoff;
  if (backoff?.initialMs !== undefined && backoff.maxMs !== undefined && backoff.maxMs < backoff.initialMs) {
    ctx.addIssue({ code: 'custom', path: ['backoff', 'maxMs'], message: `be at least backoff.initialMs (${backoff.initialMs})` });
  }
}

/** What a caller may start a trajectory with (`SettleClient.start`). */
export const TrajectoryRequestSchema = lazy(() => z.object(trajectoryFields()).strict().superRefine(crossFieldRules));

/** What the workflow accepts: a caller's request, or a run's continuation carrying its state. */
export const TrajectoryInputSchema = lazy(() =>
  z
    .object({ ...trajectoryFields(), carried: CarriedStateSchema().optional() })
    .strict()
    .superRefine(crossFieldRules),
);

/** A spec file for `settle start`: the trajectory input plus its id. The capability's audience must be that id. */
export const TrajectorySpecSchema = lazy(() =>
  z
    .object({
      trajectoryId: z
        .string()
        .min(1)
        .max(255)
        .refine((id) => !isReservedChildId(id), { error: RESERVED_CHILD_ID_RULE })
        .describe('Workflow id of the trajectory; part of every key.'),
      ...trajectoryFields(),
    })
    .strict()
    .superRefine(crossFieldRules)
    .superRefine((spec, ctx) => {
      if (spec.capability && spec.capability.body.aud !== spec.trajectoryId) {
        ctx.addIssue({ code: 'custom', path: ['capability'], message: 'be issued to trajectoryId (its body.aud)' });
      }
    }),
);

export type ProposedCall = z.output<ReturnType<typeof ProposedCallSchema>>;
export type RunTurnInput = z.output<ReturnType<typeof RunTurnInputSchema>>;
export type ScriptedTurn = RunTurnInput;
export type ModelDriver = z.output<ReturnType<typeof ModelDriverSchema>>;
export type TrajectorySpec = z.output<ReturnType<typeof TrajectorySpecSchema>>;
export type TrajectoryRequest = z.input<ReturnType<typeof TrajectoryRequestSchema>>;
