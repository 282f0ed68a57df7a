/**
 * The worker options settle relies on for recovery, as the SDK compiled them: a dead worker's
 * sticky queue is given up after 2 s, and one workflow activation may run (wall clock) for 2 min
 * before the SDK aborts it — a worker paused past the SDK's default 5 s mid-activation crashed on
 * resume in `npm run chaos` ("async hook stack has become corrupted"). `isolateExecutionTimeout`
 * is not in the SDK's public type: this fails if an SDK upgrade stops honouring it.
 */
import { describe, expect, inject, it } from 'vitest';
import { createSettleWorker, ISOLATE_EXECUTION_TIMEOUT } from '../../workers/create-worker';
import { installRuntime } from '../../workers/runtime';
import { makeWorkerPolicy } from '../../activities/worker-policy';
import { testWorkspaceRoot, uniqueId } from '../support/env';

describe('settle worker options', () => {
  it('gives a workflow activation 2 minutes and a dead sticky queue 2 seconds', async () => {
    installRuntime('WARN');
    const settle = await createSettleWorker({
      temporal: { address: inject('temporalAddress'), taskQueue: uniqueId('options') },
      databaseUrl: inject('databaseUrl'),
      workflowBundle: { codePath: inject('workflowBundlePath') },
      keyRing: null,
      policy: makeWorkerPolicy({ workspaceRoot: testWorkspaceRoot(), modelEndpoints: [], modelKeyEnvs: [], allowNoCapability: false }),
      warn: () => {},
    });
    const running = settle.run();
    try {
      expect(ISOLATE_EXECUTION_TIMEOUT).toBe('2 minutes');
      expect(settle.worker.options.isolateExecutionTimeoutMs).toBe(120_000);
      expect(settle.worker.options.stickyQueueScheduleToStartTimeoutMs).toBe(2_000);
    } finally {
      settle.shutdown();
      await running;
    }
  });
});
