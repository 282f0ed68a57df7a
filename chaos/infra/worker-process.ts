/**
 * A settle worker as a real operating-system process (workers/worker.ts), for the chaos suite and
 * the crash tests: it can be killed (SIGKILL), paused (SIGSTOP) and resumed (SIGCONT), and its
 * identity — the holder recorded on the endpoint records it claims — is known from its pid.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { hostIdIn, inHost, type HostMount } from './host';

const READY = /settle worker: .*queue=/;
const WORKER = fileURLToPath(new URL('../../workers/worker.ts', import.meta.url));

export interface WorkerProcessOptions {
  temporalAddress: string;
  databaseUrl: string;
  taskQueue: string;
  /** A pre-built workflow bundle (SETTLE_WORKFLOW_BUNDLE): start in ~1 s instead of bundling. */
  workflowBundlePath?: string;
  /** SETTLE_FAILPOINTS for this process (activities/failpoints.ts). */
  failpoints?: string;
  env?: NodeJS.ProcessEnv;
  /** Keep at most this many characters of output (default 64 KiB). */
  maxOutput?: number;
  /** A pre-built worker entry point (plain JavaScript, e.g. bundled by esbuild): starts faster than tsx. */
  entry?: string;
  /** The line the worker prints once it polls (default: settle's worker's settings line). */
  ready?: RegExp;
  /**
   * Run on a "host" of its own (chaos/infra/host.ts): in a mount namespace where the host's disk
   * is bound at the shared path, as the leader of its own process group (a host's death kills it).
   */
  host?: HostMount;
}

export type Exit = { code: number | null; signal: NodeJS.Signals | null };

export class WorkerProcess {
  readonly pid: number;
  readonly exited: Promise<Exit>;
  private out = '';
  private polling = false;
  private host: string | null = null;

  private constructor(
    readonly child: ChildProcess,
    maxOutput: number,
    ready: RegExp,
  ) {
    this.pid = child.pid!;
    const collect = (b: Buffer) => {
      this.out = (this.out + b.toString()).slice(-maxOutput);
      // Remembered: the settings line may later scroll out of the kept output.
      if (!this.polling && ready.test(this.out)) {
        this.polling = true;
        this.host = hostIdIn(this.out);
      }
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  static start(options: WorkerProcessOptions): WorkerProcess {
    const node = { file: process.execPath, args: options.entry ? [options.entry] : ['--import', 'tsx', WORKER] };
    const command = options.host ? inHost(options.host, node.file, node.args) : node;
    const child = spawn(command.file, command.args, {
      env: {
        ...process.env,
        ...options.env,
        TEMPORAL_ADDRESS: options.temporalAddress,
        DATABASE_URL: options.databaseUrl,
        TEMPORAL_TASK_QUEUE: options.taskQueue,
        // The harnesses create workspaces in the OS temp dir (the default root is .settle/workspaces).
        SETTLE_WORKSPACE_ROOT: options.env?.SETTLE_WORKSPACE_ROOT ?? fs.realpathSync(os.tmpdir()),
        SETTLE_FAILPOINTS: options.failpoints ?? '',
        ...(options.workflowBundlePath ? { SETTLE_WORKFLOW_BUNDLE: options.workflowBundlePath } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.host ? { detached: true } : {}),
    });
    return new WorkerProcess(child, options.maxOutput ?? 64 * 1024, options.ready ?? READY);
  }

  /** The identity the worker records as holder of its claims (workers/create-worker.ts). */
  get identity(): string {
    return `settle-worker@${os.hostname()}:${this.pid}`;
  }

  /** The host id the worker logged once it polled (settle's worker logs it; null before, or for another worker). */
  get hostId(): string | null {
    return this.host;
  }

  output(): string {
    return this.out;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** True while the process is stopped (SIGSTOP), from /proc/<pid>/stat. */
  get stopped(): boolean {
    try {
      const stat = fs.readFileSync(`/proc/${this.pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'T';
    } catch {
      return false;
    }
  }

  /** True once the worker polls its task queue (it printed its settings line). */
  get isReady(): boolean {
    return this.polling;
  }

  /** Resolves when the worker polls its task queue (it prints its settings line then). */
  async ready(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.polling) {
      if (!this.alive) throw new Error(`worker ${this.pid} exited before it was ready:\n${this.out}`);
      if (Date.now() > deadline) throw new Error(`worker ${this.pid} not ready after ${timeoutMs} ms:\n${this.out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  signal(signal: NodeJS.Signals): void {
    if (this.alive) this.child.kill(signal);
  }

  async kill(): Promise<Exit> {
    this.signal('SIGKILL');
    return this.exited;
  }
}
