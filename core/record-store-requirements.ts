/**
 * What settle requires of the Postgres that holds the endpoint records, as a rule over settings
 * read from the server (activities/store/record-store-settings.ts reads them; worker start and
 * `settle doctor` apply this rule). The endpoint record is what prevents a second execution: a
 * committed claim the database later forgets — lost in a crash, or never shipped to the replica
 * that a failover promotes — lets a retry claim afresh and run the effect again.
 *
 * Each finding is one line naming the setting and its fix. Fail closed: by default a record store
 * that can forget a committed claim refuses the worker's start; the operator may accept a weaker
 * guarantee explicitly with SETTLE_RECORD_DURABILITY (the findings it covers then warn).
 */
import { InputError } from './errors';

export const DURABILITY_VARIABLE = 'SETTLE_RECORD_DURABILITY';

/**
 * What a committed claim must survive:
 *   replicated  a crash, and a failover to a standby (the default)
 *   local       a crash of the primary; a failover to an asynchronous replica may forget it
 *   none        nothing is required (throw-away development databases)
 */
export const DURABILITY_MODES = ['replicated', 'local', 'none'] as const;
export type DurabilityMode = (typeof DURABILITY_MODES)[number];

/** Clock skew above this (beyond the measurement's own uncertainty) is reported. */
export const CLOCK_SKEW_BOUND_MS = 1_000;

/** How connections reach the server: directly or through a session-mode pooler, or sharing server sessions. */
export type PoolingMode = 'session' | 'transaction' | 'statement';

export interface RecordStoreSettings {
  /** pg_is_in_recovery(): a standby, which cannot take a claim. */
  inRecovery: boolean;
  /** As the worker's own role and database see them (role and database settings apply). */
  synchronousCommit: string;
  synchronousStandbyNames: string;
  fsync: string;
  fullPageWrites: string;
  /**
   * Physical streaming replicas attached now (pg_stat_replication, logical senders left out).
   * `syncState` is null when settle's role may not see it (it needs pg_monitor).
   */
  replicas: readonly { name: string | null; syncState: string | null }[];
  /** The database's clock minus the worker's (ms), and the uncertainty of that (half the round trip). */
  clockSkewMs: number;
  clockUncertaintyMs: number;
  pooling: PoolingMode;
}

export type FindingLevel = 'ok' | 'warn' | 'fail';

export type FindingSubject = 'record store' | 'pooler' | 'clock';

export interface Finding {
  level: FindingLevel;
  subject: FindingSubject;
  /** One line: the subject, what was found, and the fix. */
  line: string;
}

/** SETTLE_RECORD_DURABILITY's value; unset or empty means the default, anything else unknown is refused. */
export function parseDurabilityMode(value: string | undefined): DurabilityMode {
  if (value === undefined || value === '') return 'replicated';
  if ((DURABILITY_MODES as readonly string[]).includes(value)) return value as DurabilityMode;
  throw new InputError(DURABILITY_VARIABLE, `be one of ${DURABILITY_MODES.join(', ')} (got ${JSON.stringify(value)})`);
}

/** Which guarantee a finding concerns: the mode that accepts losing it turns its failure into a warning. */
type Concern = 'crash' | 'failover' | 'always';

interface RawFinding {
  level: FindingLevel;
  concern: Concern;
  subject: FindingSubject;
  /** What was found and the fix, without the subject. */
  line: string;
}

const WAITS_FOR_STANDBY = new Set(['on', 'remote_write', 'remote_apply']);

/** The findings for these settings under this mode, in a stable order: server, durability, replication, pooler, clock. */
export function recordStoreFindings(settings: RecordStoreSettings, mode: DurabilityMode): Finding[] {
  const raw = [...serverFindings(settings), ...replicationFindings(settings), poolerFinding(settings.pooling), clockFinding(settings)];
  return raw.map(({ level, concern, subject, line }) => ({
    level: level === 'fail' && accepted(concern, mode) ? 'warn' : level,
    subject,
    line: `${subject}: ${withOptOut(line, level, concern, mode)}`,
  }));
}

/** Whether any finding refuses the start. */
export function refused(findings: readonly Finding[]): boolean {
  return findings.some((f) => f.level === 'fail');
}

function accepted(concern: Concern, mode: DurabilityMode): boolean {
  if (concern === 'always') return false;
  return mode === 'none' || (mode === 'local' && concern === 'failover');
}

function withOptOut(line: string, level: FindingLevel, concern: Concern, mode: DurabilityMode): string {
  if (level !== 'fail' || concern === 'always') return line;
  if (accepted(concern, mode)) return `${line} (accepted: ${DURABILITY_VARIABLE}=${mode})`;
  const optOut = concern === 'failover' ? 'local' : 'none';
  return `${line}, or set ${DURABILITY_VARIABLE}=${optOut} to accept it`;
}

function serverFindings(s: RecordStoreSettings): RawFinding[] {
  const found: RawFinding[] = [];
  if (s.inRecovery) {
    found.push({
      level: 'fail',
      concern: 'always',
      subject: 'record store',
      line: 'DATABASE_URL reaches a standby (pg_is_in_recovery() is true), which cannot record a claim; point DATABASE_URL at the primary',
    });
  }
  if (s.fsync !== 'on') {
    found.push({
      level: 'fail',
      concern: 'crash',
      subject: 'record store',
      line: `fsync = ${s.fsync}: a crash of the database server can lose committed claims and run their effects again; set fsync = on`,
    });
  }
  if (s.synchronousCommit === 'off') {
    found.push({
      level: 'fail',
      concern: 'crash',
      subject: 'record store',
      line:
        'synchronous_commit = off for settle’s role: a crash can lose the last committed claims and run their effects again; ' +
        'set synchronous_commit = on (ALTER ROLE … SET synchronous_commit = on)',
    });
  }
  if (s.fullPageWrites !== 'on') {
    found.push({
      level: 'warn',
      concern: 'crash',
      subject: 'record store',
      line: `full_page_writes = ${s.fullPageWrites}: safe only on a file system that never tears a page (e.g. ZFS); set full_page_writes = on otherwise`,
    });
  }
  return found;
}

