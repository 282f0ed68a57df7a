/**
 * The MCP gateway workload: `settle mcp serve --http` processes, each in front of its own instance
 * of the reference filesystem server from npm (one directory each, all under the server name
 * `files`) and in a session of its own, driven by the official SDK client over streamable HTTP,
 * while the scenario SIGKILLs a gateway (its process group: the gateway, its worker and its
 * upstream, as a container dies) and a supervisor starts it again on the same port and session.
 * Every call edits a file of its own in its gateway's directory (`count:` → `count:I`), so each
 * execution of the upstream's edit adds one `I`, in that instance: effects are counted in the
 * files, never from settle's records. A call whose gateway died is sent again with the same call
 * id to the same gateway, restarted, until it answers: the same call id is the same call (one
 * update of the session's workflow), so the retry joins it rather than repeating it.
 * Calls left IN_DOUBT by a kill settle by themselves: the registry names read_text_file as
 * edit_file's probe (docs/mcp.md).
 */
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { openDatabase } from '../../activities/store/database';
import { EndpointStore } from '../../activities/store/endpoint-store';
import { SettleClient } from '../../client/index';
import { errorMessage } from '../../core/errors';
import { Cluster, sleep, type Fault } from './cluster';
import { recoveries, recoveryFigures, renewalFigures, renewalRate } from './metrics';
import { callTrails, historyFigures, renewalStatements } from './collect';
import { laneEnv, laneFields, runName } from './lanes';
import { mulberry32 } from './random';
import type { Scenario, ScenarioEnvironment, ScenarioResult } from './scenario-types';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const SETTLE_BIN = path.join(REPO, 'bin', 'settle.js');
const FILESYSTEM_SERVER = path.join(REPO, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');
const READY = /streamable HTTP on http:\/\//;
const COMPLETED = new Set(['executed', 'replayed', 'settled_by_probe', 'settled_by_operator']);
/** Concurrent MCP clients. */
const LANES = 3;

interface CallReport {
  id: string;
  file: string;
  /** How settle said the call ended (`_meta["io.settle/resolution"]`), or null when no gateway ever answered. */
  resolution: string | null;
  isError: boolean;
  /** Sends (the first and every retry after a gateway died). */
  attempts: number;
  error: string | null;
}

/** One gateway slot: a port of its own, the process now serving it (restarted after each kill). */
class GatewaySlot {
  process: ChildProcess | null = null;
  ready = false;
  private output = '';
  private stopped = false;

  constructor(
    readonly port: number,
    private readonly command: string[],
    private readonly env: NodeJS.ProcessEnv,
    private readonly log: (line: string) => void,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/mcp`;
  }

  start(): Promise<void> {
    this.ready = false;
    this.output = '';
    // Its own process group: a kill takes the gateway and its upstream together.
    const child = spawn(process.execPath, this.command, { env: this.env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    this.process = child;
    const up = new Promise<void>((resolve) => {
      child.stderr.on('data', (b: Buffer) => {
        this.output = (this.output + b.toString()).slice(-8_000);
        if (!this.ready && READY.test(this.output)) {
          this.ready = true;
          resolve();
        }
      });
    });
    child.once('exit', (code, signal) => {
      this.ready = false;
      if (this.stopped) return;
      if (signal !== 'SIGKILL')
        this.log(`gateway on port ${this.port} exited on its own (${signal ?? code}):\n${this.output.slice(-1500)}`);
      void this.start(); // the supervisor
    });
    return up;
  }

  kill(): void {
    const pid = this.process?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  stop(): void {
    this.stopped = true;
    this.kill();
  }
}

export async function runMcpGatewayScenario(scenario: Scenario, env: ScenarioEnvironment): Promise<ScenarioResult> {
  const random = mulberry32(env.seed);
  const name = runName(scenario);
  const dir = path.join(env.dir, name);
  fs.rmSync(dir, { recursive: true, force: true });

  const started = Date.now();
  const cluster = await Cluster.start({ dir, workers: 0, taskQueue: 'unused', workflowBundlePath: env.workflowBundlePath, log: env.log });
  const connection = await Connection.connect({ address: cluster.temporalAddress });
  const client = new Client({ connection });
  const db = openDatabase(cluster.databaseUrl, { max: 4 });
  const store = new EndpointStore(db);
  const inspector = new pg.Pool({ connectionString: cluster.databaseUrl, max: 1 });
  inspector.on('error', () => {});
  // One session and one upstream instance per gateway: a call is made to one instance, and runs and is probed only there.
  const instances = Array.from({ length: scenario.workers }, (_, i) => {
    const trajectory = `${name}-${env.seed}-${i}`;
    const files = path.join(dir, `files-${i}`);
    fs.mkdirSync(files, { recursive: true });
    return { trajectory, files };
  });
  const trajectories = instances.map((i) => i.trajectory);
  const registry = path.join(dir, 'registry.json');
  fs.writeFileSync(
    registry,
    JSON.stringify({
      server: 'files',
      tools: {
        read_text_file: { level: 'A0' },
        edit_file: {
          level: 'A2',
          probe: {
            tool: 'read_text_file',
            args: { path: { from: '/path' } },
            applied_if_contains: '/edits/0/newText',
            otherwise: 'not_applied',
          },
        },
      },
    }),
  );
  // One token for every gateway process and restart: the clients keep theirs across kills.
  const token = randomBytes(32).toString('base64url');
  const tokenFile = path.join(dir, 'gateway-token');
  fs.writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  const command = (instance: (typeof instances)[number]) => [
    SETTLE_BIN,
    'mcp',
    'serve',
    '--upstream',
    [process.execPath, FILESYSTEM_SERVER, instance.files].map((w) => JSON.stringify(w)).join(' '),
    '--registry',
    registry,
    '--ungated',
    '--trajectory',
    instance.trajectory,
    '--token-file',
    tokenFile,
    '--http',
  ];
  const gatewayEnv = {
    ...process.env,
    TEMPORAL_ADDRESS: cluster.temporalAddress,
    DATABASE_URL: cluster.databaseUrl,
    SETTLE_WORKFLOW_BUNDLE: env.workflowBundlePath,
    SETTLE_FAILPOINTS: scenario.failpoints ?? '',
    ...laneEnv(scenario),
  };
  const slots: GatewaySlot[] = [];
  for (const instance of instances) {
    const port = await freePort();
    slots.push(new GatewaySlot(port, [...command(instance), String(port)], gatewayEnv, env.log));
  }
  const faults: Fault[] = [];
  try {
    await Promise.all(slots.map((slot) => slot.start()));
    const n = scenario.orchestrated + scenario.scripted;
    const deadline = Date.now() + scenario.timeoutMs;
    const plans = Array.from({ length: n }, (_, i) => {
      const slot = i % slots.length;
      const file = path.join(instances[slot]!.files, `${i}.txt`);
      fs.writeFileSync(file, 'count:\n');
      return { id: `call-${i}`, file, slot: slots[slot]! };
    });
    let next = 0;
    let running = true;
    const spread = scenario.spreadMs ?? 0;
    const lanes = Array.from({ length: LANES }, async (_, lane) => {
      const reports: CallReport[] = [];
      await sleep((spread * lane) / LANES);
      for (let i = next++; i < n; i = next++) {
        reports.push(await callUntilAnswered(plans[i]!, token, deadline));
        await sleep(spread / Math.max(1, n / LANES));
      }
      return reports;
    });
    const workload = Promise.all(lanes)
      .then((r) => r.flat())
      .finally(() => (running = false));
    const faultsUntil = Date.now() + (scenario.faultsForMs ?? Infinity);
    const live = () => running && Date.now() < faultsUntil;
    const faulting = (async () => {
      while (live()) {
        await sleep(2_000 + random() * 3_000);
        if (live()) await killGatewayHoldingCall(slots, inspector, random, faults);
      }
    })().catch((err: unknown) => env.log(`${name}: fault injection stopped: ${String(err)}`));
    const reports = await workload;
    await faulting;

    const trails = await callTrails(store, trajectories);
    const histories = await historyFigures(new SettleClient(client), trajectories, env.historiesDir);
    const renewals = await renewalStatements(db);
    const result = summarize(scenario, reports, faults, trails, started, trajectories.length);
    const recovered = recoveries(faults, trails);
    const rate = renewals === null ? null : renewalRate(renewals, trails, faults);
    return {
      ...result,
      ...laneFields(scenario, recovered, histories.laneAttempts),
      leftInDoubt: trails.filter((t) => t.state === 'IN_DOUBT').length,
      recovery: recoveryFigures(recovered),
      ...renewalFigures(rate),
      ...(rate ? {} : { renewalsNote: 'not measured: no renewal statement in pg_stat_statements' }),
      workflowTaskFailures: histories.taskFailures,
      durationS: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    for (const slot of slots) slot.stop();
    for (const trajectory of trajectories) {
      await client.workflow
        .getHandle(trajectory)
        .terminate('chaos scenario over')
        .catch(() => {});
    }
    await inspector.end().catch(() => {});
    await connection.close().catch(() => {});
    await db.destroy().catch(() => {});
    await cluster.stop();
  }
}

/**
 * One call, sent to its gateway and sent again (same call id, the gateway restarted in the same
 * session) whenever the connection fails or the gateway could not reach the session's workflow,
 * until it answers with settle's resolution or the deadline passes.
 */
async function callUntilAnswered(
  plan: { id: string; file: string; slot: GatewaySlot },
  token: string,
  deadline: number,
): Promise<CallReport> {
  const { slot } = plan;
  let attempts = 0;
  let error: string | null = null;
  while (Date.now() < deadline) {
    if (!slot.ready) {
      await sleep(200);
      continue;
    }
    attempts++;
    const mcp = new McpClient({ name: 'settle-chaos', version: '0.1.0' });
    try {
      await mcp.connect(
        new StreamableHTTPClientTransport(new URL(slot.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
      );
      const result = (await mcp.callTool(
        {
          name: 'edit_file',
          arguments: { path: plan.file, edits: [{ oldText: 'count:', newText: 'count:I' }] },
          _meta: { 'io.settle/call_id': plan.id },
        },
        undefined,
        { timeout: 120_000 },
      )) as CallToolResult;
      const resolution = result._meta?.['io.settle/resolution'];
      if (typeof resolution === 'string') {
        return { id: plan.id, file: plan.file, resolution, isError: result.isError === true, attempts, error: null };
      }
      // Refused before it became a settled call (e.g. the workflow unreachable): the same call id is safe to send again.
      error = result.content.map((c) => (c.type === 'text' ? c.text : '')).join(' ');
    } catch (err) {
      error = errorMessage(err);
    } finally {
      await mcp.close().catch(() => {});
    }
    await sleep(300);
  }
  return { id: plan.id, file: plan.file, resolution: null, isError: true, attempts, error };
}

/** SIGKILL of the gateway holding a random IN_FLIGHT call (its worker's identity: SettlePlugin's default), else of a random gateway. */
async function killGatewayHoldingCall(slots: GatewaySlot[], inspector: pg.Pool, random: () => number, faults: Fault[]): Promise<void> {
  const identity = (slot: GatewaySlot) => `settle-worker@${os.hostname()}:${slot.process?.pid}`;
  // Calls are sparse next to a gateway's restart: look for one in flight for up to 2 s.
  let targets: { key: string; slot: GatewaySlot }[] = [];
  for (let look = 0; look < 20 && targets.length === 0; look++) {
    if (look > 0) await sleep(100);
    const rows = await inspector
      .query<{ key: string; holder: string }>(
        "select key, holder from settle_endpoint_records where state = 'IN_FLIGHT' and holder is not null",
      )
      .then((r) => r.rows)
      .catch(() => []);
    targets = rows.flatMap((r) => {
      const slot = slots.find((s) => s.ready && r.holder.startsWith(`${identity(s)}#`));
      return slot ? [{ key: r.key, slot }] : [];
    });
  }
  const target = targets[Math.floor(random() * targets.length)];
  const ready = slots.filter((s) => s.ready);
  const victim = target?.slot ?? ready[Math.floor(random() * ready.length)];
  if (!victim) return;
  const now = Date.now();
  faults.push({ kind: 'sigkill', at: now, until: now, identity: identity(victim), ...(target ? { aimedAt: target.key } : {}) });
  victim.kill();
}

