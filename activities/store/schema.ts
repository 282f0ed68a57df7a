/** Kysely table types for the endpoint store (mirrors migrations/0001). */
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

export interface SettleDatabase {
  settle_endpoint_records: EndpointRecordsTable;
  settle_endpoint_events: EndpointEventsTable;
}

export type EndpointRecordRow = Selectable<EndpointRecordsTable>;
export type EndpointEventRow = Selectable<EndpointEventsTable>;
