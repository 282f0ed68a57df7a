/** What a trajectory's history holds, for assertions on its overhead (markers, search-attribute upserts). */
import type { Client } from '@temporalio/client';
// CommonJS package: its namespace comes through the default export under ESM.
import proto from '@temporalio/proto';

const { temporal } = proto;

export interface HistoryCounts {
  events: number;
  /** Events by type, without the EVENT_TYPE_ prefix. */
  byType: Record<string, number>;
  /** Marker names, in order. */
  markers: string[];
  /** Patch ids recorded (core_patch markers), in order. */
  patches: string[];
  /** The fields each search-attribute upsert set, sorted, in order. */
  upserts: string[][];
  /** The search attributes the start event carried (names). */
  startAttributes: string[];
}

export async function historyOf(client: Client, workflowId: string, runId?: string): Promise<HistoryCounts> {
  const events = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
  const byType: Record<string, number> = {};
  for (const e of events) {
    const type = (temporal.api.enums.v1.EventType[e.eventType ?? 0] ?? String(e.eventType)).replace(/^EVENT_TYPE_/, '');
    byType[type] = (byType[type] ?? 0) + 1;
  }
  const markers = events.flatMap((e) => (e.markerRecordedEventAttributes ? [e.markerRecordedEventAttributes] : []));
  const patches = markers
    .filter((m) => m.markerName === 'core_patch')
    .map((m) => (JSON.parse(Buffer.from(m.details!['patch-data']!.payloads![0]!.data!).toString('utf8')) as { id: string }).id);
  const upserts = events
    .filter((e) => e.upsertWorkflowSearchAttributesEventAttributes)
    .map((e) => Object.keys(e.upsertWorkflowSearchAttributesEventAttributes!.searchAttributes!.indexedFields!).sort());
  const started = events[0]?.workflowExecutionStartedEventAttributes?.searchAttributes?.indexedFields ?? {};
  return {
    events: events.length,
    byType,
    markers: markers.map((m) => m.markerName ?? ''),
    patches,
    upserts,
    startAttributes: Object.keys(started).sort(),
  };
}
