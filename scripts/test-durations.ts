/**
 * Per-file durations from a vitest JSON report, each file marked fast (`npm test`) or slow
 * (`SLOW_TESTS` in vitest.config.ts, only in `npm run test:all`), slowest first, with each
 * group's total: the numbers behind the split.
 *
 * A file's time is from the previous file's end to its own: the suite runs one file at a time (one
 * fork on two cores), and the report's own startTime is its first test's, after its imports and
 * beforeAll hooks (packing settle, starting workers), which are often most of a scenario's time.
 *
 *   npx vitest run --config vitest.all.config.ts --reporter=default --reporter=json --outputFile=.settle/durations.json
 *   node --import tsx scripts/test-durations.ts .settle/durations.json
 */
import fs from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';
import { SLOW_TESTS } from '../vitest.config';

interface Report {
  startTime: number;
  testResults: { name: string; endTime: number; status: string }[];
}

const file = process.argv[2];
if (!file) {
  console.error('usage: scripts/test-durations.ts <vitest JSON report>');
  process.exit(2);
}
const report = JSON.parse(fs.readFileSync(file, 'utf8')) as Report;
const isSlow = picomatch(SLOW_TESTS);
let previousEnd = report.startTime;
const rows = [...report.testResults]
  .sort((a, b) => a.endTime - b.endTime)
  .map((r) => {
    const name = path.relative(process.cwd(), r.name);
    const seconds = (r.endTime - previousEnd) / 1000;
    previousEnd = r.endTime;
    return { name, seconds, group: isSlow(name) ? 'slow' : 'fast', status: r.status };
  })
  .sort((a, b) => b.seconds - a.seconds);

for (const r of rows)
  console.log(`${r.seconds.toFixed(1).padStart(7)} s  ${r.group}  ${r.name}${r.status === 'passed' ? '' : `  (${r.status})`}`);
for (const group of ['fast', 'slow']) {
  const of = rows.filter((r) => r.group === group);
  const total = of.reduce((sum, r) => sum + r.seconds, 0);
  console.log(`${group}: ${of.length} files, ${total.toFixed(0)} s`);
}
