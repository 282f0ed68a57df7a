/**
 * settle's own Prometheus metrics, counted from call events (events.ts) and rendered in the text
 * exposition format. No client library: a handful of labelled counters and gauges.
 */
import { FENCED_OPS, onCallEvent, SETTLED_BY, type CallEvent } from './events';
import { toolLabel, toolLabels } from './tool-names';

type Labels = Record<string, string>;

/** Every combination of the labels' values: the series a counter reports from zero. */
function everyCombination(values: Record<string, readonly string[]>): Labels[] {
  return Object.entries(values).reduce<Labels[]>(
    (sets, [name, options]) => sets.flatMap((set) => options.map((value) => ({ ...set, [name]: value }))),
    [{}],
  );
}

/** A counter's labels and the values each can take, read at every render (tools register late). */
type Domain = () => Record<string, readonly string[]>;

const byTool: Domain = () => ({ tool: toolLabels() });

class Family {
  private readonly values = new Map<string, { labels: Labels; value: number }>();
  /**
   * `domain`: the label values known in advance. Their series are reported from 0 before their
   * first increment, so that `increase()` counts that increment (a series born at 1 reads as 0).
   */
  constructor(
    readonly name: string,
    readonly type: 'counter' | 'gauge',
    readonly help: string,
    private readonly domain?: Domain,
  ) {}

  add(labels: Labels, by = 1): void {
    const id = JSON.stringify(Object.entries(labels).sort());
    const v = this.values.get(id) ?? { labels, value: 0 };
    v.value += by;
    this.values.set(id, v);
  }

  set(labels: Labels, value: number): void {
    this.values.delete(JSON.stringify(Object.entries(labels).sort()));
    this.add(labels, value);
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`];
    for (const labels of this.domain ? everyCombination(this.domain()) : []) {
      const id = JSON.stringify(Object.entries(labels).sort());
      if (!this.values.has(id)) this.values.set(id, { labels, value: 0 });
    }
    for (const { labels, value } of this.values.values()) {
      const l = Object.entries(labels)
        .map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`)
        .join(',');
      lines.push(`${this.name}${l ? `{${l}}` : ''} ${value}`);
    }
    return lines.join('\n');
  }
}

/**
 * What each metric means (and which to alert on) is in docs/operating.md (Metrics); the example alert
 * rules are ops/prometheus/settle-alerts.yml. Counters count what this process saw. Gauges read
 * from Postgres and Temporal visibility describe the whole installation: only the process that
 * holds the exporter lock (workers/gauge-exporter.ts) reports them, so they are never summed twice.
 */
export class SettleMetrics {
  readonly claims = new Family('settle_claims_total', 'counter', 'Claims that took a key IN_FLIGHT (a new execution), by tool.', byTool);
  readonly replays = new Family(
    'settle_replays_total',
    'counter',
    'Calls answered from a COMPLETED record without executing, by tool.',
    byTool,
  );
  readonly busy = new Family('settle_busy_total', 'counter', 'Claims refused because another executor held a live lease, by tool.', byTool);
  readonly inDoubt = new Family(
    'settle_in_doubt_total',
    'counter',
    'Transitions to IN_DOUBT, by tool and cause (exception, lease_expired).',
    () => ({ tool: toolLabels(), cause: ['exception', 'lease_expired', 'claim_forgotten'] }),
  );
  readonly released = new Family(
    'settle_not_executed_total',
    'counter',
    'Executions that proved no effect (NOT_EXECUTED), by tool.',
    byTool,
  );
  readonly settled = new Family(
    'settle_settled_total',
    'counter',
    "IN_DOUBT records settled by this process, by who (probe, operator, executor: the call's own late completion or release) and to what state.",
    () => ({ by: SETTLED_BY, state: ['COMPLETED', 'NOT_EXECUTED'] }),
  );
  readonly fenced = new Family(
    'settle_fenced_writes_total',
    'counter',
    'Writes refused by fencing (a late or zombie executor), by operation.',
    () => ({ op: FENCED_OPS }),
  );
  readonly writtenBack = new Family(
    'settle_records_written_back_total',
    'counter',
    'Records an executor found gone at its outcome and wrote back (a failover lost committed claims), by state and whether the write-back applied.',
  );
  readonly denials = new Family('settle_capability_denials_total', 'counter', 'Accesses refused by the capability, by component.');
  readonly malformed = new Family('settle_malformed_calls_total', 'counter', 'Proposed calls refused by validation, by tool.', byTool);
  readonly leaseFailures = new Family('settle_lease_renewals_failed_total', 'counter', 'Lease renewals refused or lost, by tool.', byTool);
  readonly probeRounds = new Family(
    'settle_probe_rounds_total',
    'counter',
    'Probe rounds on IN_DOUBT records, by tool and verdict (applied, not_applied, unknown).',
    () => ({ tool: toolLabels(), verdict: ['applied', 'not_applied', 'unknown'] }),
  );
  readonly approvals = new Family(
    'settle_approval_decisions_total',
    'counter',
    'Approval decisions on A3 calls whose operator credential this worker verified, by decision (approve, deny).',
    () => ({ decision: ['approve', 'deny'] }),
  );
  readonly operatorVerdicts = new Family(
    'settle_operator_verdicts_total',
    'counter',
    'Operator verdicts that settled an IN_DOUBT record through a worker, by verdict (applied, not_applied, partial).',
    () => ({ verdict: ['applied', 'not_applied', 'partial'] }),
  );

