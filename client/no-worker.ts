/**
 * A query or an update reaches a trajectory only through a worker polling its task queue: with
 * none, Temporal holds it until its deadline and answers a bare FAILED_PRECONDITION. Asked first,
 * the operator gets one line naming the queue at once.
 */
export class NoWorkerError extends Error {
  override readonly name = 'NoWorkerError';
  constructor(
    readonly taskQueue: string,
    trajectoryId: string,
    action: string,
  ) {
    super(
      `no worker polls task queue ${JSON.stringify(taskQueue)}: trajectory ${trajectoryId} cannot ${action} until one does (start one: npm run worker, or settle dev)`,
    );
  }
}
