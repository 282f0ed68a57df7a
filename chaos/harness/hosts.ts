/**
 * A cluster's workers spread over several "hosts" (chaos/infra/host.ts): each host a directory
 * of its own — `ws/` its workspaces, `runs/` its shell run markers — bound, in each of its workers'
 * mount namespaces, at one path all hosts share. The workers see `<dir>/host/ws` and
 * `<dir>/host/runs` on every host, each host its own; the harness reads `<dir>/hosts/<name>/…`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import type { openDatabase } from '../../activities/store/database';
import { requireHosts, type HostMount } from '../infra/host';
import { makeWorkspace, type TrajectoryPlan } from './workload';

export interface ClusterHost {
  name: string;
  /** The host's directory as the harness sees it; bound at the shared path in its workers' namespaces. */
  dir: string;
  /** Its workspace root on its disk, as the harness sees it. */
  workspaces: string;
  /** The host id its workers derived (activities/host-id.ts), learned from the first one's polling line. */
  id: string | null;
  /** Down (its processes killed) until it comes back. */
  down: boolean;
}

export interface HostLayout {
  hosts: ClusterHost[];
  /** The workspace root as every host's workers see it (SETTLE_WORKSPACE_ROOT). */
  workspaceRoot: string;
  /** The workers' SETTLE_RUNS_DIR: the same path on every host, each host its own markers. */
  runsDir: string;
  /** Where each host's directory is bound. */
  mountPoint: string;
}

export function layOutHosts(dir: string, count: number): HostLayout {
  if (!Number.isInteger(count) || count < 1) throw new Error(`hosts: must be a whole number ≥ 1 (got ${count})`);
  requireHosts();
  const mountPoint = path.join(dir, 'host');
  fs.mkdirSync(mountPoint, { recursive: true });
  const shared = fs.realpathSync(mountPoint);
  const hosts = Array.from({ length: count }, (_, i) => {
    const name = `host-${String.fromCharCode(97 + i)}`;
    const hostDir = path.join(dir, 'hosts', name);
    for (const sub of ['ws', 'runs']) fs.mkdirSync(path.join(hostDir, sub), { recursive: true });
    return { name, dir: hostDir, workspaces: path.join(hostDir, 'ws'), id: null, down: false };
  });
  return { hosts, workspaceRoot: path.join(shared, 'ws'), runsDir: path.join(shared, 'runs'), mountPoint: shared };
}

/** The mount of `host` for its worker processes. */
export function mountOf(layout: HostLayout, host: ClusterHost): HostMount {
  return { disk: host.dir, at: layout.mountPoint };
}

/** Environment of a worker on a host: the shared paths, and its host id derived from its disk (never one set for all). */
export function hostEnv(layout: HostLayout): NodeJS.ProcessEnv {
  return { SETTLE_WORKSPACE_ROOT: layout.workspaceRoot, SETTLE_RUNS_DIR: layout.runsDir, SETTLE_HOST_ID: '' };
}

type Database = ReturnType<typeof openDatabase>;

/** trajectory id → the hosts its claims recorded (activities/store/endpoint-store.ts `host`). */
async function claimHosts(db: Database, ids: string[]): Promise<Map<string, { key: string; host: string }[]>> {
  const { rows } = await sql<{ key: string; trajectory_id: string; host: string }>`
    select key, trajectory_id, host from settle_endpoint_records
    where host is not null and trajectory_id = any(${ids}::text[])`.execute(db);
  const out = new Map<string, { key: string; host: string }[]>();
  for (const r of rows) out.set(r.trajectory_id, [...(out.get(r.trajectory_id) ?? []), { key: r.key, host: r.host }]);
  return out;
}

/**
 * The stale copies: once a trajectory's first claim shows its workspace pinned to its host (the
 * run's locateWorkspace answer, recorded before any workspace call), a copy of the workspace as it
 * started is made on every other host's disk — from then on a call or probe on a wrong host finds
 * a plausible workspace and leaves its trace, or its "not applied", there. Made only after the pin:
 * a copy from the start would let the first host to answer hold the workspace, as settle
 * documents for workspaces that exist on several hosts.
 */
export class StaleCopies {
  private readonly waiting: Map<string, TrajectoryPlan>;
  /** Trajectories pinned to a host other than their home: a defect of the run. */
  readonly pinnedElsewhere: string[] = [];

  constructor(
    private readonly db: Database,
    plans: TrajectoryPlan[],
    private readonly hosts: ClusterHost[],
  ) {
    this.waiting = new Map(plans.map((p) => [p.id, p]));
  }

  /** Looks every `everyMs` until `running()` turns false (the database may be away meanwhile). */
  async watch(running: () => boolean, everyMs = 200): Promise<void> {
    while (running() && this.waiting.size > 0) {
      await this.look().catch(() => {});
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }

  private async look(): Promise<void> {
    const claimed = await claimHosts(this.db, [...this.waiting.keys()]);
    for (const [id, claims] of claimed) {
      const plan = this.waiting.get(id)!;
      this.waiting.delete(id);
      const home = this.hosts[plan.home]!;
      const elsewhere = claims.find((c) => c.host !== home.id);
      if (elsewhere) {
        this.pinnedElsewhere.push(`${id}: workspace on ${home.name} (${home.id}), claimed on host ${elsewhere.host}`);
        continue;
      }
      plan.disks.forEach((disk, i) => i !== plan.home && makeWorkspace(disk));
    }
  }
}

/** Claims recorded on a host other than the workspace's: each would have run (or probed) away from its evidence. */
export async function claimsElsewhere(db: Database, plans: TrajectoryPlan[], hosts: ClusterHost[]): Promise<string[]> {
  const claimed = await claimHosts(
    db,
    plans.map((p) => p.id),
  );
  return plans.flatMap((plan) => {
    const home = hosts[plan.home]!;
    return (claimed.get(plan.id) ?? [])
      .filter((c) => c.host !== home.id)
      .map((c) => `${c.key} (${plan.id}) claimed on host ${c.host}; its workspace is on ${home.name} (${home.id})`);
  });
}
