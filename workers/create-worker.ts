/**
 * Builds a settle worker: the trajectory workflows plus the activities bound to an endpoint
 * store. Shared by the production entry point (worker.ts), `settle dev`, the demo and the tests.
 */
import { registerWorkerServiceUrl } from '../activities/tools/egress-policy';
import { cgroupSupport } from '../activities/tools/sandbox-cgroup';
import { defaultWorkerIdentity } from '../activities/observability/worker-identity';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { describeTarget, loadTemporalTarget, type TargetOverrides, type TemporalTarget } from '../client/connection';
import { tlsHandshakeProblem } from '../client/tls-probe';
import { createActivities } from '../activities/index';
import { requireSearchAttributes } from './namespace-check';
import { EndpointStore } from '../activities/store/endpoint-store';
import { openDatabase, useUnnamedStatements } from '../activities/store/database';
import { LeaseSweeper, type LeaseSweeperOptions } from '../activities/settled/lease-sweeper';
import { loadKeyRing, type KeyRing } from '../activities/capability/keyring';
import { operatorKeysFromEnv, type OperatorKeys } from '../activities/operator/operator-keys';
import { ALLOW_NO_CAPABILITY_VARIABLE, loadWorkerPolicy, type WorkerPolicy } from '../activities/worker-policy';
import { tracingFromEnv, type Tracing } from './tracing';
import { PRELOAD_MODULES, prebuiltWorkflowBundle, WORKFLOWS_PATH } from './workflow-bundle';
import { checkRecordStoreAtStart } from './record-store-check';
import type { PoolingMode } from '../core/record-store-requirements';
import { hostQueue, parseHostId } from '../core/hosts';
import { hostIdFor } from '../activities/host-id';

export { DEFAULT_TASK_QUEUE } from '../client/connection';
export { WORKFLOWS_PATH } from './workflow-bundle';

/** How long one workflow activation may run (wall clock) before the SDK aborts it: see createSettleWorker. */
export const ISOLATE_EXECUTION_TIMEOUT = '2 minutes';

export interface SettleWorkerOptions {
  /**
   * Overrides on top of the standard Temporal configuration (client/connection.ts: envconfig
   * profile and TEMPORAL_* environment, TLS and API keys included).
   */
  temporal?: TargetOverrides;
  databaseUrl: string;
  /**
   * A pre-built bundle (tests bundle once per run; build it with workers/workflow-bundle.ts's
   * settleBundleOptions); default: SETTLE_WORKFLOW_BUNDLE, else the package's own (built by
   * `npm run build` for the installed SDK), else workflows are bundled at start, with the same options.
   */
  workflowBundle?: { code: string } | { codePath: string };
  identity?: string;
  /** Capability keys; default: SETTLE_CAP_KEYS when set (invalid keys fail the start). */
  keyRing?: KeyRing | null;
  /**
   * Operator public keys; default: SETTLE_OPERATOR_KEYS when set (invalid keys fail the start).
   * Without them every operator verdict and approval is refused (docs/security.md#operator-authority).
   */
  operatorKeys?: OperatorKeys | null;
  /**
   * What the worker's operator allows (made by makeWorkerPolicy); default: from the worker's
   * environment (activities/worker-policy.ts: SETTLE_WORKSPACE_ROOT, SETTLE_MODEL_ENDPOINTS,
   * SETTLE_MODEL_KEY_ENVS, SETTLE_ALLOW_NO_CAPABILITY).
   */
  policy?: WorkerPolicy;
  /**
   * Where start-up warnings go (default: stderr): among them the record-store check's
   * (workers/record-store-check.ts; a failed check refuses the start).
   */
  warn?: (line: string) => void;
  /**
   * The pooler mode found by a record-store check the caller runs (workers/worker.ts, with its
   * migrations after it), or the promise of it: the check is not run again, and no worker is
   * created before it resolves (its rejection is the start's). Otherwise the check runs here.
   */
  recordStoreChecked?: PoolingMode | Promise<PoolingMode>;
  /** OpenTelemetry tracing of activities; default: as the environment asks (workers/tracing.ts), else none. */
  tracing?: Tracing | null;
  /**
   * The lease sweeper's pace (activities/settled/lease-sweeper.ts; default SWEEP_DEFAULTS). It runs
   * while the worker runs: records whose holder died turn IN_DOUBT even if nothing claims them again.
   */
  leaseSweeper?: Omit<LeaseSweeperOptions, 'identity' | 'onError'>;
  /**
   * How long a shutdown waits for the calls in flight before run() gives up on them with the SDK's
   * GracefulShutdownPeriodExpiredError (default: as long as they take). A call given up on stays
   * IN_FLIGHT until its lease runs out, then the lease sweeper of any worker takes it.
   */
  shutdownForceTimeMs?: number;
  /**
   * The build id the worker stamps on the workflow tasks it completes (visible in each history's
   * WorkflowTaskCompleted events); default: SETTLE_BUILD_ID, else the SDK's (its version and a
   * checksum of the workflow bundle). Routing stays unversioned: any build takes any task
   * (docs/deploying.md#rolling-upgrades says why).
   */
  buildId?: string;
  /**
   * This worker's host id (core/hosts.ts); default: SETTLE_HOST_ID, else derived from the machine,
   * the host name and the workspace root (activities/host-id.ts). Workers that see the same
   * workspaces share one; workers that do not must not.
   */
  hostId?: string;
}

