/**
 * Throw-away PostgreSQL 15 clusters and PgBouncers for the production-topology checks (test/store,
 * test/cli) and the chaos harness's replicated record store (replicated-record-store.ts): a primary,
 * streaming replicas made with pg_basebackup, and a pooler in front, each on a free loopback port
 * in a temporary directory. A server can be crashed (SIGKILL of its process group) and a standby
 * promoted; a pooler re-pointed (RELOAD), killed and started again on its port. The Debian packages' binaries (postgresql-15, pgbouncer; npm test's
 * pretest installs them); never the machine's own running server. As root, every program runs as
 * the `postgres` OS user (neither PostgreSQL nor PgBouncer runs as root).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../../stack/ports';
import { postgresEnvironment } from '../../stack/postgres-process';
import { groupAlive } from './postgres-server';

/** Where the postgresql-15 package puts its programs; SETTLE_PG15_BIN names another directory. */
export const PG15_BIN = process.env.SETTLE_PG15_BIN ?? '/usr/lib/postgresql/15/bin';
const PGBOUNCER = process.env.SETTLE_PGBOUNCER ?? '/usr/sbin/pgbouncer';

/** settle's unprivileged role and its database in every cluster made here (trust authentication, loopback only). */
export const SETTLE_ROLE = 'settle';

/** Throws one line naming the package to install when a program is missing. */
export function requirePrograms(): void {
  for (const [program, pkg] of [
    [path.join(PG15_BIN, 'postgres'), 'postgresql-15'],
    [path.join(PG15_BIN, 'pg_basebackup'), 'postgresql-15'],
    [PGBOUNCER, 'pgbouncer'],
  ] as const) {
    if (!fs.existsSync(program)) {
      throw new Error(
        `${program} not found: run \`apt-get install -y ${pkg}\` (npm test's pretest does), or set SETTLE_PG15_BIN / SETTLE_PGBOUNCER`,
      );
    }
  }
}

type Owner = { uid: number; gid: number } | null;

function owner(): Owner {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  if (id('-u').status !== 0) throw new Error('running as root needs the postgres OS user (the postgresql-15 package creates it)');
  return { uid: Number(id('-u').stdout.trim()), gid: Number(id('-g').stdout.trim()) };
}

/** A private temporary directory the programs' OS user owns. */
function ownedTempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o700);
  const o = owner();
  if (o) fs.chownSync(dir, o.uid, o.gid);
  return dir;
}

function run(program: string, args: string[]): void {
  const result = spawnSync(program, args, { env: postgresEnvironment(), encoding: 'utf8', ...(owner() ?? {}) });
  if (result.status !== 0) throw new Error(`${path.basename(program)} failed (exit ${result.status}): ${result.stderr.trim()}`);
}

/** Starts a long-running program and resolves once its stderr says it is ready; `stopSignal` stops it. */
async function startProcess(
  program: string,
  args: string[],
  ready: RegExp,
  stopSignal: NodeJS.Signals = 'SIGINT',
): Promise<{ child: ChildProcess; stop(): Promise<void>; crash(): Promise<void> }> {
  // Its own process group: a crash takes the postmaster and every backend at once, as a host dies.
  const child = spawn(program, args, {
    env: postgresEnvironment(),
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
    ...(owner() ?? {}),
  });
  // 'exit', not 'close': a backend that outlives its postmaster (a paused WAL sender) keeps stderr open.
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let log = '';
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.stderr.on('data', (b: Buffer) => {
      log = (log + b.toString()).slice(-8000);
      if (ready.test(log)) resolve();
    });
    void exited.then(() => reject(new Error(`${path.basename(program)} exited during start: ${log.trim()}`)));
  });
  child.stderr.removeAllListeners('data');
  child.stderr.resume();
  return {
    child,
    stop: async (): Promise<void> => {
      if (child.exitCode === null && child.signalCode === null) child.kill(stopSignal);
      await exited;
    },
    // PostgreSQL's backends are process-group leaders of their own (setsid): the group signal
    // reaches the postmaster; its backends exit when they see it gone.
    crash: async (): Promise<void> => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
      await exited;
      // Backends of the group may outlive the postmaster by a moment.
      for (let i = 0; i < 250 && groupAlive(child.pid!); i++) await new Promise((r) => setTimeout(r, 20));
    },
  };
}

export interface Pg15Server {
  port: number;
  /** The data directory (pg_ctl promote names it). */
  dataDir: string;
  /** settle's connection (unprivileged role). */
  url: string;
  /** The cluster's superuser, for the test's own setup. */
  adminUrl: string;
  stop(): Promise<void>;
  /** SIGKILL of the postmaster and its backends (the data directory stays, for an autopsy or a restart). */
  crash(): Promise<void>;
}

