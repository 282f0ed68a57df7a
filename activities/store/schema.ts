/**
 * Kysely table types for every settle table, in one database interface (mirrors migrations/;
 * a new migration updates this file in the same commit).
 */
import type { ColumnType, Generated, Selectable } from 'kysely';
import type { RecordState } from '../../core/records';

type Json = ColumnType<unknown, string, string>; // written as JSON text, read back parsed by pg
// Timestamps are always written as SQL expressions on the database clock (now()), never as JS dates.
type Timestamp = ColumnType<Date, Date | undefined, Date>;

export interface EndpointRecordsTable {
  key: string;
  trajectory_id: string;
  turn: number;
  call_id: string;
  tool: string;
  args: Json;
  state: RecordState;
  generation: number;
  lease_until: ColumnType<Date | null, Date | null, Date | null>;
  holder: string | null;
  /** The host of the claim's executor, for a workspace tool (migrations/0005); null otherwise. */
  host: string | null;
  intent: ColumnType<unknown, string | null, string | null>;
  result: ColumnType<unknown, string | null, string | null>;
  detail: string | null;
  settled_by: string | null;
  settle_reason: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface EndpointEventsTable {
  id: Generated<string>;
  key: string;
  generation: number;
  from_state: string;
  to_state: string;
  actor: string;
  detail: ColumnType<unknown, string | null, string | null>;
  at: Timestamp;
}

/** One proposed tool call and its validation outcome (migrations/0002), for malformed-call rates. */
export interface ToolCallsTable {
  trajectory_id: string;
  turn: number;
  call_id: string;
  seq: ColumnType<number, number | undefined, never>;
  tool: string;
  valid: boolean;
  field: string | null;
  rule: string | null;
  // Database clock only: always the column default, now().
  at: ColumnType<Date, never, never>;
}

/** A capability's budget (migrations/0003): spent and reserved for sub-agents, in cost units. */
export interface CapabilityBudgetsTable {
  digest: string;
  audience: string;
  parent_digest: string | null;
  // bigint columns: pg returns them as strings.
  budget: ColumnType<string, number, number>;
  spent: ColumnType<string, number | undefined, number>;
  reserved: ColumnType<string, number | undefined, number>;
  closed: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: ColumnType<Date, never, never>;
}

/** One charge per call key (migrations/0003): a retried call is not charged twice. */
export interface CapabilitySpendsTable {
  key: string;
  digest: string;
  cost: ColumnType<string, number, number>;
  at: ColumnType<Date, never, never>;
}

/** The start of one shell execution, or a probe's fence (migrations/0004). */
export interface ShellRunsTable {
  key: string;
  generation: number;
  kind: 'started' | 'fenced';
  by: ColumnType<unknown, string, string>;
  seal_key: string | null;
  // Database clock only: always the column default, now().
  at: ColumnType<Date, never, never>;
}

export interface SettleDatabase {
  settle_endpoint_records: EndpointRecordsTable;
  settle_endpoint_events: EndpointEventsTable;
  settle_tool_calls: ToolCallsTable;
  settle_capability_budgets: CapabilityBudgetsTable;
  settle_capability_spends: CapabilitySpendsTable;
  settle_shell_runs: ShellRunsTable;
}

export type EndpointRecordRow = Selectable<EndpointRecordsTable>;
export type EndpointEventRow = Selectable<EndpointEventsTable>;
