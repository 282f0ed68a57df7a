/**
 * A trajectory's in-memory state and how it shows to SREs: search attributes, current details,
 * queries. DETERMINISTIC CODE ONLY (workflow sandbox).
 */
import { patched, setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';

/** Patch id: search attributes are upserted only when their values change. */
export const PATCH_UPSERT_ON_CHANGE = 'upsert-search-attributes-on-change-v1';
import type { RecordStateOrUnseen } from '../core/records';
import type { ApproveCallInput, CallReport, CarriedState } from './definitions';
import { SA_IN_DOUBT_COUNT, SA_PENDING_APPROVALS, SA_TRAJECTORY_STATUS, type TrajectoryStatus } from './search-attributes';

export class TrajectoryState {
  readonly reports: CallReport[];
  /** Validated arguments of every call, by key (compensators need them). */
  readonly argsByKey = new Map<string, Record<string, unknown>>();
  readonly turnsDone: Set<number>;
  /** Keys waiting for an operator's verdict, and the record state after an operator settled one. */
  readonly awaitingOperator = new Set<string>();
  readonly operatorSettled = new Map<string, RecordStateOrUnseen>();
  /** A3 calls waiting for an approver, and the decisions received. */
  readonly awaitingApproval = new Set<string>();
  readonly approvals = new Map<string, ApproveCallInput>();
  waitingFor = 'starting';
  private status: TrajectoryStatus = 'running';
  private lastPublished: string | null = null;

  constructor(carried?: CarriedState) {
    this.reports = carried?.reports ?? [];
    this.turnsDone = new Set(carried?.turnsDone ?? []);
  }

  /** Updates the search attributes and the current details shown in the Web UI. */
  publish(status: TrajectoryStatus, details: string): void {
    this.status = status;
    this.waitingFor = details;
    setCurrentDetails(details); // metadata, not a history event: free to update often
    const values = { status, inDoubt: this.reports.filter((r) => r.state === 'IN_DOUBT').length, approvals: this.awaitingApproval.size };
    const fingerprint = `${values.status}|${values.inDoubt}|${values.approvals}`;
    // Every upsert is a history event: skip unchanged values (patched, so histories recorded
    // before this change, which upserted on every step, still replay).
    if (fingerprint === this.lastPublished && patched(PATCH_UPSERT_ON_CHANGE)) return;
    this.lastPublished = fingerprint;
    upsertSearchAttributes([
      { key: SA_TRAJECTORY_STATUS, value: values.status },
      { key: SA_IN_DOUBT_COUNT, value: values.inDoubt },
      { key: SA_PENDING_APPROVALS, value: values.approvals },
    ]);
  }

  /** Re-publishes counts without changing status (after a call's state changed). */
  refresh(details = this.waitingFor): void {
    this.publish(this.status, details);
  }
}
