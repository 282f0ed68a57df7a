/**
 * What the chaos suite runs against and breaks: a PostgreSQL it may stop and crash, a Temporal
 * server it may restart (or a shared one it leaves alone), and N settle worker processes it may
 * kill, pause and replace. Every fault is recorded with its time, for the recovery figures.
 */
import path from 'node:path';
import pg from 'pg';
import { Connection } from '@temporalio/client';
import { loadTemporalTarget } from '../../client/connection';
import { PostgresServer } from '../infra/postgres-server';
import { ReplicatedRecordStore, type Replication } from '../infra/replicated-record-store';
import { TemporalServer } from '../infra/temporal-server';
import { PostgresTemporalServer } from '../infra/temporal-postgres-server';
import { issueTopologyTls, type TopologyTls } from '../infra/production-tls';
import { WorkerProcess } from '../infra/worker-process';
import { killHostProcesses } from '../infra/host';
import { hostEnv, layOutHosts, mountOf, type ClusterHost, type HostLayout } from './hosts';
import {
  generateOperatorKey,
  loadOperatorKeys,
  loadOperatorSigner,
  type OperatorKeys,
  type OperatorSigner,
} from '../../activities/operator/operator-keys';

/** The people on duty: their keys sign the SRE's verdicts and the approvers' decisions; the workers hold the public halves. */
export interface OnDuty {
  sre: OperatorSigner;
  approver: OperatorSigner;
  /** What the workers verify with (SETTLE_OPERATOR_KEYS). */
  keys: OperatorKeys;
  keysText: string;
}

function onDuty(): OnDuty {
  const sre = generateOperatorKey('chaos-sre');
  const approver = generateOperatorKey('chaos-approver');
  const keysText = `${sre.publicText},${approver.publicText}`;
  return {
    sre: loadOperatorSigner(sre.privateText),
    approver: loadOperatorSigner(approver.privateText),
    keys: loadOperatorKeys(keysText),
    keysText,
  };
}

export type FaultKind =
  | 'sigkill'
  | 'zombie'
  | 'failpoint-kill'
  | 'worker-crash'
  | 'postgres-fast'
  | 'postgres-crash'
  | 'temporal-restart'
  | 'rolling-replace'
  | 'failover'
  | 'pooler-restart'
  | 'host-death';

export interface Fault {
  kind: FaultKind;
  /** Epoch ms when the fault began (a kill, a detected stop, a server going down). */
  at: number;
  /** Epoch ms when the fault ended (process resumed, server back); equals `at` for a kill. */
  until: number;
  /** For worker faults: the victim's identity (the holder recorded on its claims). */
  identity?: string;
  /** For failpoint faults: the failpoint that fired. */
  failpoint?: string;
  /** For an aimed SIGKILL: the key of the IN_FLIGHT call whose holder was chosen as the victim. */
  aimedAt?: string;
  /** For a record-store fault: the calls IN_FLIGHT when it struck (a fault that caught none proves nothing). */
  inFlight?: number;
  /** For a host's death: the host, and the identities of every worker it lost (the calls they held are the ones caught). */
  host?: string;
  identities?: string[];
}

export interface ClusterOptions {
  /** Where the PostgreSQL cluster (and the Temporal SQLite file) live. */
  dir: string;
  /**
   * The record store: a PostgreSQL 15 primary with a standby replicated this way, behind
   * PgBouncer in transaction mode (chaos/infra/replicated-record-store.ts); default: one
   * PostgreSQL the harness may stop and crash.
   */
  replicated?: Replication;
  /**
   * The production topology's Temporal and TLS (chaos/infra/production-tls.ts): a Temporal server
   * v1.29.1 on PostgreSQL that requires mTLS on its frontend, instead of the dev server, and the
   * replicated record store over TLS, reached with sslmode=verify-full. The workers and the
   * harness's clients connect through settle's TEMPORAL_TLS_* settings. Needs `replicated`, no
   * `temporalAddress`, and .settle/bin/server (scripts/production-lane.sh builds it).
   */
  tls?: boolean;
  workers: number;
  taskQueue: string;
  workflowBundlePath: string;
  /** A pre-built worker entry point (see WorkerProcessOptions.entry). */
  workerEntry?: string;
  /** SETTLE_FAILPOINTS for every worker (e.g. zombie or kill failpoints). */
  failpoints?: string;
  /** A Temporal server this cluster must not restart (tests share one); else it starts its own. */
  temporalAddress?: string;
  /** How long a worker paused at a `stop` failpoint stays paused (default 1.5 × lease … 3 × lease). */
  pauseMs?: () => number;
  /** More environment for every worker (a team's worker reads its own variables). */
  env?: NodeJS.ProcessEnv;
  /** The line a worker prints once it polls (default: settle's worker's settings line). */
  ready?: RegExp;
  /**
   * Spread the workers over this many "hosts" (chaos/harness/hosts.ts), round robin: each host a
   * mount namespace with a disk of its own at the shared workspace root and SETTLE_RUNS_DIR, and
   * its own derived host id. Default: one host, every worker on the machine's own filesystem.
   */
  hosts?: number;
  log?: (line: string) => void;
}

