/** `settle/worker`: a settle worker (activities and settle's own workflows). */
export { createSettleWorker, WORKFLOWS_PATH } from '../workers/create-worker';
export type { SettleWorker, SettleWorkerOptions } from '../workers/create-worker';
