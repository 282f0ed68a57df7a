/** settle dev's one log line per worker process event (stack/worker-processes.ts), as JSON like the workers' own. */
import { jsonLine } from '../activities/observability/log';
import type { WorkerEvent } from '../stack/worker-processes';

export function workerEventLine(event: WorkerEvent): string {
  if (event.kind === 'restarted') {
    return jsonLine('info', `settle dev: worker ${event.previousPid} restarted as pid ${event.pid}`, {
      pid: event.pid,
      previousPid: event.previousPid,
      slot: event.slot,
    });
  }
  // The truth about who is left: with none, nothing polls until the restart.
  const left =
    event.running === 0 ? 'no worker is running: nothing polls until it is back' : `${event.running} of ${event.count} still running`;
  const seconds = Math.round(event.restartInMs / 100) / 10;
  return jsonLine('warn', `settle dev: worker ${event.pid} ended (${event.how}); ${left}; restarting it in ${seconds} s`, {
    pid: event.pid,
    slot: event.slot,
    running: event.running,
    restartInMs: event.restartInMs,
  });
}
