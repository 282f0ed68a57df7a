/** One answer of `settle doctor`: a level and one line saying what was found and the fix. */
import type { FindingLevel } from '../../core/record-store-requirements';

export interface DoctorLine {
  level: FindingLevel;
  line: string;
}

const MARK: Record<FindingLevel, string> = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' };

export function formatDoctorLine({ level, line }: DoctorLine): string {
  return `${MARK[level]} ${line}`;
}