export class Cluster {
  readonly workers: WorkerProcess[] = [];
  /** Every worker ever started, by pid (the SRE needs to know whether a claim's holder lives). */
  readonly everyWorker = new Map<number, WorkerProcess>();
  readonly faults: Fault[] = [];
  private readonly log: (line: string) => void;
  private watching: NodeJS.Timeout | null = null;
  private readonly resuming = new Set<number>();
  private closed = false;
  /** A connection of the harness's own, to see which worker holds which call (aimed kills). */
  private inspector: pg.Pool | null = null;
  /** Workers asked to drain (SIGTERM) by a rolling replacement: their exit is not a crash. */
  private readonly draining = new Set<number>();
  /** The environment of the build being rolled out (rollingReplace), on top of the options' for every worker started since. */
  private buildEnv: NodeJS.ProcessEnv = {};
  /** Operator keys of this cluster, made when it starts (as an operator provisions them). */
  readonly onDuty: OnDuty = onDuty();
  /** The hosts the workers are spread over (ClusterOptions.hosts); null: one host, the machine's filesystem. */
  readonly hostLayout: HostLayout | null;
  /** The host of every worker ever started on one, by pid. */
  private readonly hostOfWorker = new Map<number, ClusterHost>();

  private constructor(
    private readonly options: ClusterOptions,
    /** The single PostgreSQL, unless the record store is replicated. */
    readonly postgres: PostgresServer | null,
    readonly replicated: ReplicatedRecordStore | null,
    readonly temporal: TemporalServer | PostgresTemporalServer | null,
    readonly temporalAddress: string,
    /** The certificates of the production topology (options.tls). */
    readonly tls: TopologyTls | null = null,
  ) {
    this.log = options.log ?? (() => {});
    this.hostLayout = options.hosts === undefined ? null : layOutHosts(options.dir, options.hosts);
  }

  static async start(options: ClusterOptions): Promise<Cluster> {
    if (options.tls && (!options.replicated || options.temporalAddress))
      throw new Error('ClusterOptions.tls: needs a replicated record store and a Temporal server of its own (no temporalAddress)');
    const tls = options.tls ? issueTopologyTls() : null;
    const replicated = options.replicated ? await ReplicatedRecordStore.start(options.replicated, tls?.recordStore) : null;
    const postgres = replicated ? null : await PostgresServer.create(`${options.dir}/pg`);
    const temporal = options.temporalAddress
      ? null
      : tls
        ? await PostgresTemporalServer.start({ tls: tls.frontend, connect: tls.connect })
        : await TemporalServer.start(options.dir);
    const cluster = new Cluster(options, postgres, replicated, temporal, options.temporalAddress ?? temporal!.address, tls);
    const hosts = cluster.hostLayout?.hosts ?? [];
    for (let i = 0; i < options.workers; i++) cluster.spawnWorker(hosts.length ? hosts[i % hosts.length] : undefined);
    // A loaded host (a shared CI runner, several suites at once) may take minutes to start three workers.
    await Promise.all(cluster.workers.map((w) => w.ready(180_000)));
    cluster.learnHostIds();
    cluster.watching = setInterval(() => cluster.watch(), 50);
    return cluster;
  }

  get databaseUrl(): string {
    return this.replicated?.url ?? this.postgres!.url;
  }

  /** A Temporal client connection made as the workers make theirs (settle's TEMPORAL_TLS_* settings under options.tls). */
  connectTemporal(): Promise<Connection> {
    return Connection.connect(loadTemporalTarget({ address: this.temporalAddress }, this.tls?.temporalEnv ?? {}).connectionOptions);
  }

