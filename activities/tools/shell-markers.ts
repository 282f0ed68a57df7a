/**
 * Run markers that make a shell command probeable where the facts allow
 * (docs/design.md#shell-run-markers).
 *
 * The start of each execution of `bash_execute` — one (key, generation) — is a row in the worker's
 * database (activities/store/shell-runs.ts), committed before the command is spawned: no sandbox
 * can reach it. Around it, the execution gets a run directory the worker owns, outside the
 * workspace and invisible inside the sandbox:
 *
 *   <root>/<key>/<generation>/pid       the spawned process (group leader), sealed, best effort
 *   <root>/<key>/<generation>/stdout    the captured output, fsync'd …
 *   <root>/<key>/<generation>/stderr
 *   <root>/<key>/<generation>/exit      … then the exit status, sealed, renamed into place
 *
 * These files are evidence that something ran, never that nothing did: a command that escapes its
 * sandbox as the worker's user could delete or forge them. So their absence never makes a probe
 * answer "not executed" (only the database can), and the pid and exit markers carry an HMAC keyed
 * with a secret that exists only in the worker's memory and the start row: a marker that does not
 * verify makes the probe answer unknown.
 *
 * Intents recorded before the start ledger name their root as `runs` and kept the start in a
 * `started` file (created with link(2), fenced by a probe the same way): `inspectLegacyRun` reads
 * those, and its "no start marker" proves nothing any more.
 *
 * The root carries a random id (`<root>/id`) recorded in the call's intent: a probe running where
 * that root is not the same directory (another host, a wiped state directory) reads a different or
 * no id and answers unknown.
 */
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import type { ResourceUsage } from '../../core/observation';
import type { RunEntry } from '../settled/settled-tool';

/** Where a worker's run directories live; recorded in the intent before the command can start. */
export interface RunsLocation {
  root: string;
  id: string;
}

/** The identity of a process that outlives pid reuse: pid + start time (clock ticks since boot) + boot. */
const ProcessIdentity = z.object({
  pid: z.number().int().positive(),
  start_time: z.string(),
  boot_id: z.string(),
  host: z.string(),
});
export type ProcessIdentity = z.infer<typeof ProcessIdentity>;

const StartMarker = z.discriminatedUnion('kind', [
  /** An executor is about to spawn the command (the effect may have started from here on). */
  z.object({ kind: z.literal('started'), at: z.string(), worker: ProcessIdentity }),
  /** A probe found no start marker and fenced the run: this execution never starts. */
  z.object({ kind: z.literal('fenced'), at: z.string(), by: ProcessIdentity }),
]);
type StartMarker = z.infer<typeof StartMarker>;

const Seal = z.string().regex(/^[0-9a-f]{64}$/);

const SealedPid = ProcessIdentity.extend({ seal: Seal });

const ExitMarker = z.object({
  exit_status: z.number().int(),
  timed_out: z.boolean(),
  truncated: z.boolean(),
  sandbox: z.enum(['bubblewrap', 'none']),
  note: z.string().nullable(),
  /** Absent in markers written before per-call cgroups. */
  usage: z.object({ cpu_ms: z.number(), peak_memory_bytes: z.number(), peak_processes: z.number().nullable() }).nullable().optional(),
  at: z.string(),
  /** HMAC of the marker and the output's hashes (absent in markers of legacy runs). */
  seal: Seal.optional(),
});

/** What the command produced, as recorded by its worker. */
export interface RecordedExit {
  stdout: string;
  stderr: string;
  exitStatus: number;
  timedOut: boolean;
  truncated: boolean;
  sandbox: 'bubblewrap' | 'none';
  note: string | null;
  /** The call's totals from its cgroup; absent without one (and in markers written before). */
  usage?: ResourceUsage | null;
}

/** What the files of one execution whose start is in the ledger say (readRunFiles). */
export type RunFiles =
  /** The markers of this root cannot be read from here. */
  | { kind: 'unreachable'; detail: string }
  /** No file of this execution (its directory may exist, empty). */
  | { kind: 'none' }
  /** A sealed exit marker: the command ran to its end, this is what its worker recorded. */
  | { kind: 'exited'; result: RecordedExit }
  /** Files that this execution's worker cannot have written as they are: forged, damaged or out of place. */
  | { kind: 'tampered'; detail: string; dir: string }
  /** No exit marker: whether it still runs, from the start row's worker and the sealed pid. */
  | { kind: 'no_exit'; running: Liveness; dir: string };

