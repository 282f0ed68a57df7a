/** settle dev's metrics ports: SETTLE_METRICS_PORT=BASE gives worker i BASE+i; one that would pass 65535 is refused naming the rule. */
import { describe, expect, it } from 'vitest';
import { workerMetricsPorts } from '../../cli/dev-scrape-targets';

describe('workerMetricsPorts', () => {
  it('gives worker i the port BASE+i, and distinct free ports for 0', async () => {
    expect(await workerMetricsPorts(9464, 3)).toEqual([9464, 9465, 9466]);
    const free = await workerMetricsPorts(0, 3);
    expect(new Set(free).size).toBe(3);
  });

  it('refuses a base that leaves no room for every worker', async () => {
    await expect(workerMetricsPorts(65_535, 2)).rejects.toThrow(
      'SETTLE_METRICS_PORT: must leave room for 2 workers (BASE+1 ≤ 65535; got 65535)',
    );
  });
});