  readonly operatorSettlements = new Family(
    'settle_operator_settlements_total',
    'counter',
    'IN_DOUBT records an operator settled, by the state they left (COMPLETED: applied or partial, NOT_EXECUTED), counted by the record store on every path: through a worker, and `settle resolve` or the console writing directly on the record (from Postgres, refreshed at most every 15 s).',
    () => ({ state: ['COMPLETED', 'NOT_EXECUTED'] }),
  );

  readonly approvalsPending = new Family(
    'settle_trajectories_awaiting_approval',
    'gauge',
    'Running trajectories with at least one A3 call waiting for approval (from visibility, refreshed at most every 15 s).',
  );
  readonly operatorWaits = new Family(
    'settle_trajectories_waiting_for_operator',
    'gauge',
    'Running trajectories waiting for an operator verdict (from visibility, refreshed at most every 15 s).',
  );
  readonly inDoubtRecords = new Family(
    'settle_records',
    'gauge',
    'Endpoint records by state (from Postgres, refreshed at most every 15 s).',
  );
  readonly oldestInDoubt = new Family(
    'settle_oldest_in_doubt_age_seconds',
    'gauge',
    'Age of the oldest IN_DOUBT record, since its effect became unknown (its lease expired, or its executor failed; database clock); 0 when none.',
  );
  readonly oldestLapsedLease = new Family(
    'settle_oldest_lapsed_lease_age_seconds',
    'gauge',
    'Age of the oldest IN_FLIGHT record whose lease lapsed (no lease sweeper has turned it IN_DOUBT), since the lease expired (database clock); 0 when none.',
  );
  readonly oldestInDoubtSince = new Family(
    'settle_oldest_in_doubt_since_timestamp_seconds',
    'gauge',
    "When the oldest IN_DOUBT record's effect became unknown (its lease expired, or its executor failed), Unix seconds (database clock); 0 when none. An alert computes the age from it, so the age keeps growing while no process reports.",
  );
  readonly oldestApproval = new Family(
    'settle_oldest_approval_wait_age_seconds',
    'gauge',
    'Age of the oldest wait for an approval among running trajectories; 0 when none.',
  );
  readonly oldestOperatorWait = new Family(
    'settle_oldest_operator_wait_age_seconds',
    'gauge',
    'Age of the oldest wait for an operator verdict among running trajectories; 0 when none.',
  );

  private readonly counters = [
    this.claims,
    this.replays,
    this.busy,
    this.inDoubt,
    this.released,
    this.settled,
    this.fenced,
    this.writtenBack,
    this.denials,
    this.malformed,
    this.leaseFailures,
    this.probeRounds,
    this.approvals,
    this.operatorVerdicts,
  ];

  /** Read from Postgres and visibility: the same for every worker, so reported by one (the exporter). */
  private readonly installationGauges = [
    this.approvalsPending,
    this.operatorWaits,
    this.inDoubtRecords,
    this.operatorSettlements,
    this.oldestInDoubt,
    this.oldestInDoubtSince,
    this.oldestLapsedLease,
    this.oldestApproval,
    this.oldestOperatorWait,
  ];

  count(e: CallEvent): void {
    switch (e.event) {
      case 'claimed':
        return this.claims.add({ tool: toolLabel(e.tool) });
      case 'replayed':
        return this.replays.add({ tool: toolLabel(e.tool) });
      case 'busy':
        return this.busy.add({ tool: toolLabel(e.tool) });
      case 'in_doubt':
        if (e.cause !== 'found_in_doubt') this.inDoubt.add({ tool: toolLabel(e.tool), cause: e.cause });
        return;
      case 'released':
        return this.released.add({ tool: toolLabel(e.tool) });
      case 'settled':
        this.settled.add({ by: e.by, state: e.state });
        if (e.by === 'operator') this.operatorVerdicts.add({ verdict: e.verdict });
        return;
      case 'fenced_write':
        return this.fenced.add({ op: e.op });
      case 'record_written_back':
        return this.writtenBack.add({ state: e.state, written: String(e.written) });
      case 'capability_denied':
        return this.denials.add({ component: e.component });
      case 'malformed_call':
        return this.malformed.add({ tool: toolLabel(e.tool) });
      case 'lease_renewal_failed':
        return this.leaseFailures.add({ tool: toolLabel(e.tool) });
      case 'probed':
        return this.probeRounds.add({ tool: toolLabel(e.tool), verdict: e.verdict });
      case 'approval_decided':
        return this.approvals.add({ decision: e.decision });
      case 'completed':
        return;
    }
  }

  /** The exposition text: the counters, and the installation's gauges when this process exports them. */
  render(options: { installationGauges: boolean } = { installationGauges: true }): string {
    const families = options.installationGauges ? [...this.counters, ...this.installationGauges] : this.counters;
    return families.map((f) => f.render()).join('\n') + '\n';
  }
}

/** The process's metrics, counting every call event from now on. */
export function collectMetrics(): SettleMetrics {
  const metrics = new SettleMetrics();
  onCallEvent((e) => metrics.count(e));
  return metrics;
}