/** The facts a probe can establish about one execution of a legacy intent (start kept in a file). */
export type RunFacts =
  /** The markers of this root cannot be read from here: nothing can be concluded. */
  | { kind: 'unreachable'; detail: string }
  /** No executor started the command; `fencedNow`: this look fenced it (else an earlier probe did). */
  | { kind: 'not_started'; fencedNow: boolean }
  /** The command ran to its end and its worker recorded the result. */
  | { kind: 'exited'; result: RecordedExit }
  /** Started, no exit recorded: its effect may be partial or complete. */
  | { kind: 'started'; running: Liveness; dir: string };

export type Liveness =
  | { kind: 'running'; pid: number; workerAlive: boolean; workerStopped: boolean }
  /** `workerGone`: nobody can still record how it ended (its worker is dead or its host restarted). */
  | { kind: 'not_running'; why: string; workerGone: boolean }
  | { kind: 'cannot_tell'; why: string };

/** The root of run directories: SETTLE_RUNS_DIR, else $XDG_STATE_HOME/settle/runs, else ~/.local/state/settle/runs. */
export function runsRoot(): string {
  const explicit = process.env.SETTLE_RUNS_DIR;
  if (explicit) return path.resolve(explicit);
  const state = process.env.XDG_STATE_HOME || path.join(os.homedir(), '.local', 'state');
  return path.join(state, 'settle', 'runs');
}

const locations = new Map<string, Promise<RunsLocation>>();

/** The root (created with its id on first use, 0700). Cached per root and process. */
export function runsLocation(root = runsRoot()): Promise<RunsLocation> {
  let location = locations.get(root);
  if (!location) {
    location = ensureRoot(root);
    locations.set(root, location);
    location.catch(() => locations.delete(root));
  }
  return location;
}

async function ensureRoot(root: string): Promise<RunsLocation> {
  await fs.mkdir(root, { recursive: true, mode: 0o700 });
  const idFile = path.join(root, 'id');
  const existing = await readIfExists(idFile);
  if (existing !== null && existing.trim()) return { root, id: existing.trim() };
  // Exclusive and atomic: two workers sharing a root agree on one id.
  const created = await linkExclusive(root, idFile, `${crypto.randomUUID()}\n`);
  if (created) await fsyncDir(root);
  return { root, id: (await fs.readFile(idFile, 'utf8')).trim() };
}

/** The run directory of one execution. Keys are lowercase hex; anything else is hashed into a safe name. */
export function runDir(location: RunsLocation, key: string, generation: number): string {
  const name = /^[0-9a-f]{16,128}$/.test(key) ? key : crypto.createHash('sha256').update(key, 'utf8').digest('hex');
  return path.join(location.root, name, String(generation));
}

/** Executor, before it records the start: the run directory for the pid, output and exit markers. */
export async function prepareRun(location: RunsLocation, key: string, generation: number): Promise<void> {
  await makeRunDir(location, key, generation);
}

/** A new secret for one execution's markers; kept only in the worker's memory and the start row. */
export function newSealKey(): string {
  return crypto.randomBytes(32).toString('hex');
}

/** The identity the start row and a probe's fence record: who wrote it, for "is its worker alive?". */
export function workerIdentity(): ProcessIdentity {
  return selfIdentity();
}

/** Executor: the spawned process, for "is it still running?" (not fsync'd: only a hint). */
export async function recordPid(location: RunsLocation, key: string, generation: number, pid: number, sealKey?: string): Promise<void> {
  const identity = processIdentity(pid);
  if (!identity) return;
  const marker = sealKey ? { ...identity, seal: seal(sealKey, 'pid', key, generation, JSON.stringify(identity)) } : identity;
  await fs.writeFile(path.join(runDir(location, key, generation), 'pid'), JSON.stringify(marker));
}