  private spawnWorker(host?: ClusterHost): WorkerProcess {
    const worker = WorkerProcess.start({
      temporalAddress: this.temporalAddress,
      databaseUrl: this.databaseUrl,
      taskQueue: this.options.taskQueue,
      workflowBundlePath: this.options.workflowBundlePath,
      failpoints: this.options.failpoints ?? '',
      maxOutput: 16 * 1024,
      // One root of shell run markers for the cluster's workers (one host), under the scenario's directory.
      env: {
        SETTLE_RUNS_DIR: path.join(this.options.dir, 'runs'),
        SETTLE_OPERATOR_KEYS: this.onDuty.keysText,
        ...this.tls?.temporalEnv,
        ...this.options.env,
        ...this.buildEnv,
        // On a host: its own disk at the shared workspace root and runs directory, its own host id.
        ...(this.hostLayout ? hostEnv(this.hostLayout) : {}),
      },
      ...(this.options.workerEntry ? { entry: this.options.workerEntry } : {}),
      ...(this.options.ready ? { ready: this.options.ready } : {}),
      ...(host && this.hostLayout ? { host: mountOf(this.hostLayout, host) } : {}),
    });
    this.workers.push(worker);
    this.everyWorker.set(worker.pid, worker);
    if (host) this.hostOfWorker.set(worker.pid, host);
    void worker.exited.then((exit) => this.onExit(worker, exit.signal, exit.code));
    return worker;
  }

  /** A worker that died is replaced at once (as a supervisor would); its death is a fault if nobody asked for it. */
  private onExit(worker: WorkerProcess, signal: NodeJS.Signals | null, code: number | null = null): void {
    const i = this.workers.indexOf(worker);
    if (i >= 0) this.workers.splice(i, 1);
    if (this.closed) return;
    const fired = /settle failpoint: (\S+) → kill/.exec(worker.output());
    const drained = this.draining.delete(worker.pid) && signal === null && code === 0;
    if (drained) {
      // Replaced by rollingReplace, which waits for the replacement.
    } else if (fired && signal === 'SIGKILL') {
      const now = Date.now();
      this.faults.push({ kind: 'failpoint-kill', at: now, until: now, identity: worker.identity, failpoint: fired[1]! });
    } else if (signal !== 'SIGKILL') {
      // Not asked for: a finding of the run (reported as a fault of its own, with the output).
      const now = Date.now();
      this.faults.push({ kind: 'worker-crash', at: now, until: now, identity: worker.identity });
      this.log(`worker ${worker.pid} exited on its own (${signal ?? 'exit code'}):\n${worker.output().slice(-1500)}`);
    }
    // On its own host again (the same disk); a dead host's workers come back with the host (killHost).
    const host = this.hostOfWorker.get(worker.pid);
    if (!host?.down) this.spawnWorker(host);
  }

  /** Resumes workers that paused themselves at a `stop` failpoint, after they outlived their lease. */
  private watch(): void {
    for (const worker of this.workers) {
      if (this.resuming.has(worker.pid) || !worker.alive || !worker.stopped) continue;
      this.resuming.add(worker.pid);
      const at = Date.now();
      const point = [...worker.output().matchAll(/settle failpoint: (\S+) → stop/g)].at(-1)?.[1];
      const pauseMs = this.options.pauseMs?.() ?? 6_000;
      setTimeout(() => {
        worker.signal('SIGCONT');
        this.resuming.delete(worker.pid);
        this.faults.push({ kind: 'zombie', at, until: Date.now(), identity: worker.identity, ...(point ? { failpoint: point } : {}) });
      }, pauseMs);
    }
  }

  /**
   * SIGKILL of a random worker (replaced at once by onExit) among those already polling: killing
   * a replacement still starting up measures nothing, and under a fast kill loop on a loaded host
   * it can leave no worker at all for tens of seconds.
   */
  killRandomWorker(random: () => number): void {
    const candidates = this.workers.filter((w) => w.alive && w.isReady && !this.resuming.has(w.pid));
    const victim = candidates[Math.floor(random() * candidates.length)];
    if (victim) this.kill(victim);
  }

