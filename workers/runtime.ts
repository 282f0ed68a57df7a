/** Process-wide Temporal runtime settings; call before the first worker or connection. */
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';

let installed = false;

export function installRuntime(level: LogLevel = 'WARN'): void {
  if (installed) return;
  installed = true;
  Runtime.install({ logger: new DefaultLogger(level) });
}