/** Executor: the output, then the exit marker (atomic rename, fsync'd), sealed when given the execution's key. */
export async function markExited(
  location: RunsLocation,
  key: string,
  generation: number,
  result: RecordedExit,
  sealKey?: string,
): Promise<void> {
  const dir = runDir(location, key, generation);
  await writeDurably(path.join(dir, 'stdout'), result.stdout);
  await writeDurably(path.join(dir, 'stderr'), result.stderr);
  const marker: z.infer<typeof ExitMarker> = {
    exit_status: result.exitStatus,
    timed_out: result.timedOut,
    truncated: result.truncated,
    sandbox: result.sandbox,
    note: result.note,
    usage: result.usage ?? null,
    at: new Date().toISOString(),
  };
  if (sealKey) marker.seal = seal(sealKey, 'exit', key, generation, exitSealed(marker, result.stdout, result.stderr));
  const tmp = path.join(dir, `.exit.${process.pid}.tmp`);
  await writeDurably(tmp, JSON.stringify(marker));
  await fs.rename(tmp, path.join(dir, 'exit'));
  await fsyncDir(dir);
}

/** After the record is settled by its executor, the run's markers are no longer needed. */
export async function removeRun(location: RunsLocation, key: string, generation: number): Promise<void> {
  const dir = runDir(location, key, generation);
  await fs.rm(dir, { recursive: true, force: true });
  await fs.rmdir(path.dirname(dir)).catch(() => {}); // the key's directory, once empty
}

/**
 * Probe, for an execution whose start row (or fence) the ledger holds: what its files say. Never
 * throws on what it reads: a file that is missing, unreadable or does not verify is reported, and
 * only a sealed exit marker counts as the command's result. A fenced execution has no files
 * (nothing started): any found is tampering.
 */
export async function readRunFiles(location: RunsLocation, key: string, generation: number, entry: RunEntry): Promise<RunFiles> {
  const unreachable = await checkRoot(location);
  if (unreachable) return { kind: 'unreachable', detail: unreachable };
  const dir = runDir(location, key, generation);
  try {
    if (entry.kind === 'fenced') {
      const found = (await fs.readdir(dir).catch(() => [] as string[])).filter((name) => !name.startsWith('.'));
      return found.length === 0
        ? { kind: 'none' }
        : {
            kind: 'tampered',
            dir,
            detail: `files ${found.join(', ')} in ${dir}, but the database says this execution was fenced and never started`,
          };
    }
    const exitText = await readIfExists(path.join(dir, 'exit'));
    if (exitText !== null) {
      const marker = ExitMarker.parse(JSON.parse(exitText));
      const stdout = await fs.readFile(path.join(dir, 'stdout'), 'utf8');
      const stderr = await fs.readFile(path.join(dir, 'stderr'), 'utf8');
      const { seal: found, ...sealed } = marker;
      const expected = seal(entry.sealKey, 'exit', key, generation, exitSealedText(exitText, stdout, stderr));
      if (!found || !sameSeal(found, expected)) {
        return { kind: 'tampered', dir, detail: `the exit marker in ${dir} does not carry this execution's seal (forged or altered)` };
      }
      return { kind: 'exited', result: recordedExit(sealed, stdout, stderr) };
    }
    const worker = ProcessIdentity.safeParse(entry.by);
    const running: Liveness = worker.success
      ? await liveness(dir, worker.data, { key, generation, sealKey: entry.sealKey })
      : { kind: 'cannot_tell', why: 'the start row names no worker process' };
    return { kind: 'no_exit', running, dir };
  } catch (err) {
    return { kind: 'tampered', dir, detail: `the markers in ${dir} cannot be read as written (${(err as Error).message})` };
  }
}

/**
 * Legacy probe (intents with `runs`): reads the markers of one execution, fencing it first if it never started. A process
 * group still running although its worker is dead is killed (a dead worker's command dies with
 * it, docs/design.md#shell-run-markers); the verdict then stays unknown, as the effect may be partial.
 */
export async function inspectLegacyRun(location: RunsLocation, key: string, generation: number): Promise<RunFacts> {
  const unreachable = await checkRoot(location);
  if (unreachable) return { kind: 'unreachable', detail: unreachable };
  const dir = runDir(location, key, generation);
  const exit = await readExit(dir);
  if (exit) return { kind: 'exited', result: exit };

  let start = await readStart(dir);
  if (start === null) {
    await makeRunDir(location, key, generation);
    const fence: StartMarker = { kind: 'fenced', at: new Date().toISOString(), by: selfIdentity() };
    if (await linkExclusive(dir, path.join(dir, 'started'), JSON.stringify(fence))) {
      await fsyncDir(dir);
      return { kind: 'not_started', fencedNow: true };
    }
    // The executor linked its start marker just now: read what it wrote.
    start = await readStart(dir);
    const exitNow = await readExit(dir);
    if (exitNow) return { kind: 'exited', result: exitNow };
  }
  if (start === null) throw new Error(`${dir}/started exists but cannot be read`);
  if (start.kind === 'fenced') return { kind: 'not_started', fencedNow: false };
  return { kind: 'started', running: await liveness(dir, start.worker), dir };
}

