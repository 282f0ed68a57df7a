/**
 * settle as a Temporal worker plugin (docs/plugin.md): `Worker.create({ plugins: [new SettlePlugin(…)] })`
 * registers settle's activities bound to an endpoint store, with the team's own tools next to the
 * built-ins; runs the migrations and the lease sweeper around the worker's run; and sets the
 * worker options settle's recovery relies on, unless the worker's own options set them.
 */
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SimplePlugin } from '@temporalio/plugin';
import type { BundleOptions, NativeConnection, WorkerOptions } from '@temporalio/worker';
import { requireSearchAttributes } from './namespace-check';
import { aiModelActivities, type LanguageModels } from '../activities/ai-sdk/model-call';
import { aiToolActivities } from '../activities/ai-sdk/tool-descriptions';
import { createActivities } from '../activities/index';
import { EndpointStore } from '../activities/store/endpoint-store';
import { migrateToLatest, openDatabase, useUnnamedStatements } from '../activities/store/database';
import { LeaseSweeper, type LeaseSweeperOptions } from '../activities/settled/lease-sweeper';
import { loadKeyRing, type KeyRing } from '../activities/capability/keyring';
import { operatorKeysFromEnv, type OperatorKeys } from '../activities/operator/operator-keys';
import { loadWorkerPolicy, type WorkerPolicy } from '../activities/worker-policy';
import { registerWorkerServiceUrl } from '../activities/tools/egress-policy';
import { ToolRegistry } from '../activities/tools/registry';
import type { AnyTeamTool } from '../activities/tools/team-tool';
import type { SideEffectLevel } from '../core/tools/catalog';
import type { Lane } from '../core/tools/lanes';
import { checkRecordStoreAtStart } from './record-store-check';
import { jsonLine, shareCallEventLog } from '../activities/observability/log';
import { writeStdoutLine } from '../activities/observability/stdout-lines';

