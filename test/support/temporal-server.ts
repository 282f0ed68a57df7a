/**
 * A Temporal server (cmd/server v1.29.1, built into .settle/bin by scripts/production-lane.sh) on
 * a PostgreSQL 15 of its own (test/support/postgres15.ts), optionally with TLS or mTLS on its
 * frontend: for the tests of how settle connects to a self-hosted cluster. The namespace `default`
 * and settle's search attributes are created through the frontend with `connect`'s options.
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
import { startPrimary, type Pg15Server } from '../../chaos/infra/postgres15';

const VERSION = 'v1.29.1';
const BIN = path.join(SETTLE_DIR, 'bin');

export interface TemporalServer {
  address: string;
  postgres: Pg15Server;
  stop(): Promise<void>;
}

/** The server's module source (schemas, dynamic config): TEMPORAL_SERVER_MODULE_DIR, else Go's module cache. */
function moduleDir(): string {
  const dir =
    process.env.TEMPORAL_SERVER_MODULE_DIR ??
    path.join(execFileSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim(), `go.temporal.io/server@${VERSION}`);
  if (!fs.existsSync(path.join(dir, 'schema')) || !fs.existsSync(path.join(BIN, 'server')))
    throw new Error(`the Temporal server ${VERSION} is not built: run bash scripts/production-lane.sh once (it builds .settle/bin/server)`);
  return dir;
}

export async function startTemporalServer(options: {
  tls?: FrontendTls;
  connect: Omit<ConnectionOptions, 'address'>;
}): Promise<TemporalServer> {
  const module = moduleDir();
  const postgres = await startPrimary();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-temporal-'));
  let server: ChildProcess | undefined;
  const stop = async () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((r) => server!.once('exit', r));
      server.kill('SIGTERM');
      const timer = setTimeout(() => server!.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await postgres.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
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
          {
            stdio: ['ignore', 'ignore', 'pipe'],
          },
        );
      sql('create-database');
      sql('setup-schema', '-v', '0.0');
      sql('update-schema', '-d', path.join(module, 'schema', 'postgresql', 'v12', schema, 'versioned'));
    }
    const [frontend, frontendHttp, history, matching, worker, pprof, metrics] = await freePorts(7);
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
    const log = fs.openSync(path.join(dir, 'server.log'), 'w');
    server = spawn(path.join(BIN, 'server'), ['--root', dir, '--config', 'config', '--env', 'test', '--allow-no-auth', 'start'], {
      cwd: dir,
      stdio: ['ignore', log, log],
    });
    const address = `127.0.0.1:${frontend}`;
    const deadline = Date.now() + 180_000;
    let lastError = '';
    for (;;) {
      if (server.exitCode !== null)
        throw new Error(
          `the Temporal server exited (${server.exitCode}): ${fs.readFileSync(path.join(dir, 'server.log'), 'utf8').slice(-2000)}`,
        );
      if (Date.now() > deadline) throw new Error(`the Temporal server did not serve namespace default in 180 s (last: ${lastError})`);
      if (await isListening(frontend!)) {
        try {
          await setUpNamespace({ ...options.connect, address });
          return { address, postgres, stop };
        } catch (err) {
          lastError = (err as Error).message;
        }
      }
      await new Promise((r) => setTimeout(r, 1_000));
    }
  } catch (err) {
    await stop();
    throw err;
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
