/**
 * `settle doctor`: the checks a worker makes at start, and what a worker needs of Temporal, run
 * from the operator's environment. One line per answer with its fix; exit 1 when any fails.
 */
import { databaseLines } from './database';
import { formatDoctorLine } from './lines';
import { temporalLines } from './temporal';

export async function runDoctor(print: (line: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const lines = [...(await databaseLines(env)), ...(await temporalLines(env))];
  for (const line of lines) print(formatDoctorLine(line));
  return lines.some((l) => l.level === 'fail') ? 1 : 0;
}
