/**
 * Regular-expression matching off the event loop: a worker thread per search, terminated at the
 * search's deadline. A backtracking pattern (e.g. `(a+)+$`) then costs one thread its time
 * limit, while the worker's event loop keeps serving every other trajectory (heartbeats,
 * leases) — a `vm` timeout stops the pattern too, but only after blocking the loop until then.
 */
import { Worker } from 'node:worker_threads';

/** Plain JavaScript, evaluated in the thread: returns the 0-based indexes of matching lines, at most `limit`. */
const THREAD_SOURCE = `
  const { parentPort, workerData } = require('node:worker_threads');
  const re = new RegExp(workerData.source, workerData.flags);
  parentPort.on('message', ({ text, limit }) => {
    const found = [];
    const lines = text.split(/\\r?\\n/);
    for (let i = 0; i < lines.length && found.length < limit; i++) {
      re.lastIndex = 0;
      if (re.test(lines[i])) found.push(i);
    }
    parentPort.postMessage(found);
  });
`;

export type MatchResult = { kind: 'found'; lines: number[] } | { kind: 'timeout' };

export class RegexWorker {
  private readonly worker: Worker;
  private failure: Error | null = null;

  constructor(re: RegExp) {
    this.worker = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: { source: re.source, flags: re.flags },
      // A file is at most 5 MiB of text; the thread needs little more.
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    this.worker.on('error', (err) => {
      this.failure = err;
    });
    this.worker.unref();
  }

  /** Matching lines of `text`, or `timeout` when `timeoutMs` passed first (the thread is then terminated). */
  async match(text: string, limit: number, timeoutMs: number): Promise<MatchResult> {
    if (this.failure) throw this.failure;
    if (timeoutMs <= 0) return this.timeout();
    return new Promise<MatchResult>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        this.worker.off('message', onMessage);
        this.worker.off('error', onError);
        this.worker.off('exit', onExit);
      };
      const onMessage = (lines: number[]) => {
        done();
        resolve({ kind: 'found', lines });
      };
      const onError = (err: Error) => {
        done();
        reject(err);
      };
      const onExit = (code: number) => {
        done();
        reject(new Error(`the search thread exited (code ${code})`));
      };
      const timer = setTimeout(() => {
        done();
        resolve(this.timeout());
      }, timeoutMs);
      this.worker.on('message', onMessage);
      this.worker.once('error', onError);
      this.worker.once('exit', onExit);
      this.worker.postMessage({ text, limit });
    });
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }

  private timeout(): MatchResult {
    void this.worker.terminate();
    return { kind: 'timeout' };
  }
}
