/**
 * settle's own Prometheus metrics, counted from call events (events.ts) and rendered in the text
 * exposition format. No client library: a handful of labelled counters and gauges.
 */
import { onCallEvent, type CallEvent } from './events';

type Labels = Record<string, string>;

class Family {
  private readonly values = new Map<string, { labels: Labels; value: number }>();
  constructor(
    readonly name: string,
    readonly type: 'counter' | 'gauge',
    readonly help: string,
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
    for (const { labels, value } of this.values.values()) {
      const l = Object.entries(labels)
        .map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`)
        .join(',');
      lines.push(`${this.name}${l ? `{${l}}` : ''} ${value}`);
    }
    return lines.join('\n');
  }
}

/** What each metric means (and which to alert on) is in the README's runbook. */
export class SettleMetrics {
  readonly claims = new Family('settle_claims_total', 'counter', 'Claims that took a key IN_FLIGHT (a new execution), by tool.');
  readonly replays = new Family('settle_replays_total', 'counter', 'Calls answered from a COMPLETED record without executing, by tool.');
  readonly busy = new Family('settle_busy_total', 'counter', 'Claims refused because another executor held a live lease, by tool.');
  readonly inDoubt = new Family(
    'settle_in_doubt_total',
    'counter',
    'Transitions to IN_DOUBT, by tool and cause (exception, lease_expired).',
  );
  readonly released = new Family('settle_not_executed_total', 'counter', 'Executions that proved no effect (NOT_EXECUTED), by tool.');
  readonly settled = new Family('settle_settled_total', 'counter', 'IN_DOUBT records settled, by who (probe, operator) and to what state.');
  readonly fenced = new Family(
    'settle_fenced_writes_total',
    'counter',
    'Writes refused by fencing (a late or zombie executor), by operation.',
  );
  readonly denials = new Family('settle_capability_denials_total', 'counter', 'Accesses refused by the capability, by component.');
  readonly malformed = new Family('settle_malformed_calls_total', 'counter', 'Proposed calls refused by validation, by tool.');
  readonly leaseFailures = new Family('settle_lease_renewals_failed_total', 'counter', 'Lease renewals refused or lost, by tool.');
  readonly approvalsPending = new Family(
    'settle_trajectories_awaiting_approval',
    'gauge',
    'Running trajectories with at least one A3 call waiting for approval (from visibility, refreshed at most every 15 s).',
  );
  readonly inDoubtRecords = new Family(
    'settle_records',
    'gauge',
    'Endpoint records by state (from Postgres, refreshed at most every 15 s).',
  );

  private readonly families = [
    this.claims,
    this.replays,
    this.busy,
    this.inDoubt,
    this.released,
    this.settled,
    this.fenced,
    this.denials,
    this.malformed,
    this.leaseFailures,
    this.approvalsPending,
    this.inDoubtRecords,
  ];

  count(e: CallEvent): void {
    switch (e.event) {
      case 'claimed':
        return this.claims.add({ tool: e.tool });
      case 'replayed':
        return this.replays.add({ tool: e.tool });
      case 'busy':
        return this.busy.add({ tool: e.tool });
      case 'in_doubt':
        if (e.cause !== 'found_in_doubt') this.inDoubt.add({ tool: e.tool, cause: e.cause });
        return;
      case 'released':
        return this.released.add({ tool: e.tool });
      case 'settled':
        return this.settled.add({ by: e.by, state: e.state });
      case 'fenced_write':
        return this.fenced.add({ op: e.op });
      case 'capability_denied':
        return this.denials.add({ component: e.component });
      case 'malformed_call':
        return this.malformed.add({ tool: e.tool });
      case 'lease_renewal_failed':
        return this.leaseFailures.add({ tool: e.tool });
      case 'completed':
        return;
    }
  }

  render(): string {
    return this.families.map((f) => f.render()).join('\n') + '\n';
  }
}

/** The process's metrics, counting every call event from now on. */
export function collectMetrics(): SettleMetrics {
  const metrics = new SettleMetrics();
  onCallEvent((e) => metrics.count(e));
  return metrics;
}