  /**
   * SIGKILL aimed at a running call: one of the calls IN_FLIGHT now (settle's records, read
   * here, not by the workers) is chosen at random and the worker that holds its lease is killed
   * — its holder is `<worker identity>#<activity id>@<attempt>` (activities/factory/settled-calls.ts). With no
   * call in flight on a live worker (or the database unreachable), a random worker is killed.
   * Returns the key aimed at, or null for a random kill.
   */
  async killWorkerHoldingCall(random: () => number): Promise<string | null> {
    const running = await this.callsInFlight().catch(() => []);
    const live = this.workers.filter((w) => w.alive && !w.stopped && !this.resuming.has(w.pid));
    const targets = running.flatMap((c) => {
      const worker = live.find((w) => c.holder.startsWith(`${w.identity}#`));
      return worker ? [{ key: c.key, worker }] : [];
    });
    const target = targets[Math.floor(random() * targets.length)];
    if (!target) {
      this.killRandomWorker(random);
      return null;
    }
    this.kill(target.worker, target.key);
    return target.key;
  }

  private kill(victim: WorkerProcess, aimedAt?: string): void {
    const now = Date.now();
    this.faults.push({ kind: 'sigkill', at: now, until: now, identity: victim.identity, ...(aimedAt ? { aimedAt } : {}) });
    victim.signal('SIGKILL');
  }

  private inspect(): pg.Pool {
    if (!this.inspector) {
      this.inspector = new pg.Pool({ connectionString: this.databaseUrl, max: 1, connectionTimeoutMillis: 2_000 });
      this.inspector.on('error', () => {}); // PostgreSQL restarted: the next query reconnects
    }
    return this.inspector;
  }

  /** The records IN_FLIGHT now, with their holders. */
  private async callsInFlight(): Promise<{ key: string; holder: string }[]> {
    const { rows } = await this.inspect().query<{ key: string; holder: string }>(
      "select key, holder from settle_endpoint_records where state = 'IN_FLIGHT' and holder is not null",
    );
    return rows;
  }

  /**
   * A rolling deploy: every worker running now, one at a time, is asked to drain (SIGTERM, as a
   * supervisor stops it) and, once it has exited, replaced by one started with `env` (the new
   * build, e.g. SETTLE_BUILD_ID), which must poll before the next worker is drained. A worker
   * that exits otherwise than cleanly is a crash (onExit). Stops early when `running()` turns false.
   */
  async rollingReplace(env: NodeJS.ProcessEnv, running: () => boolean = () => true): Promise<void> {
    this.buildEnv = { ...this.buildEnv, ...env };
    for (const old of [...this.workers]) {
      if (!running() || this.closed) return;
      if (!old.alive || this.resuming.has(old.pid)) continue;
      const at = Date.now();
      this.draining.add(old.pid);
      old.signal('SIGTERM');
      await old.exited;
      const replacement = this.workers.at(-1);
      if (replacement) await replacement.ready(180_000);
      this.faults.push({ kind: 'rolling-replace', at, until: Date.now(), identity: old.identity });
    }
  }

  /** PostgreSQL goes away (fast shutdown or kill -9) for `downMs`, then comes back. */
  async restartPostgres(mode: 'fast' | 'crash', downMs: number): Promise<void> {
    const postgres = this.postgres;
    if (!postgres) throw new Error('this cluster’s record store is replicated: fail it over instead');
    const at = Date.now();
    await (mode === 'fast' ? postgres.stop() : postgres.crash());
    await sleep(downMs);
    await postgres.start();
    this.faults.push({ kind: mode === 'fast' ? 'postgres-fast' : 'postgres-crash', at, until: Date.now() });
  }

  /** The calls IN_FLIGHT now (0 when the record store cannot be read). */
  async inFlightCount(): Promise<number> {
    return (await this.callsInFlight().catch(() => [])).length;
  }

  /** The replicated record store's primary dies and its standby takes over (ReplicatedRecordStore.failOver). */
  async failOver(lagMs: number): Promise<void> {
    if (!this.replicated) throw new Error('this cluster’s record store has no standby to fail over to');
    const at = Date.now();
    const { inFlight, unsentBytes } = await this.replicated.failOver(lagMs);
    this.faults.push({ kind: 'failover', at, until: Date.now(), inFlight: inFlight.length });
    this.log(`failover: ${inFlight.length} calls in flight, ${unsentBytes} bytes of WAL not sent to the standby; ${Date.now() - at} ms`);
  }

  /** PgBouncer in front of the replicated record store SIGKILLed and started again after `downMs`. */
  async restartPooler(downMs: number): Promise<void> {
    if (!this.replicated) throw new Error('this cluster has no pooler');
    const inFlight = await this.inFlightCount();
    const at = Date.now();
    await this.replicated.restartPooler(downMs);
    this.faults.push({ kind: 'pooler-restart', at, until: Date.now(), inFlight });
  }

