/** The name a worker process goes by: on Temporal's pollers, on the lease sweeper's events, on every call's log line. */
import os from 'node:os';

export function defaultWorkerIdentity(): string {
  return `settle-worker@${os.hostname()}:${process.pid}`;
}