function server(port: number, dir: string, proc: { stop(): Promise<void>; crash(): Promise<void> }): Pg15Server {
  return {
    port,
    dataDir: path.join(dir, 'data'),
    url: `postgres://${SETTLE_ROLE}@127.0.0.1:${port}/settle`,
    adminUrl: `postgres://postgres@127.0.0.1:${port}/settle`,
    stop: async () => {
      await proc.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
    crash: () => proc.crash(),
  };
}

const SERVER_FLAGS = [
  '-c',
  'listen_addresses=127.0.0.1',
  '-c',
  'unix_socket_directories=',
  '-c',
  'wal_level=replica',
  '-c',
  'max_wal_senders=8',
];

/** A server certificate and its key (from local-ca.ts). */
export interface ServerCertificate {
  certFile: string;
  keyFile: string;
}

export interface PrimaryOptions {
  /** Serve TLS with this certificate and key (copied into the cluster's directory, owned by its OS user); plaintext stays allowed. */
  tls?: ServerCertificate;
  /** Loopback addresses to listen on (default 127.0.0.1 only). */
  listen?: string[];
}

/** Copies `files` into `dir` as its OS user's private files (PostgreSQL and PgBouncer refuse a key others may read). */
function copyPrivate(dir: string, files: [from: string, to: string][]): void {
  const o = owner();
  for (const [from, to] of files) {
    fs.copyFileSync(from, path.join(dir, to));
    fs.chmodSync(path.join(dir, to), 0o600);
    if (o) fs.chownSync(path.join(dir, to), o.uid, o.gid);
  }
}

/** The server flags that turn TLS on with `tls`, copied into the server's directory; none without it. */
function tlsFlags(dir: string, tls: ServerCertificate | undefined): string[] {
  if (!tls) return [];
  copyPrivate(dir, [
    [tls.certFile, 'server.crt'],
    [tls.keyFile, 'server.key'],
  ]);
  return ['-c', 'ssl=on', '-c', `ssl_cert_file=${path.join(dir, 'server.crt')}`, '-c', `ssl_key_file=${path.join(dir, 'server.key')}`];
}

/** A primary (default settings: fsync on, synchronous_commit on, no synchronous standby) with settle's role and database. */
export async function startPrimary(options: PrimaryOptions = {}): Promise<Pg15Server> {
  requirePrograms();
  const dir = ownedTempDir('settle-pg15-');
  const data = path.join(dir, 'data');
  run(path.join(PG15_BIN, 'initdb'), ['-D', data, '--auth=trust', '--username=postgres', '--no-sync', '--lc-messages=C', '-E', 'UTF8']);
  const port = await freePort();
  const extraFlags = options.listen ? ['-c', `listen_addresses=${options.listen.join(',')}`] : [];
  extraFlags.push(...tlsFlags(dir, options.tls));
  const proc = await startProcess(
    path.join(PG15_BIN, 'postgres'),
    ['-D', data, '-p', String(port), ...SERVER_FLAGS, ...extraFlags],
    /ready to accept connections/,
  );
  const primary = server(port, dir, proc);
  await asAdmin(`postgres://postgres@127.0.0.1:${port}/postgres`, async (c) => {
    await c.query(`CREATE ROLE ${SETTLE_ROLE} LOGIN`);
    await c.query(`CREATE DATABASE settle OWNER ${SETTLE_ROLE}`);
  });
  return primary;
}

/**
 * A hot standby of `primary`, streaming as `name` (its application_name, what synchronous_standby_names
 * matches); serving TLS with `tls` (a primary's TLS flags are not in its data directory: a standby
 * promoted in its place must be given them).
 */
export async function startStandby(primary: Pg15Server, name: string, tls?: ServerCertificate): Promise<Pg15Server> {
  const dir = ownedTempDir('settle-pg15-standby-');
  const data = path.join(dir, 'data');
  run(path.join(PG15_BIN, 'pg_basebackup'), [
    '-h',
    '127.0.0.1',
    '-p',
    String(primary.port),
    '-U',
    'postgres',
    '-D',
    data,
    '-X',
    'stream',
    '-R',
    '--no-sync',
    // An immediate checkpoint: the default spreads it over minutes.
    '--checkpoint=fast',
  ]);
  // -R wrote standby.signal and a primary_conninfo; this later line (the last one wins) names the standby.
  fs.appendFileSync(
    path.join(data, 'postgresql.auto.conf'),
    `primary_conninfo = 'host=127.0.0.1 port=${primary.port} user=postgres application_name=${name}'\n`,
  );
  const port = await freePort();
  const proc = await startProcess(
    path.join(PG15_BIN, 'postgres'),
    ['-D', data, '-p', String(port), ...SERVER_FLAGS, '-c', 'hot_standby=on', ...tlsFlags(dir, tls)],
    /ready to accept read-only connections/,
  );
  await waitFor(primary.adminUrl, `SELECT 1 FROM pg_stat_replication WHERE application_name = '${name}' AND state = 'streaming'`);
  return server(port, dir, proc);
}

/** Sets synchronous_standby_names on the running primary (ALTER SYSTEM, reload), as an operator does. */
export async function setSynchronousStandbyNames(primary: Pg15Server, value: string): Promise<void> {
  await asAdmin(primary.adminUrl, async (c) => {
    await c.query(`ALTER SYSTEM SET synchronous_standby_names = '${value}'`);
    await c.query('SELECT pg_reload_conf()');
  });
}

/** Polls `sql` as the superuser until it returns a row (10 s at most). */
export async function waitFor(adminUrl: string, sql: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    let found = false;
    await asAdmin(adminUrl, async (c) => (found = ((await c.query(sql)).rowCount ?? 0) > 0));
    if (found) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for: ${sql}`);
}

export async function asAdmin<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Promotes a standby to primary (`pg_ctl promote`, waiting until it accepts writes): what a
 * failover manager does once it has decided the primary is gone.
 */
export function promote(standby: Pg15Server): void {
  run(path.join(PG15_BIN, 'pg_ctl'), ['promote', '-D', standby.dataDir, '-w', '-t', '60']);
}

/** TLS on both of PgBouncer's sides: clients must use it; the pooler verifies its server's certificate (verify-full). */
export interface PoolerTls extends ServerCertificate {
  /** The CA that signed the pooler's and the servers' certificates. */
  caFile: string;
}

export interface PgBouncer {
  /** settle's connection through the pooler (with TLS: sslmode=verify-full, sslrootcert the CA). */
  url: string;
  /** Points the pooler at another server (its [databases] line rewritten, then RELOAD: SIGHUP). */
  retarget(target: Pg15Server): void;
  /** SIGKILL of the pooler: every client connection drops at once. */
  crash(): Promise<void>;
  /** Starts it again on the same port and settings (after crash). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** A PgBouncer in `mode` in front of `target`'s settle database; with `tls`, TLS to its clients and its server. */
export async function startPgBouncer(
  target: Pg15Server,
  mode: 'session' | 'transaction' | 'statement',
  tls?: PoolerTls,
): Promise<PgBouncer> {
  requirePrograms();
  const dir = ownedTempDir('settle-pgbouncer-');
  const port = await freePort();
  const o = owner();
  if (tls)
    copyPrivate(dir, [
      [tls.certFile, 'pooler.crt'],
      [tls.keyFile, 'pooler.key'],
      [tls.caFile, 'ca.crt'],
    ]);
  const tlsLines = tls
    ? [
        // Clients must speak TLS (they verify the pooler's certificate: sslmode=verify-full).
        'client_tls_sslmode = require',
        `client_tls_cert_file = ${path.join(dir, 'pooler.crt')}`,
        `client_tls_key_file = ${path.join(dir, 'pooler.key')}`,
        `client_tls_ca_file = ${path.join(dir, 'ca.crt')}`,
        // And the pooler verifies the server it forwards to, whichever is primary.
        'server_tls_sslmode = verify-full',
        `server_tls_ca_file = ${path.join(dir, 'ca.crt')}`,
      ]
    : [];
  const write = (name: string, text: string) => {
    fs.writeFileSync(path.join(dir, name), text, { mode: 0o600 });
    if (o) fs.chownSync(path.join(dir, name), o.uid, o.gid);
  };
  const configure = (server: Pg15Server) =>
    write(
      'pgbouncer.ini',
      [
        '[databases]',
        `settle = host=127.0.0.1 port=${server.port} dbname=settle`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${path.join(dir, 'userlist.txt')}`,
        `pool_mode = ${mode}`,
        'default_pool_size = 10',
        'max_client_conn = 200',
        'ignore_startup_parameters = extra_float_digits',
        // After a failed login to a dead server, try again within a second (default 15 s), and
        // give up a connection attempt after 2 s: a failover is then seen at once.
        'server_login_retry = 1',
        'server_connect_timeout = 2',
        ...tlsLines,
        '',
      ].join('\n'),
    );
  write('userlist.txt', `"${SETTLE_ROLE}" ""\n`);
  configure(target);
  const ini = path.join(dir, 'pgbouncer.ini');
  // SIGTERM: PgBouncer's immediate shutdown (SIGINT would wait for every client to finish).
  let proc = await startProcess(PGBOUNCER, [ini], /process up/, 'SIGTERM');
  const url = `postgres://${SETTLE_ROLE}@127.0.0.1:${port}/settle`;
  return {
    url: tls ? `${url}?sslmode=verify-full&sslrootcert=${encodeURIComponent(tls.caFile)}` : url,
    retarget: (server) => {
      configure(server);
      proc.child.kill('SIGHUP');
    },
    crash: () => proc.crash(),
    start: async () => {
      proc = await startProcess(PGBOUNCER, [ini], /process up/, 'SIGTERM');
    },
    stop: async () => {
      await proc.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