/** Null when `location` is this root; else why its markers cannot be read here. */
async function checkRoot(location: RunsLocation): Promise<string | null> {
  const idHere = await readIfExists(path.join(location.root, 'id')).catch((err: Error) => `unreadable (${err.message})`);
  if (idHere?.trim() === location.id) return null;
  return (
    `the run markers are not readable here: ${location.root} has id ${idHere === null ? 'none' : JSON.stringify(idHere.trim())}, ` +
    `the intent recorded ${JSON.stringify(location.id)} (another host, or the state directory was wiped)`
  );
}

/** With `sealed`, a pid marker counts only if it carries this execution's seal (a forged one would name a process to kill). */
async function liveness(
  dir: string,
  worker: ProcessIdentity,
  sealed?: { key: string; generation: number; sealKey: string },
): Promise<Liveness> {
  const here = selfIdentity();
  if (worker.boot_id !== here.boot_id) {
    return worker.host === here.host
      ? {
          kind: 'not_running',
          why: `this host restarted since the command started (boot ${worker.boot_id.slice(0, 8)}…)`,
          workerGone: true,
        }
      : { kind: 'cannot_tell', why: `it started on host ${worker.host}; this probe runs on ${here.host}` };
  }
  const pidText = await readIfExists(path.join(dir, 'pid'));
  const workerState = processState(worker);
  if (pidText !== null && sealed) {
    const marker = SealedPid.safeParse(JSON.parse(pidText));
    const expected = seal(sealed.sealKey, 'pid', sealed.key, sealed.generation, withoutSeal(pidText));
    if (!marker.success || !sameSeal(marker.data.seal, expected)) {
      return { kind: 'cannot_tell', why: `the pid marker in ${dir} does not carry this execution's seal (forged or altered)` };
    }
  }
  const child = pidText === null ? null : ProcessIdentity.safeParse(JSON.parse(pidText));
  if (!child?.success) {
    // Its worker died between recording the start and the spawn, or just after the spawn: a
    // sandboxed command dies with its worker, and a spawn that never happened runs nothing.
    return workerState === 'gone'
      ? { kind: 'not_running', why: `its worker (pid ${worker.pid}) is gone and no process was recorded`, workerGone: true }
      : {
          kind: 'cannot_tell',
          why: `its worker (pid ${worker.pid}) is alive${workerState === 'stopped' ? ' but stopped' : ''} and recorded no process yet`,
        };
  }
  const childState = processState(child.data);
  if (childState === 'gone') {
    const recorder =
      workerState === 'gone'
        ? `its worker (pid ${worker.pid}) is gone too`
        : `its worker (pid ${worker.pid}) is alive${workerState === 'stopped' ? ' but stopped' : ''} and may still record how it ended`;
    return { kind: 'not_running', why: `its process (pid ${child.data.pid}) has ended; ${recorder}`, workerGone: workerState === 'gone' };
  }
  if (workerState === 'gone') {
    // A sandboxed command dies with its worker (bubblewrap --die-with-parent); an unsandboxed one
    // is killed here, so that it never runs on after this verdict.
    killGroup(child.data.pid);
    await waitUntilGone(child.data, 2_000);
    return {
      kind: 'not_running',
      workerGone: true,
      why: `its worker (pid ${worker.pid}) is gone; its process group (pid ${child.data.pid}) ${processState(child.data) === 'gone' ? 'was killed by this probe' : 'could not be killed'}`,
    };
  }
  return { kind: 'running', pid: child.data.pid, workerAlive: true, workerStopped: workerState === 'stopped' };
}

async function makeRunDir(location: RunsLocation, key: string, generation: number): Promise<string> {
  const dir = runDir(location, key, generation);
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  // The new directory entries must survive a crash before anything inside them is relied on.
  await fsyncDir(path.dirname(dir));
  await fsyncDir(location.root);
  return dir;
}

async function readStart(dir: string): Promise<StartMarker | null> {
  const text = await readIfExists(path.join(dir, 'started'));
  return text === null ? null : StartMarker.parse(JSON.parse(text));
}