function replicationFindings(s: RecordStoreSettings): RawFinding[] {
  const count = s.replicas.length;
  const standbyNames = s.synchronousStandbyNames.trim();
  if (count === 0) {
    if (standbyNames) {
      return [
        {
          level: 'warn',
          concern: 'always',
          subject: 'record store',
          line: `synchronous_standby_names = '${standbyNames}' but no standby is attached: every commit waits until one connects; attach the standby or clear the setting`,
        },
      ];
    }
    return [
      {
        level: 'ok',
        concern: 'always',
        subject: 'record store',
        line:
          'standalone primary (no streaming replica attached): committed claims survive a crash, not a failover; ' +
          'a replica added for failover must be synchronous (synchronous_standby_names)',
      },
    ];
  }
  const replicas = `${count} streaming replica${count === 1 ? '' : 's'} (${describeReplicas(s.replicas)})`;
  if (!standbyNames) {
    return [
      {
        level: 'fail',
        concern: 'failover',
        subject: 'record store',
        line:
          `${replicas} attached asynchronously (synchronous_standby_names is empty): a failover to one can forget committed claims ` +
          `and run their effects again; set synchronous_standby_names on the primary (e.g. 'ANY 1 (${firstName(s.replicas)})')`,
      },
    ];
  }
  if (!WAITS_FOR_STANDBY.has(s.synchronousCommit)) {
    return [
      {
        level: 'fail',
        concern: 'failover',
        subject: 'record store',
        line:
          `synchronous_commit = ${s.synchronousCommit} for settle’s role: commits do not wait for the synchronous standby, so a failover ` +
          'can forget committed claims; set synchronous_commit = on',
      },
    ];
  }
  const found: RawFinding[] = [];
  const visible = s.replicas.every((r) => r.syncState !== null);
  const synchronous = s.replicas.filter((r) => r.syncState === 'sync' || r.syncState === 'quorum');
  const asynchronous = s.replicas.filter((r) => r.syncState === 'async' || r.syncState === 'potential');
  if (visible && synchronous.length === 0) {
    found.push({
      level: 'warn',
      concern: 'always',
      subject: 'record store',
      line: `synchronous_standby_names = '${standbyNames}' matches none of the ${replicas}: every commit waits until a named standby connects; name an attached replica`,
    });
    return found;
  }
  found.push({
    level: 'ok',
    concern: 'always',
    subject: 'record store',
    line:
      `commits wait for a synchronous standby (synchronous_standby_names = '${standbyNames}', synchronous_commit = ${s.synchronousCommit})` +
      (visible ? '' : '; settle’s role cannot see which replicas are synchronous: grant it pg_monitor for this check to name them'),
  });
  if (asynchronous.length > 0) {
    found.push({
      level: 'warn',
      concern: 'always',
      subject: 'record store',
      line: `${describeReplicas(asynchronous)} not synchronous: a failover to it can forget committed claims; promote only a synchronous standby`,
    });
  }
  return found;
}

function describeReplicas(replicas: RecordStoreSettings['replicas']): string {
  return replicas.map((r) => `${r.name ?? 'unnamed'}: ${r.syncState ?? 'mode not visible'}`).join(', ');
}

function firstName(replicas: RecordStoreSettings['replicas']): string {
  return replicas.find((r) => r.name)?.name ?? 'standby_name';
}

function poolerFinding(pooling: PoolingMode): RawFinding {
  switch (pooling) {
    case 'session':
      return { level: 'ok', concern: 'always', subject: 'pooler', line: 'none, or session mode: each connection keeps its server session' };
    case 'transaction':
      return {
        level: 'ok',
        concern: 'always',
        subject: 'pooler',
        line: 'transaction mode (server sessions are shared): settle uses transaction-scoped locks and unnamed statements through it',
      };
    case 'statement':
      return {
        level: 'fail',
        concern: 'always',
        subject: 'pooler',
        line: 'statement mode refuses the transactions settle’s claims need; set pool_mode = transaction or session for settle’s database',
      };
  }
}

function clockFinding(s: RecordStoreSettings): RawFinding {
  const excess = Math.abs(s.clockSkewMs) - s.clockUncertaintyMs;
  if (excess <= CLOCK_SKEW_BOUND_MS) {
    return {
      level: 'ok',
      concern: 'always',
      subject: 'clock',
      line: `${Math.round(s.clockSkewMs)} ms from the database’s (±${Math.ceil(s.clockUncertaintyMs)} ms), within ${CLOCK_SKEW_BOUND_MS / 1000} s (leases use the database’s clock)`,
    };
  }
  const seconds = (Math.abs(s.clockSkewMs) / 1000).toFixed(1);
  return {
    level: 'warn',
    concern: 'always',
    subject: 'clock',
    line:
      `this host’s clock is ${seconds} s ${s.clockSkewMs > 0 ? 'behind' : 'ahead of'} the database’s: leases use the database’s clock, ` +
      'capability expiry and log times this host’s; synchronise both with NTP',
  };
}
