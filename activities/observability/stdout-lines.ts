/**
 * The worker's log lines on stdout, through one buffered writer that does not block the event
 * loop (sonic-boom, pino's writer). Node writes to a pipe synchronously: with a line per call
 * event, two write system calls sat on every settled call's path. Lines keep their order across
 * every caller of this module; what is still buffered is written out synchronously when the
 * process exits. A SIGKILL loses at most the lines of the write in flight — the endpoint records
 * and their events in Postgres, not the log, are the durable account of a call.
 */
import SonicBoom from 'sonic-boom';

let stdout: SonicBoom | null = null;

export function writeStdoutLine(line: string): void {
  if (!stdout) {
    const boom = new SonicBoom({ fd: 1, sync: false });
    // A closed stdout (the reader went away) must never crash a worker over a log line.
    boom.on('error', () => {});
    process.once('exit', () => {
      try {
        boom.flushSync();
      } catch {
        // Nothing more can be done at exit.
      }
    });
    stdout = boom;
  }
  stdout.write(line + '\n');
}
