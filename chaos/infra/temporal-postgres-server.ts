/**
 * A Temporal server (cmd/server v1.29.1, built into .settle/bin by scripts/production-lane.sh) on
 * a PostgreSQL 15 of its own (postgres15.ts), optionally with TLS or mTLS on its frontend: for the
 * tests of how settle connects to a self-hosted cluster, and the chaos harness's production
 * topology. The namespace `default` and settle's search attributes are created through the
 * frontend with `connect`'s options. The server can be stopped and started again on the same
 * ports and databases (the chaos suite's `temporal-restart`): every workflow survives it.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import proto from '@temporalio/proto';
import { SEARCH_ATTRIBUTES } from '../../core/search-attributes';
import { SETTLE_DIR } from '../../stack/paths';
import { freePorts, isListening } from '../../stack/ports';
import { lowFreePorts, temporalServerConfig, type FrontendTls } from '../../stack/temporal-server-config';
import { startPrimary, type Pg15Server } from './postgres15';

const VERSION = 'v1.29.1';
const BIN = path.join(SETTLE_DIR, 'bin');

/** The server's module source (schemas, dynamic config): TEMPORAL_SERVER_MODULE_DIR, else Go's module cache. */
function moduleDir(): string {
  const missing = `the Temporal server ${VERSION} is not built: run bash scripts/production-lane.sh once (it builds .settle/bin/server)`;
  if (!fs.existsSync(path.join(BIN, 'server')) || !fs.existsSync(path.join(BIN, 'sql'))) throw new Error(missing);
  const dir =
    process.env.TEMPORAL_SERVER_MODULE_DIR ??
    path.join(execFileSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim(), `go.temporal.io/server@${VERSION}`);
  if (!fs.existsSync(path.join(dir, 'schema'))) throw new Error(missing);
  return dir;
}

export interface TemporalServerOptions {
  tls?: FrontendTls;
  /** How this process reaches the frontend (its TLS options) to set up the namespace. */
  connect: Omit<ConnectionOptions, 'address'>;
}

export class PostgresTemporalServer {
  private server: ChildProcess | null = null;

  private constructor(
    readonly address: string,
    readonly postgres: Pg15Server,
    /** The server's root: its config and server.log. */
    readonly dir: string,
    private readonly connect: ConnectionOptions,
  ) {}

  static async start(options: TemporalServerOptions): Promise<PostgresTemporalServer> {
    const module = moduleDir();
    const postgres = await startPrimary();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-temporal-'));
    const [frontend, frontendHttp, history, matching, worker, pprof, metrics] = await freePorts(7);
    const temporal = new PostgresTemporalServer(`127.0.0.1:${frontend}`, postgres, dir, {
      ...options.connect,
      address: `127.0.0.1:${frontend}`,
    });
    try {
      const pg = new URL(postgres.adminUrl);
      for (const [db, schema] of [
        ['temporal', 'temporal'],
        ['temporal_visibility', 'visibility'],
      ] as const) {
        const sql = (...args: string[]) =>
          execFileSync(
            path.join(BIN, 'sql'),
            ['--plugin', 'postgres12', '--ep', pg.hostname, '-p', pg.port, '-u', 'postgres', '--db', db, ...args],
            { stdio: ['ignore', 'ignore', 'pipe'] },
          );
        sql('create-database');
        sql('setup-schema', '-v', '0.0');
        sql('update-schema', '-d', path.join(module, 'schema', 'postgresql', 'v12', schema, 'versioned'));
      }
      fs.mkdirSync(path.join(dir, 'config', 'dynamicconfig'), { recursive: true });
      fs.copyFileSync(
        path.join(module, 'config', 'dynamicconfig', 'development-sql.yaml'),
        path.join(dir, 'config', 'dynamicconfig', 'lane.yaml'),
      );
      fs.writeFileSync(
        path.join(dir, 'config', 'test.yaml'),
        temporalServerConfig({
          pgHost: pg.hostname,
          pgPort: pg.port,
          pgUser: 'postgres',
          frontend: frontend!,
          frontendHttp: frontendHttp!,
          history: history!,
          matching: matching!,
          worker: worker!,
          membership: await lowFreePorts(4),
          pprof: pprof!,
          metrics: metrics!,
          ...(options.tls ? { tls: options.tls } : {}),
        }),
      );
      await temporal.start();
      return temporal;
    } catch (err) {
      await temporal.destroy();
      throw err;
    }
  }

  /** Starts the server process (again) on its ports and databases; resolves once it serves namespace `default`. */
  async start(): Promise<void> {
    if (this.server) return;
    const port = Number(this.address.split(':').at(-1));
    // A restart: the previous process's listeners must be gone first.
    for (let i = 0; i < 50 && (await isListening(port)); i++) await new Promise((r) => setTimeout(r, 100));
    const log = fs.openSync(path.join(this.dir, 'server.log'), 'a');
    const server = spawn(
      path.join(BIN, 'server'),
      ['--root', this.dir, '--config', 'config', '--env', 'test', '--allow-no-auth', 'start'],
      {
        cwd: this.dir,
        stdio: ['ignore', log, log],
      },
    );
    fs.closeSync(log);
    this.server = server;
    const deadline = Date.now() + 180_000;
    let lastError = '';
    for (;;) {
      if (server.exitCode !== null) {
        this.server = null;
        throw new Error(
          `the Temporal server exited (${server.exitCode}): ${fs.readFileSync(path.join(this.dir, 'server.log'), 'utf8').slice(-2000)}`,
        );
      }
      if (Date.now() > deadline) throw new Error(`the Temporal server did not serve namespace default in 180 s (last: ${lastError})`);
      if (await isListening(port)) {
        try {
          await setUpNamespace(this.connect);
          return;
        } catch (err) {
          lastError = (err as Error).message;
        }
      }
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }

  /** Stops the server process (SIGTERM, SIGKILL after 10 s); its PostgreSQL and config stay for start(). */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server || server.exitCode !== null || server.signalCode !== null) return;
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    const timer = setTimeout(() => server.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  /** Stops the server and removes its PostgreSQL and directory. */
  async destroy(): Promise<void> {
    await this.stop();
    await this.postgres.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Namespace `default` and settle's search attributes, idempotently. */
async function setUpNamespace(options: ConnectionOptions): Promise<void> {
  const connection = await Connection.connect({ ...options, connectTimeout: 10_000 });
  try {
    await connection.workflowService
      .registerNamespace({ namespace: 'default', workflowExecutionRetentionPeriod: msToTs('1 day') })
      .catch((err: { code?: number }) => {
        if (err.code !== 6) throw err; // ALREADY_EXISTS
      });
    const types = proto.temporal.api.enums.v1.IndexedValueType;
    const searchAttributes = Object.fromEntries(
      Object.entries(SEARCH_ATTRIBUTES).map(([name, type]) => [
        name,
        types[`INDEXED_VALUE_TYPE_${type.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()}` as keyof typeof types],
      ]),
    );
    await connection.operatorService.addSearchAttributes({ namespace: 'default', searchAttributes }).catch((err: { code?: number }) => {
      if (err.code !== 6) throw err; // ALREADY_EXISTS
    });
    await connection.workflowService.describeNamespace({ namespace: 'default' });
  } finally {
    await connection.close();
  }
}
