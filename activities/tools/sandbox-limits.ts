/**
 * Resource limits of one shell call, set by the worker's operator (environment of the worker):
 *
 * - processes: RLIMIT_NPROC. Counted per user namespace, and every call has its own, so this is
 *   the number of processes (and threads) one call may run at once.
 * - memory: RLIMIT_DATA of each process (heap and private writable mappings, what a program
 *   allocates; address-space reservations such as V8's are not counted, so node still starts).
 * - cpu: RLIMIT_CPU of each process, in seconds (SIGXCPU, exit status 152, past it).
 * - tmp: size of the sandbox's in-memory /tmp, and separately of /dev/shm.
 * - file: RLIMIT_FSIZE of each process, in MiB: the largest file it may write (SIGXFSZ, exit
 *   status 153, past it). One file, not the total: that takes a quota on the workspace's file
 *   system, which the operator provisions (docs/sandbox.md#disk).
 *
 * - callMemory: the call's total memory (all its processes and the tmpfs pages it writes), and
 *   processes again as a total, where the worker can give each call a cgroup (sandbox-cgroup.ts).
 * - workerMemory: the total of all this worker's calls together, in the cgroup that holds theirs.
 * - maxCalls: how many shell calls the worker runs at once; one more is refused, not queued.
 *
 * The rlimits are per process: without a cgroup a call may hold up to processes × memory.
 */
export interface SandboxLimits {
  processes: number;
  memoryMiB: number;
  cpuSeconds: number;
  tmpMiB: number;
  fileMiB: number;
  callMemoryMiB: number;
  workerMemoryMiB: number;
  maxCalls: number;
}

export const SANDBOX_DEFAULT_LIMITS: Readonly<SandboxLimits> = {
  processes: 128,
  memoryMiB: 1024,
  cpuSeconds: 60,
  tmpMiB: 256,
  fileMiB: 1024,
  callMemoryMiB: 2048,
  workerMemoryMiB: 8192,
  maxCalls: 16,
};

const VARIABLES: Record<keyof SandboxLimits, string> = {
  processes: 'SETTLE_SANDBOX_MAX_PROCESSES',
  memoryMiB: 'SETTLE_SANDBOX_MEMORY_MIB',
  cpuSeconds: 'SETTLE_SANDBOX_CPU_SECONDS',
  tmpMiB: 'SETTLE_SANDBOX_TMP_MIB',
  fileMiB: 'SETTLE_SANDBOX_FILE_MIB',
  callMemoryMiB: 'SETTLE_SANDBOX_CALL_MEMORY_MIB',
  workerMemoryMiB: 'SETTLE_SANDBOX_WORKER_MEMORY_MIB',
  maxCalls: 'SETTLE_SANDBOX_MAX_CALLS',
};

/** The limits in force: the defaults, overridden per limit by the worker's environment. */
export function sandboxLimits(env: NodeJS.ProcessEnv = process.env): SandboxLimits {
  const limits = { ...SANDBOX_DEFAULT_LIMITS };
  for (const [field, name] of Object.entries(VARIABLES) as [keyof SandboxLimits, string][]) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 1_048_576)
      throw new Error(`${name} must be a whole number from 1 to 1048576 (got ${JSON.stringify(raw)})`);
    limits[field] = n;
  }
  return limits;
}

/**
 * The `ulimit` line run inside the sandbox before the command. Hard limits, so the command cannot
 * raise them; CPU's hard limit a second above the soft one, so the process gets SIGXCPU (152) first.
 */
export function ulimitScript(l: SandboxLimits): string {
  // bash counts -d and -f in KiB.
  return `ulimit -u ${l.processes} -d ${l.memoryMiB * 1024} -f ${l.fileMiB * 1024} -t ${l.cpuSeconds + 1} && ulimit -St ${l.cpuSeconds} || exit 125`;
}