async function readExit(dir: string): Promise<RecordedExit | null> {
  const text = await readIfExists(path.join(dir, 'exit'));
  if (text === null) return null;
  const marker = ExitMarker.parse(JSON.parse(text));
  return recordedExit(marker, await fs.readFile(path.join(dir, 'stdout'), 'utf8'), await fs.readFile(path.join(dir, 'stderr'), 'utf8'));
}

function recordedExit(marker: Omit<z.infer<typeof ExitMarker>, 'seal'>, stdout: string, stderr: string): RecordedExit {
  return {
    stdout,
    stderr,
    exitStatus: marker.exit_status,
    timedOut: marker.timed_out,
    truncated: marker.truncated,
    sandbox: marker.sandbox,
    note: marker.note,
    usage: marker.usage ?? null,
  };
}

/** HMAC-SHA256 of one marker of one execution: binds its content to the key, generation and kind. */
function seal(sealKey: string, kind: 'pid' | 'exit', key: string, generation: number, content: string): string {
  return crypto.createHmac('sha256', Buffer.from(sealKey, 'hex')).update(`${kind}\n${key}\n${generation}\n${content}`).digest('hex');
}

/** What an exit marker's seal covers: the marker as written (without its seal) and the output's hashes. */
function exitSealed(marker: Omit<z.infer<typeof ExitMarker>, 'seal'>, stdout: string, stderr: string): string {
  return `${sha256(stdout)}\n${sha256(stderr)}\n${JSON.stringify(marker)}`;
}

/** The same text, from the marker as read. */
function exitSealedText(text: string, stdout: string, stderr: string): string {
  return `${sha256(stdout)}\n${sha256(stderr)}\n${withoutSeal(text)}`;
}

/** A sealed marker's JSON as it was before its seal was added (its fields in the order written). */
function withoutSeal(text: string): string {
  const { seal: _seal, ...marker } = JSON.parse(text) as Record<string, unknown>;
  return JSON.stringify(marker);
}

function sha256(text: string): string {
  return crypto.createHash('sha256').update(text, 'utf8').digest('hex');
}

function sameSeal(a: string, b: string): boolean {
  return a.length === b.length && crypto.timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

/** Creates `target` with `content`, complete and fsync'd, only if it does not exist (link(2) is atomic). */
async function linkExclusive(dir: string, target: string, content: string): Promise<boolean> {
  const tmp = path.join(dir, `.${path.basename(target)}.${process.pid}.${crypto.randomUUID().slice(0, 8)}.tmp`);
  await writeDurably(tmp, content);
  try {
    await fs.link(tmp, target);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    await fs.rm(tmp, { force: true });
  }
}

async function writeDurably(file: string, content: string): Promise<void> {
  const handle = await fs.open(file, 'w', 0o600);
  try {
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function readIfExists(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

let self: ProcessIdentity | undefined;
function selfIdentity(): ProcessIdentity {
  self ??= processIdentity(process.pid) ?? { pid: process.pid, start_time: 'unknown', boot_id: bootId(), host: os.hostname() };
  return self;
}

/** pid + start time from /proc (Linux): a reused pid has another start time. */
function processIdentity(pid: number): ProcessIdentity | null {
  const stat = readStat(pid);
  return stat ? { pid, start_time: stat.startTime, boot_id: bootId(), host: os.hostname() } : null;
}

function processState(p: ProcessIdentity): 'gone' | 'stopped' | 'alive' {
  const stat = readStat(p.pid);
  if (!stat || stat.startTime !== p.start_time || stat.state === 'Z' || stat.state === 'X') return 'gone';
  return stat.state === 'T' || stat.state === 't' ? 'stopped' : 'alive';
}

function readStat(pid: number): { state: string; startTime: string } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces and parentheses: fields resume after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, startTime: fields[19]! };
  } catch {
    return null;
  }
}

let boot: string | undefined;
function bootId(): string {
  if (boot === undefined) {
    try {
      boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      boot = 'unknown';
    }
  }
  return boot;
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

async function waitUntilGone(p: ProcessIdentity, ms: number): Promise<void> {
  for (const deadline = Date.now() + ms; Date.now() < deadline && processState(p) !== 'gone';) {
    await new Promise((r) => setTimeout(r, 50));
  }
}