  /** The Temporal server stops and starts again on its SQLite file (or its PostgreSQL, under options.tls). */
  async restartTemporal(downMs: number): Promise<void> {
    if (!this.temporal) throw new Error('this cluster shares a Temporal server it must not restart');
    const at = Date.now();
    await this.temporal.stop();
    await sleep(downMs);
    await this.temporal.start();
    this.faults.push({ kind: 'temporal-restart', at, until: Date.now() });
  }

  /** Each host's id, from its workers' polling lines; two hosts with one id would be one host to settle. */
  private learnHostIds(): void {
    for (const host of this.hostLayout?.hosts ?? []) {
      const ids = new Set(this.workers.filter((w) => this.hostOfWorker.get(w.pid) === host).map((w) => w.hostId));
      if (ids.size !== 1 || ids.has(null)) throw new Error(`hosts: ${host.name}'s workers logged host ids ${[...ids].join(', ')}`);
      host.id = [...ids][0]!;
    }
    const ids = this.hostLayout?.hosts.map((h) => h.id) ?? [];
    if (new Set(ids).size !== ids.length) throw new Error(`hosts: two hosts derived one host id (${ids.join(', ')})`);
  }

  /** The hosts whose live workers hold calls IN_FLIGHT now, with how many each. */
  async hostsWithCallsInFlight(): Promise<Map<ClusterHost, number>> {
    const out = new Map<ClusterHost, number>();
    const rows = await this.callsInFlight().catch(() => []);
    for (const row of rows) {
      const host = this.hostLayout?.hosts.find((h) => row.holder && h.id !== null && this.holderOn(row.holder, h));
      if (host) out.set(host, (out.get(host) ?? 0) + 1);
    }
    return out;
  }

  /** How many trajectories have a claim recorded with a host: their workspace's host is known from the records from then on. */
  async trajectoriesPinned(): Promise<number> {
    const { rows } = await this.inspect().query<{ n: string }>(
      'select count(distinct trajectory_id)::text as n from settle_endpoint_records where host is not null',
    );
    return Number(rows[0]!.n);
  }

  private holderOn(holder: string, host: ClusterHost): boolean {
    return this.workers.some((w) => this.hostOfWorker.get(w.pid) === host && holder.startsWith(`${w.identity}#`));
  }

  /**
   * A host's death: every process of its workers SIGKILLed at once (chaos/infra/host.ts), nothing
   * started on it for `downMs`; then as many workers as it had start on it again (the same disk,
   * so the same derived host id) and the fault ends once they poll.
   */
  async killHost(host: ClusterHost, downMs: number): Promise<void> {
    const victims = this.workers.filter((w) => this.hostOfWorker.get(w.pid) === host);
    const inFlight = (await this.hostsWithCallsInFlight()).get(host) ?? 0;
    const at = Date.now();
    host.down = true;
    killHostProcesses(victims.map((w) => w.pid));
    await Promise.all(victims.map((w) => w.exited));
    await sleep(downMs);
    host.down = false;
    if (this.closed) return;
    const back = victims.map(() => this.spawnWorker(host));
    await Promise.all(back.map((w) => w.ready(180_000)));
    const id = back[0]?.hostId;
    if (id !== host.id) this.log(`${host.name} came back as host ${id}, not ${host.id}`);
    this.faults.push({ kind: 'host-death', at, until: Date.now(), host: host.name, identities: victims.map((w) => w.identity), inFlight });
    this.log(`${host.name} died with ${victims.length} workers and ${inFlight} calls in flight; back after ${Date.now() - at} ms`);
  }

  /** Resumes every paused worker (end of the fault phase: zombies finish what they were doing). */
  resumeAll(): void {
    for (const w of this.workers) if (w.stopped) w.signal('SIGCONT');
  }

  async stop(): Promise<void> {
    this.closed = true;
    if (this.watching) clearInterval(this.watching);
    await this.inspector?.end().catch(() => {});
    await Promise.all(this.workers.map((w) => w.kill()));
    await this.postgres?.start().catch(() => {});
    await this.postgres?.destroy();
    await this.replicated?.destroy();
    await this.temporal?.destroy();
    this.tls?.ca.remove();
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