/** Prepended to the workflow bundle's entries when the plugin runs AI SDK models. */
const AI_SDK_GLOBALS = fileURLToPath(
  new URL(`../workflows/ai-sdk-globals${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);

/** How long one workflow activation may run before the SDK aborts it (create-worker.ts says why it is long). */
const ISOLATE_EXECUTION_TIMEOUT = '2 minutes';
/** A dead worker's sticky workflows move to another worker after this (default 10 s): part of every recovery. */
const STICKY_QUEUE_SCHEDULE_TO_START_TIMEOUT = '2 seconds';

export interface SettlePluginOptions {
  /** The team's tools, made by defineTool: checked (names, levels, `settle lint`) when the plugin is made. */
  tools?: readonly AnyTeamTool[];
  /** Postgres holding the endpoint records; default: DATABASE_URL. */
  databaseUrl?: string;
  /** The operator's levels for team tools: raise a definition's level, never lower it. */
  levels?: Readonly<Record<string, SideEffectLevel>>;
  /**
   * The operator's lane per tool, built-ins included: `local` (a local activity, bounded by the
   * tool's maxDurationMs) or `activity`; default: SETTLE_LANES, else each definition decides
   * (docs/design.md#lanes).
   */
  lanes?: Readonly<Record<string, Lane>>;
  /** Recorded as the holder of claims; default: `settle-worker@<host>:<pid>`. */
  identity?: string;
  /** Capability keys; default: SETTLE_CAP_KEYS when set. */
  keyRing?: KeyRing | null;
  /** Operator public keys; default: SETTLE_OPERATOR_KEYS when set (without them every operator verdict is refused). */
  operatorKeys?: OperatorKeys | null;
  /** What the worker's operator allows the built-in tools; default: from the environment (activities/worker-policy.ts). */
  policy?: WorkerPolicy;
  /**
   * The workspace a team workflow's settled() calls run in: with it, they may call the file and
   * shell built-ins there (`settle mcp serve --workspace`, docs/mcp.md). The operator's
   * directory, never a workflow's or a model's: an existing directory strictly inside the
   * policy's workspace root; calls naming any other workspace are refused.
   */
  workspace?: string;
  /**
   * Whether this worker also runs settle's `trajectoryWorkflow`, whose calls name their workspace
   * inside the policy's root (default false: a call naming a workspace is refused, whatever
   * workflow schedules it, so no workflow on the queue can reach into a trajectory's workspace).
   */
  trajectories?: boolean;
  /** Run the migrations before the worker polls (default true). */
  migrate?: boolean;
  /** The lease sweeper's pace (activities/settled/lease-sweeper.ts). */
  leaseSweeper?: Omit<LeaseSweeperOptions, 'identity' | 'onError'>;
  /**
   * Where settle's own log lines go: one JSON object per line (`ts`, `level`, `msg`, the call's
   * trajectory id, turn, call id, key, generation and reason where there is one, the `worker`
   * identity and `pid`). Default: stdout. `false`: none (e.g. a process whose stdout is a
   * protocol). settle never installs Temporal's Runtime logger here: the SDK's own lines, and what
   * workflow code logs, keep the logger the team chose.
   */
  log?: ((line: string) => void) | false;
  /**
   * Where warnings go (default: a JSON line through `log`, or stderr without one), the
   * record-store check's at start among them (a failed check refuses the run).
   */
  warn?: (line: string) => void;
  /**
   * The AI SDK provider that runs `settledModel(modelId)` calls from the workflows (docs/ai-sdk.md),
   * e.g. `createOpenAICompatible({ baseURL, apiKey, name })`. Set, it also puts the Web globals
   * the AI SDK needs into the workflow bundle.
   */
  models?: LanguageModels;
}

export class SettlePlugin extends SimplePlugin {
  /** The tools the plugin's activities run: the built-ins and the team's. */
  readonly registry: ToolRegistry;
  private readonly aiSdk: boolean;
  /** Where the worker polls, once it is configured: its namespace is checked before it runs. */
  private readonly polling: { target?: PollTarget };

  /** Why this plugin cannot configure a worker (no database), or null. Bundling needs none (a pre-built bundle). */
  private readonly missingDatabase: string | null;

  /**
   * Throws a one-line error for a refused tool definition or an invalid key set. A missing
   * DATABASE_URL is refused when the plugin configures a worker (`Worker.create`), not here:
   * `bundleWorkflowCode({ plugins: [new SettlePlugin(…)] })` pre-builds a bundle without one.
   */
  constructor(options: SettlePluginOptions = {}) {
    const polling: { target?: PollTarget } = {};
    const parts = settleWorkerParts(options, () => polling.target);
    super({ name: 'settle', ...(parts.activities ? { activities: parts.activities, runContext: parts.runContext } : {}) });
    this.registry = parts.registry;
    this.missingDatabase = parts.activities
      ? null
      : 'SettlePlugin databaseUrl: must be set (or DATABASE_URL) to the Postgres URL that holds the endpoint records';
    this.aiSdk = options.models !== undefined;
    this.polling = polling;
  }

  /** With `models`: the AI SDK's Web globals installed before any workflow code is evaluated. */
  override configureBundler(options: BundleOptions): BundleOptions {
    const configured = super.configureBundler(options);
    if (!this.aiSdk) return configured;
    const previous = configured.webpackConfigHook;
    return {
      ...configured,
      webpackConfigHook: (config) => {
        const hooked = previous ? previous(config) : config;
        const entries = hooked.entry === undefined ? [] : Array.isArray(hooked.entry) ? hooked.entry : [hooked.entry];
        return { ...hooked, entry: [AI_SDK_GLOBALS, ...(entries as string[])] };
      },
    };
  }

  /** settle's activities appended; the worker options its recovery needs, unless the worker sets its own. */
  override configureWorker(options: WorkerOptions): WorkerOptions {
    if (this.missingDatabase) throw new Error(this.missingDatabase);
    const configured: WorkerOptions & { isolateExecutionTimeout?: string } = super.configureWorker(options);
    if (configured.connection) this.polling.target = { connection: configured.connection, namespace: configured.namespace ?? 'default' };
    return {
      ...configured,
      ...('stickyQueueScheduleToStartTimeout' in configured
        ? {}
        : { stickyQueueScheduleToStartTimeout: STICKY_QUEUE_SCHEDULE_TO_START_TIMEOUT }),
      // Read by the SDK though not in its public type (create-worker.ts).
      isolateExecutionTimeout: configured.isolateExecutionTimeout ?? ISOLATE_EXECUTION_TIMEOUT,
    } as WorkerOptions;
  }
}

interface PollTarget {
  connection: NativeConnection;
  namespace: string;
}

function settleWorkerParts(options: SettlePluginOptions, polling: () => PollTarget | undefined) {
  const policy = options.policy ?? loadWorkerPolicy(process.env);
  const lanes = options.lanes ?? policy.lanes;
  const registry = new ToolRegistry(options.tools ?? [], {
    ...(options.levels ? { levels: options.levels } : {}),
    ...(lanes ? { lanes } : {}),
  });
  const databaseUrl = options.databaseUrl ?? process.env.DATABASE_URL;
  // Without a database the plugin can still configure a bundler; configureWorker refuses it.
  if (!databaseUrl) return { registry, activities: null, runContext: null };
  const identity = options.identity ?? `settle-worker@${os.hostname()}:${process.pid}`;
  const keyRing = options.keyRing !== undefined ? options.keyRing : process.env.SETTLE_CAP_KEYS ? loadKeyRing() : null;
  const operatorKeys = options.operatorKeys !== undefined ? options.operatorKeys : operatorKeysFromEnv();
  const write = options.log === false ? null : (options.log ?? writeStdoutLine);
  const warn =
    options.warn ??
    (write
      ? (line: string) => write(jsonLine('warn', line, { worker: identity, pid: process.pid }))
      : (line: string) => console.warn(line));
  // The pool connects on first use: making the plugin touches no database.
  const db = openDatabase(databaseUrl);
  registerWorkerServiceUrl(databaseUrl, 5432); // never reachable through a sandbox's egress proxy
  const store = new EndpointStore(db);
  const sweeper = new LeaseSweeper(store, {
    ...options.leaseSweeper,
    identity,
    onError: (err) => warn(`settle worker: lease sweep failed (${err.message}); retrying every period`),
  });
  const runContext = async (next: () => Promise<void>): Promise<void> => {
    // Call events as JSON lines while the worker runs (one subscription per writer and worker name in a process).
    const stopLog = write ? shareCallEventLog(write, identity) : () => {};
    try {
      const target = polling();
      // Both before the worker polls, each waiting on its own server: side by side, not one after the other.
      const [attributes, recordStore] = await Promise.allSettled([
        target ? requireSearchAttributes(target.connection, target.namespace, warn) : undefined,
        (async () => {
          // Before the first claim: a record store that could forget one refuses the start (record-store-check.ts).
          if ((await checkRecordStoreAtStart(databaseUrl, warn)) !== 'session') useUnnamedStatements(db);
          if (options.migrate !== false) await migrateToLatest(databaseUrl);
        })(),
      ]);
      if (attributes.status === 'rejected') throw attributes.reason;
      if (recordStore.status === 'rejected') throw recordStore.reason;
      sweeper.start();
      await next();
    } finally {
      await sweeper.stop();
      await db.destroy();
      stopLog();
    }
  };
  const activities = {
    ...createActivities({
      store,
      identity,
      keyRing,
      policy,
      operatorKeys,
      registry,
      ...(options.workspace ? { workspace: options.workspace } : {}),
      runsTrajectories: options.trajectories === true,
    }),
    ...aiToolActivities(options.tools ?? []),
    ...aiModelActivities(options.models),
  };
  return { registry, activities, runContext };
}