function executions(file: string): number {
  return /count:(I*)/.exec(fs.readFileSync(file, 'utf8'))?.[1]?.length ?? 0;
}

function summarize(
  scenario: Scenario,
  reports: CallReport[],
  faults: Fault[],
  trails: { state: string }[],
  started: number,
  sessions: number,
): Omit<ScenarioResult, 'recovery' | 'renewalsPerRunningCallSecond' | 'renewals' | 'workflowTaskFailures'> {
  const problems: string[] = [];
  let duplicates = 0;
  let lost = 0;
  let misreported = 0;
  let effects = 0;
  for (const r of reports) {
    const count = executions(r.file);
    effects += count;
    if (count > 1) {
      duplicates += count - 1;
      problems.push(`${r.id} edited the file ${count} times (${r.resolution ?? 'no answer'})`);
    }
    if (r.resolution !== null && COMPLETED.has(r.resolution) && count === 0) {
      lost++;
      problems.push(`${r.id} reported ${r.resolution} but the file is unchanged`);
    }
    if ((r.resolution === null || r.resolution === 'gave_up') && count > 0) {
      misreported++;
      problems.push(`${r.id} reported ${r.resolution ?? 'no answer'} but the file was edited`);
    }
    if (r.resolution === null) problems.push(`${r.id}: no gateway answered after ${r.attempts} sends (${r.error ?? ''})`);
  }
  const faultCounts: Record<string, number> = {};
  for (const f of faults) {
    const name = f.aimedAt ? `${f.kind}@in-flight-call` : f.kind;
    faultCounts[name] = (faultCounts[name] ?? 0) + 1;
  }
  const resent = reports.reduce((a, r) => a + r.attempts - 1, 0);
  if (resent > 0) faultCounts['client-resends'] = resent;
  return {
    scenario: scenario.name,
    description: scenario.description,
    trajectories: sessions,
    calls: reports.length,
    effects,
    duplicates,
    lost,
    misreported,
    leftInDoubt: trails.filter((t) => t.state === 'IN_DOUBT').length,
    operator: {},
    faults: faultCounts,
    failedTrajectories: 0,
    failedTurns: reports.filter((r) => r.resolution !== null && r.isError).length,
    unfinished: reports.filter((r) => r.resolution === null).length,
    durationS: Math.round((Date.now() - started) / 1000),
    problems,
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
