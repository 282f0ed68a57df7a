/** What `settle records` and `settle show` do (declared in cli/main.ts): read endpoint records from Postgres. */
import type { RecordState } from '../core/records';
import { withStore } from './connections';
import { fullKey, keyArgument } from './key-prefix';
import { UsageError } from './usage-error';
import { printable, printableValue } from './terminal-text';
import { formatTable } from './table';
import { formatAge, leaseLapsed, standingSince } from '../core/record-age';

export async function listRecords(opts: { state?: RecordState; trajectory?: string; limit: number; json: boolean }): Promise<void> {
  await withStore(async (store) => {
    const records = await store.list({
      ...(opts.state ? { state: opts.state } : {}),
      ...(opts.trajectory ? { trajectoryId: opts.trajectory } : {}),
      limit: opts.limit,
      order: 'oldest',
    });
    if (opts.json) {
      console.log(JSON.stringify(records, null, 2));
      return;
    }
    if (records.length === 0) {
      console.log('no records');
      return;
    }
    // Oldest first: what has waited longest for a person is on top, aged from when its effect became unknown.
    const now = Date.now();
    console.log(
      formatTable(
        ['key', 'state', 'gen', 'age', 'trajectory / turn / call', 'tool', 'since'],
        records.map((r) => [
          r.key.slice(0, 16),
          leaseLapsed(r, now) ? 'IN_FLIGHT (lease lapsed)' : r.state,
          String(r.generation),
          formatAge(now - standingSince(r, now).getTime()),
          `${r.trajectoryId} / ${r.turn} / ${r.callId}`,
          r.tool,
          standingSince(r, now).toISOString(),
        ]),
      ),
    );
  });
}

export async function showRecord(keyArg: string, opts: { json: boolean }): Promise<void> {
  keyArgument(keyArg);
  await withStore(async (store) => {
    const key = await fullKey(store, keyArg);
    const record = await store.get(key);
    if (!record) throw new UsageError(`KEY argument ${key}: must name an endpoint record; none has this key`);
    const events = await store.events(key);
    if (opts.json) {
      console.log(JSON.stringify({ record, events }, null, 2));
      return;
    }
    const { args, intent, result, ...rest } = record;
    for (const [k, v] of Object.entries(rest)) console.log(`${k.padEnd(13)} ${printableValue(v)}`);
    console.log(`${'args'.padEnd(13)} ${printable(JSON.stringify(args))}`);
    console.log(`${'intent'.padEnd(13)} ${printable(JSON.stringify(intent))}`);
    console.log(`${'result'.padEnd(13)} ${printable(JSON.stringify(result))}`);
    console.log('\nevents:');
    for (const e of events) {
      console.log(
        `  ${e.at.toISOString()}  gen ${e.generation}  ${e.fromState} → ${e.toState}  by ${printable(e.actor)}  ${printable(JSON.stringify(e.detail))}`,
      );
    }
  });
}
