/**
 * The on-call SRE of the chaos suite: settles IN_DOUBT calls that settle could not settle itself
 * (shell commands whose executor died; a probeable call only if its probe has not settled it in a
 * minute), from the facts — the effect's line in the workspace's
 * files — exactly as a person would with `settle resolve`. A careful SRE settles a call only when
 * its executor is gone (a paused or still-running executor may yet act or record its outcome)
 * and settle had a few seconds to settle it by itself.
 */
import type { EndpointRecord, EndpointStore } from '../../activities/store/endpoint-store';
import type { SettleClient } from '../../client/index';
import { resolveCall } from '../../cli/resolve-call';
import type { Cluster } from './cluster';
import { effectPresent } from './effects';
import { uidOfArgs, type TrajectoryPlan } from './workload';
import { declaresProbe } from '../../core/tools/catalog';
import { callsQuery } from '../../workflows/definitions';

export interface OperatorAction {
  key: string;
  tool: string;
  verdict: 'applied' | 'not_applied';
  path: 'update' | 'record' | 'none';
  at: number;
}

const GRACE_MS = 3_000;
/**
 * A call whose tool declares a probe is settle's to settle: its workflow probes once it learns of
 * the doubt, which after a dead worker can take a workflow-task timeout (10 s) and a retry. The
 * SRE steps in once that probe has looked and could not tell, or if it has not looked in this long
 * (a person paged for a stuck call).
 */
const PROBEABLE_GRACE_MS = 60_000;
/** How long one record's settlement may take (Temporal requests included) before the next round tries again. */
const RECORD_DEADLINE_MS = 10_000;

export class Sre {
  readonly actions: OperatorAction[] = [];
  private readonly plans: Map<string, TrajectoryPlan>;

  constructor(
    private readonly settle: SettleClient,
    private readonly store: EndpointStore,
    private readonly cluster: Cluster,
    plans: TrajectoryPlan[],
  ) {
    this.plans = new Map(plans.map((p) => [p.id, p]));
  }

  /** Keeps watching until `done` resolves. */
  async watch(done: Promise<unknown>, log: (line: string) => void = () => {}): Promise<void> {
    let finished = false;
    void done.finally(() => (finished = true));
    let lastError = '';
    while (!finished) {
      await this.round().catch((err: unknown) => {
        // The database or Temporal may be restarting; say so once per different error.
        const cause = (err as { cause?: { message?: string } }).cause?.message;
        const text = err instanceof Error ? `${err.message}${cause ? ` (${cause})` : ''}` : String(err);
        if (text !== lastError) log(`sre: ${text}`);
        lastError = text;
      });
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }

  /**
   * One look at every IN_DOUBT record of this run; settles those whose facts are final. Each
   * record on its own, concurrently, with a deadline per record: a trajectory whose workflow task
   * is failing (its worker just died) refuses or holds the update, and must delay no other call.
   */
  async round(options: { graceMs?: number } = {}): Promise<number> {
    const records = (await this.store.list({ state: 'IN_DOUBT', limit: 10_000 })).filter((r) => this.plans.has(r.trajectoryId));
    const errors: unknown[] = [];
    const settled = await Promise.all(
      records.map((record) =>
        this.settle.client.connection
          .withDeadline(Date.now() + RECORD_DEADLINE_MS, () => this.settleOne(record, options.graceMs ?? GRACE_MS))
          .catch((err: unknown) => {
            errors.push(err);
            return false;
          }),
      ),
    );
    if (errors.length) throw errors[0]; // said once by watch(); the others are retried next round
    return settled.filter(Boolean).length;
  }

  private async settleOne(record: EndpointRecord, graceMs: number): Promise<boolean> {
    const plan = this.plans.get(record.trajectoryId)!;
    const events = await this.store.events(record.key);
    const since =
      [...events]
        .reverse()
        .find((e) => e.toState === 'IN_DOUBT')
        ?.at.getTime() ?? 0;
    if (Date.now() - since < graceMs) return false;
    // The last look after the workload (graceMs 0) settles these too: no probe will come any more.
    const probeable = graceMs > 0 && declaresProbe(record.tool, record.args as Record<string, unknown>);
    if (probeable && Date.now() - since < PROBEABLE_GRACE_MS && !(await this.probedYet(record))) return false;
    if (this.holderMayStillAct(events, record.generation)) return false;
    const uid = uidOfArgs(record.args);
    if (!uid) return false;
    const present = effectPresent(plan, uid);
    const verdict = present ? 'applied' : 'not_applied';
    const resolution = await resolveCall(
      this.settle,
      this.store,
      {
        key: record.key,
        verdict,
        reason: `${uid} is ${present ? '' : 'not '}in the workspace files; its executor is gone`,
        // The facts above are about this generation's execution: never settle a later one with them.
        generation: record.generation,
      },
      // Signed with the SRE's operator key (chaos-sre, recorded as operator:chaos-sre).
      { signer: this.cluster.onDuty.sre, keys: this.cluster.onDuty.keys },
    );
    this.actions.push({ key: record.key, tool: record.tool, verdict, path: resolution.path, at: Date.now() });
    return resolution.path !== 'none';
  }

  /** Whether the trajectory's own probe has looked at this call yet (asks the workflow; no answer counts as no). */
  private async probedYet(record: EndpointRecord): Promise<boolean> {
    try {
      const calls = await this.settle.client.workflow.getHandle(record.trajectoryId).query(callsQuery);
      return calls.some((c) => c.key === record.key && (c.probes ?? 0) > 0);
    } catch {
      return false;
    }
  }

  /** The executor of the doubtful generation is alive (running or paused): it may still act, or record what it did. */
  private holderMayStillAct(
    events: { generation: number; toState: string; fromState: string; detail: unknown }[],
    generation: number,
  ): boolean {
    const claim = [...events]
      .reverse()
      .find((e) => e.generation === generation && e.toState === 'IN_FLIGHT' && e.fromState !== 'IN_FLIGHT');
    const holder = (claim?.detail as { holder?: string } | undefined)?.holder ?? '';
    const pid = Number(/:(\d+)#/.exec(holder)?.[1]);
    const worker = this.cluster.everyWorker.get(pid);
    return worker !== undefined && worker.alive;
  }
}