export interface SettleWorker {
  worker: Worker;
  /**
   * The activities-only worker on this host's own queue (core/hosts.ts hostQueue): a trajectory
   * sends its workspace calls there, so they run where the workspace is, and nowhere else.
   */
  hostWorker: Worker;
  /** This worker's host id, and the queue its host worker polls. */
  host: { id: string; queue: string };
  /** Where it polls (for logs: no secrets). */
  target: TemporalTarget;
  /** Runs until shutdown() is called or a signal arrives; closes the pool and connection after. */
  run(): Promise<void>;
  shutdown(): void;
}

export async function createSettleWorker(options: SettleWorkerOptions): Promise<SettleWorker> {
  const identity = options.identity ?? defaultWorkerIdentity();
  const target = loadTemporalTarget(options.temporal);
  const keyRing = options.keyRing !== undefined ? options.keyRing : process.env.SETTLE_CAP_KEYS ? loadKeyRing() : null;
  const operatorKeys = options.operatorKeys !== undefined ? options.operatorKeys : operatorKeysFromEnv();
  const policy = options.policy ?? loadWorkerPolicy(process.env);
  const host = options.hostId !== undefined ? parseHostId(options.hostId, 'hostId') : hostIdFor(policy.workspaceRoot);
  const warn = options.warn ?? ((line: string) => console.warn(line));
  if (keyRing && policy.allowNoCapability) {
    warn(
      `settle worker: WARNING: ${ALLOW_NO_CAPABILITY_VARIABLE}=1 — trajectories without a capability run UNCHECKED on this worker ` +
        '(any path in their workspace, any command). Development only; unset it in production.',
    );
  }
  // Per-call cgroups, or a loud warning (stderr, once per process) that calls are bounded per process only.
  cgroupSupport(warn);
  // Before any worker exists, so before anything polls: a record store that could forget a claim
  // refuses the start. The check runs while Temporal is reached and the activities are made (each
  // side mostly waits on its own round trips); it is awaited before the workers are created.
  const recordStore = Promise.resolve(options.recordStoreChecked ?? checkRecordStoreAtStart(options.databaseUrl, warn));
  recordStore.catch(() => {}); // awaited below, on every path
  /** A start that fails on both sides reports the record store's failure, as when it was checked first. */
  const failStart = async (err: unknown): Promise<never> => {
    await recordStore;
    throw err;
  };
  const tracing = options.tracing !== undefined ? options.tracing : await tracingFromEnv('settle').catch(failStart);
  const db = openDatabase(options.databaseUrl);
  // The worker's own services: never reachable through a sandbox's egress proxy, whatever the operator allows.
  registerWorkerServiceUrl(options.databaseUrl, 5432);
  registerWorkerServiceUrl(`temporal://${target.connectionOptions.address}`, 7233);
  const store = new EndpointStore(db);
  const sweeper = new LeaseSweeper(store, {
    ...options.leaseSweeper,
    identity,
    onError: (err) => warn(`settle worker: lease sweep failed (${err.message}); retrying every period`),
  });
  const workflowBundle = options.workflowBundle ?? prebuiltWorkflowBundle();
  const connection = await NativeConnection.connect(target.connectionOptions).catch(async (err: Error) => {
    await Promise.all([db.destroy(), tracing?.shutdown()]);
    // The Rust core's transport error names no cause a person can act on: a TLS handshake of our own does.
    const cause = (await tlsHandshakeProblem(target).catch(() => null)) ?? err.message;
    return failStart(new Error(`cannot connect to Temporal at ${describeTarget(target)}: ${cause}`));
  });
  // Before anything polls: a namespace without settle's search attributes would stall every workflow.
  try {
    await requireSearchAttributes(connection, target.namespace, warn);
  } catch (err) {
    await Promise.all([connection.close(), db.destroy(), tracing?.shutdown()]);
    return failStart(err);
  }
  // `isolateExecutionTimeout` is read by the SDK (1.24: its defaults are spread under the options)
  // but not in its public type: see the comment where it is set.
  const activities = createActivities({
    store,
    identity,
    keyRing,
    policy,
    operatorKeys,
    runsTrajectories: true,
    host,
    pollsHostQueue: true,
  });
  const workerOptions: WorkerOptions & { isolateExecutionTimeout: string } = {
    connection,
    namespace: target.namespace,
    taskQueue: target.taskQueue,
    identity,
    // A workflow cached on a worker that died waits this long before another worker takes its next
    // task (default 10 s): part of every recovery from a dead worker.
    stickyQueueScheduleToStartTimeout: '2 seconds',
    // The SDK bounds each workflow activation with a wall-clock vm timeout (default 5 s). A worker
    // paused past it mid-activation (SIGSTOP, a frozen VM, a starved host) has the timeout fire on
    // resume, and Node then aborts the process: "async hook stack has become corrupted"
    // (nodejs/node#38503, temporalio/sdk-typescript#939), seen in `npm run chaos` zombie scenarios.
    // settle's workflow code is bounded (its inputs are size-limited), so a long bound costs nothing;
    // test/e2e/worker-options.test.ts checks the SDK still honours it.
    isolateExecutionTimeout: ISOLATE_EXECUTION_TIMEOUT,
    ...(options.shutdownForceTimeMs !== undefined ? { shutdownForceTime: options.shutdownForceTimeMs } : {}),
    ...buildIdOption(options.buildId ?? (process.env.SETTLE_BUILD_ID || undefined)),
    activities,
    ...(workflowBundle ? { workflowBundle } : { workflowsPath: WORKFLOWS_PATH, bundlerOptions: { preloadModules: [...PRELOAD_MODULES] } }),
    ...(tracing ? { interceptors: { activity: tracing.activityInterceptors } } : {}),
  };
  try {
    if ((await recordStore) !== 'session') useUnnamedStatements(db);
  } catch (err) {
    await Promise.all([connection.close(), db.destroy(), tracing?.shutdown()]);
    throw err;
  }
  const queue = hostQueue(target.taskQueue, host);
  let worker: Worker;
  let hostWorker: Worker;
  try {
    worker = await Worker.create(workerOptions);
    // The same activities on the host's own queue; no workflows (they run on the shared queue).
    hostWorker = await Worker.create({
      connection,
      namespace: target.namespace,
      taskQueue: queue,
      identity,
      activities,
      ...(options.shutdownForceTimeMs !== undefined ? { shutdownForceTime: options.shutdownForceTimeMs } : {}),
      ...(tracing ? { interceptors: { activity: tracing.activityInterceptors } } : {}),
    });
  } catch (err) {
    await connection.close();
    await db.destroy();
    await tracing?.shutdown();
    throw err;
  }
  // Either one stopping (a signal, shutdown(), a fatal error) stops the other.
  const stopBoth = () => {
    for (const w of [worker, hostWorker]) if (w.getState() === 'RUNNING') w.shutdown();
  };
  const shutdown = () => {
    if (hostWorker.getState() === 'RUNNING') hostWorker.shutdown();
    worker.shutdown(); // as the SDK's: throws unless running
  };
  return {
    worker,
    hostWorker,
    host: { id: host, queue },
    target,
    shutdown,
    run: async () => {
      sweeper.start();
      try {
        const runs = [worker.run(), hostWorker.run()].map((run) => run.finally(stopBoth));
        const [shared, own] = await Promise.allSettled(runs);
        for (const result of [shared, own]) if (result?.status === 'rejected') throw result.reason;
      } finally {
        await sweeper.stop();
        await connection.close();
        await db.destroy();
        await tracing?.shutdown(); // exports the spans still buffered
      }
    },
  };
}

/** The SDK's `buildId` (deprecated there only as the key of the old versioning API, which settle does not opt into). */
function buildIdOption(buildId: string | undefined): Partial<WorkerOptions> {
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- the stamp, not the deprecated routing (useVersioning)
  return buildId ? { buildId } : {};
}
