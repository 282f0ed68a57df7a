/**
 * What `settle status` does (declared in cli/trajectory-commands.ts), apart from the other
 * trajectory commands: it reads over the lean gRPC reader instead of Temporal's client
 * (client/status/grpc-reads.ts), loads no zod schemas and no operator keys, and Postgres only
 * when it shows the endpoint records.
 */
import { reportOutcomeText } from '../core/outcome-label';
import { deadlineExceeded, trajectoryStatusReport, type TrajectoryStatusReport } from '../client/status/report';
import type { EndpointRecord } from '../activities/store/endpoint-store';
import { databaseConfigured, withStatusReads, withStore } from './connections';
import { formatTable } from './table';
import { formatAge, leaseLapsed, standingSince } from '../core/record-age';
import { trajectoryStateLabel } from '../core/trajectory-state-label';
import { UsageError } from './usage-error';
import { printable, printableLines } from './terminal-text';
import { approvalArgsText } from './approval-args';
import { loadTemporalTarget } from '../client/connection';
import { tlsHandshakeProblem } from '../client/tls-probe';

const GRPC_UNAVAILABLE = 14;

export async function trajectoryStatus(id: string, opts: { json: boolean }): Promise<void> {
  await withStatusReads(async (reads) => {
    let unreachable: string | null = null;
    const status = await trajectoryStatusReport(reads, id).catch(async (err: Error) => {
      // UNAVAILABLE over TLS: a handshake of our own names the cause (an untrusted CA, a missing client certificate).
      const tlsProblem =
        (err as { code?: unknown }).code === GRPC_UNAVAILABLE ? await tlsHandshakeProblem(loadTemporalTarget()).catch(() => null) : null;
      if (tlsProblem) throw new UsageError(`TEMPORAL_ADDRESS: Temporal refused the connection: ${tlsProblem}`);
      if ((err as { code?: unknown }).code === GRPC_NOT_FOUND)
        throw new UsageError(`ID: no trajectory ${JSON.stringify(id)} (${err.message})`);
      unreachable = deadlineExceeded(err)
        ? `Temporal did not describe ${JSON.stringify(id)} in time (${err.message})`
        : `Temporal is unreachable (${err.message.split('\n')[0]})`;
      return null;
    });
    if (!status) {
      // Temporal down: the trajectory's own state is unknown, but PostgreSQL still has its records.
      const records = await recordsOf(id);
      if (opts.json) console.log(JSON.stringify({ trajectoryId: id, temporal: unreachable, records: records.rows ?? null }, null, 2));
      else {
        console.log(`${printable(id)}: ${unreachable}: its state is unknown. What its endpoint records say:`);
        printRecords(records);
      }
      process.exitCode = 1;
      return;
    }
    // No worker, or no answer: the records are what is known (the workflow cannot be asked).
    const records = status.unanswered || (!status.workerPolling && status.runStatus !== 'COMPLETED') ? await recordsOf(id) : null;
    if (opts.json) {
      console.log(JSON.stringify({ ...status, ...(records ? { records: records.rows ?? null } : {}) }, null, 2));
    } else {
      printStatus(status, records);
    }
    // A status without the trajectory's own answer is not a success.
    if (status.unanswered) process.exitCode = 1;
  });
}

const GRPC_NOT_FOUND = 5;

/** The endpoint records of a trajectory, or why they cannot be read. */
async function recordsOf(id: string): Promise<{ rows: EndpointRecord[] | null; note: string | null }> {
  if (!databaseConfigured()) return { rows: null, note: 'DATABASE_URL is not set, so the endpoint records cannot be shown either' };
  try {
    return { rows: await withStore((store) => store.list({ trajectoryId: id })), note: null };
  } catch (err) {
    return { rows: null, note: `the endpoint records could not be read (${(err as Error).message})` };
  }
}

function printStatus(status: TrajectoryStatusReport, records: { rows: EndpointRecord[] | null; note: string | null } | null): void {
  console.log(
    // A terminated run keeps the last settle status its workflow wrote: it reads "TERMINATED (ended while running)".
    `${printable(status.trajectoryId)}: ${printable(trajectoryStateLabel(status.runStatus, status.status))} · in doubt ${status.inDoubt} · pending approvals ${status.pendingApprovals}`,
  );
  if (status.summary) console.log(`summary: ${printable(status.summary)}`);
  if (status.subAgents.length) {
    console.log(
      `sub-agents: ${status.subAgents.map((a) => `${printable(a.trajectoryId)} (${printable(trajectoryStateLabel(a.runStatus, a.status))})`).join(', ')}`,
    );
  }
  if (records) {
    console.log(
      status.unanswered
        ? `${status.unanswered}. What its endpoint records say:`
        : `no worker polls task queue ${JSON.stringify(status.taskQueue)}: the trajectory cannot answer queries until one does ` +
            '(start one: npm run worker, or settle dev). What its endpoint records say:',
    );
    printRecords(records);
    return;
  }
  if (status.waitingFor) console.log(`waiting for: ${printableLines(status.waitingFor)}`);
  console.log(
    formatTable(
      ['turn', 'call', 'tool', 'level', 'key', 'state', 'resolution', 'outcome', 'attempts', 'probes'],
      status.calls.map((c) => [
        String(c.turn),
        c.callId,
        c.tool,
        String(c.level ?? '-'),
        c.key?.slice(0, 16) ?? '-',
        c.state,
        c.resolution,
        reportOutcomeText(c),
        String(c.attempts),
        String(c.probes ?? 0),
      ]),
    ),
  );
  printApprovals(status);
}

/** What each waiting approval would let run, in full: the table's columns have no room for it. */
function printApprovals(status: TrajectoryStatusReport): void {
  if (status.approvals === null) {
    console.log(
      'waiting for approval: the trajectory did not report the calls’ whole arguments (no answer, or a worker from before the pendingApprovals query); read them in its history before approving',
    );
    return;
  }
  for (const a of status.approvals) {
    console.log(
      `waiting for approval: ${a.key.slice(0, 16)} turn ${a.turn} call ${printable(a.callId)} ${printable(a.tool)} ${approvalArgsText(a.args)}`,
    );
  }
}

/** A trajectory's endpoint records, aged from when each one's effect became unknown; or why they cannot be shown. */
function printRecords(records: { rows: EndpointRecord[] | null; note: string | null }): void {
  if (records.note) console.log(records.note);
  else if (!records.rows!.length) console.log('no endpoint records (no settled call has been claimed yet)');
  else {
    const now = Date.now();
    console.log(
      formatTable(
        ['turn', 'call', 'tool', 'key', 'state', 'gen', 'age', 'since'],
        records.rows!.map((r) => [
          String(r.turn),
          r.callId,
          r.tool,
          r.key.slice(0, 16),
          leaseLapsed(r, now) ? 'IN_FLIGHT (lease lapsed)' : r.state,
          String(r.generation),
          // From when its effect became unknown (a lapsed lease's expiry), not from a sweep's write.
          formatAge(now - standingSince(r, now).getTime()),
          standingSince(r, now).toISOString(),
        ]),
      ),
    );
  }
}
