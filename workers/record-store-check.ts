/**
 * The record-store check at worker start (core/record-store-requirements.ts is the rule): one
 * warning line per finding that is not fine, with its fix; a refusal throws (its message is the
 * failed finding, with its fix) before the worker polls, so no
 * claim is ever recorded where a crash or a failover could forget it (unless the operator
 * accepted that with SETTLE_RECORD_DURABILITY).
 */
import { readRecordStoreSettings } from '../activities/store/record-store-settings';
import {
  DURABILITY_VARIABLE,
  parseDurabilityMode,
  recordStoreFindings,
  refused,
  type PoolingMode,
} from '../core/record-store-requirements';

export class RecordStoreRefused extends Error {
  override readonly name = 'RecordStoreRefused';
}

/**
 * Checks DATABASE_URL's server against settle's requirements, writing its warnings to `warn`;
 * returns how connections reach it (the caller stops naming statements behind a sharing pooler).
 * An invalid SETTLE_RECORD_DURABILITY is refused before any connection is made.
 */
export async function checkRecordStoreAtStart(
  databaseUrl: string,
  warn: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
  /** Where the clock line goes when it is fine (leases depend on it, so every start says it). */
  info: (line: string) => void = () => {},
): Promise<PoolingMode> {
  const mode = parseDurabilityMode(env[DURABILITY_VARIABLE]);
  const settings = await readRecordStoreSettings(databaseUrl);
  const findings = recordStoreFindings(settings, mode);
  for (const finding of findings) {
    if (finding.level === 'warn') warn(`settle worker: WARNING: ${finding.line}`);
    else if (finding.level === 'ok' && finding.subject === 'pooler' && settings.pooling !== 'session')
      warn(`settle worker: ${finding.line}`);
    else if (finding.level === 'ok' && finding.subject === 'clock') info(finding.line);
  }
  // The refusal is the error itself (one line; several failures, rare, joined): the caller prints it.
  const failures = findings.filter((f) => f.level === 'fail').map((f) => f.line);
  if (refused(findings)) throw new RecordStoreRefused(`refused to start: ${failures.join('; and ')}`);
  return settings.pooling;
}
