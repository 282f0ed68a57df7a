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

/**
 * The results of a workflow's activities of one type, in order, whichever lane ran them: a
 * regular activity's completion, or a local activity's marker (its `data` names the type, its
 * `result` holds the value). Failed attempts have none.
 */
export async function activityResults(client: Client, workflowId: string, activityType: string): Promise<unknown[]> {
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const decode = (data: Uint8Array | null | undefined): unknown => JSON.parse(Buffer.from(data!).toString('utf8'));
  const scheduled = new Map<string, string>();
  const results: unknown[] = [];
  for (const e of events) {
    if (e.activityTaskScheduledEventAttributes)
      scheduled.set(String(e.eventId), e.activityTaskScheduledEventAttributes.activityType?.name ?? '');
    const completed = e.activityTaskCompletedEventAttributes;
    if (completed && scheduled.get(String(completed.scheduledEventId)) === activityType)
      results.push(decode(completed.result!.payloads![0]!.data));
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName === 'core_local_activity' && !marker.failure) {
      const data = decode(marker.details!['data']!.payloads![0]!.data) as { activity_type?: string };
      const result = marker.details!['result']?.payloads?.[0];
      if (data.activity_type === activityType && result) results.push(decode(result.data));
    }
  }
  return results;
}

/** The activity types of a workflow's local activities, in the order their markers were recorded. */
export async function localActivityTypes(client: Client, workflowId: string): Promise<string[]> {
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  return events.flatMap((e) => {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') return [];
    const data = JSON.parse(Buffer.from(marker.details!['data']!.payloads![0]!.data!).toString('utf8')) as { activity_type?: string };
    return [data.activity_type ?? ''];
  });
}
