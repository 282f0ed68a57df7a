/** The history budget's pure fitting rules: deterministic, bounded, and never emptier than needed. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { fitConversation, fitObservation, fitObservations, fitReports } from '../../core/history-budget';
import { boundModelReply } from '../../core/model/chat';
import { ok, failed, type Observation } from '../../core/observation';
import { MAX_ARGS_CHARS, MAX_CALLS_PER_TURN } from '../../core/trajectory-input';

const chars = (o: Observation | null) => (o ? o.output.length + (o.error?.length ?? 0) : 0);

describe('history budget', () => {
  it('fits observations to a shared budget: small ones whole, large ones cut to a fair share', () => {
    const items = [ok('a'.repeat(10)), ok('b'.repeat(100_000)), null, failed('e'.repeat(50)), ok('c'.repeat(300_000))];
    const fitted = fitObservations(items, 100_000);
    expect(fitted[0]).toBe(items[0]);
    expect(fitted[2]).toBeNull();
    expect(fitted[3]).toBe(items[3]);
    expect(fitted.reduce((n, o) => n + chars(o), 0)).toBeLessThanOrEqual(100_000);
    expect(chars(fitted[1]!)).toBeGreaterThan(45_000);
    expect(fitted[4]!.truncated && fitted[4]!.output.endsWith('[… truncated by settle …]')).toBe(true);
    expect(fitObservations(items, 10_000_000)).toBe(items);
  });

  it('never exceeds the budget for any observations (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.option(fc.record({ o: fc.nat(50_000), e: fc.option(fc.nat(5_000)) }))),
        fc.integer({ min: 10_000, max: 200_000 }),
        (specs, budget) => {
          const items = specs.map((s) =>
            s ? { output: 'x'.repeat(s.o), error: s.e === null ? null : 'y'.repeat(s.e), exit_status: 0, truncated: false } : null,
          );
          const fitted = fitObservations(items, budget);
          expect(fitted).toHaveLength(items.length);
          // Each cut observation keeps a floor of 64 characters plus the marker and a short error head.
          const slack = items.filter(Boolean).length * 600;
          expect(fitted.reduce((n, o) => n + chars(o), 0)).toBeLessThanOrEqual(budget + slack);
        },
      ),
      { numRuns: 50 },
    );
  });

  it('keeps an error ahead of output when cutting one observation', () => {
    const o = fitObservation({ output: 'o'.repeat(10_000), error: 'the reason', exit_status: 2, truncated: false }, 1000);
    expect(o.error).toBe('the reason');
    expect(chars(o)).toBeLessThanOrEqual(1000);
    expect(o.exit_status).toBe(2);
  });

  it('fits reports: oldest observations are cut first, then the oldest reports dropped and counted', () => {
    const reports = Array.from({ length: 20 }, (_, i) => ({ n: i, observation: ok('r'.repeat(10_000)) }));
    const { reports: cut, dropped } = fitReports(reports, 100_000);
    expect(dropped).toBe(0);
    expect(JSON.stringify(cut).length).toBeLessThanOrEqual(100_000);
    expect(cut.at(-1)!.observation.output.length).toBe(10_000); // the newest kept whole
    expect(cut[0]!.observation.output.length).toBeLessThan(300);
    expect(reports[0]!.observation.output.length).toBe(10_000); // copies, not mutations
    const many = Array.from({ length: 2000 }, (_, i) => ({ n: i, observation: null }));
    const tight = fitReports(many, 5_000);
    expect(tight.dropped).toBeGreaterThan(0);
    expect(tight.reports.at(-1)!.n).toBe(1999);
    expect(JSON.stringify(tight.reports).length).toBeLessThanOrEqual(5_000);
  });

  it('fits a conversation by eliding the oldest tool messages, keeping the task and the newest', () => {
    const messages = [
      { role: 'user', content: 'the task' },
      { role: 'tool', content: 'old'.repeat(100_000) },
      { role: 'assistant', content: null },
      { role: 'tool', content: 'new'.repeat(1000) },
    ];
    const fitted = fitConversation(messages, 50_000);
    expect(JSON.stringify(fitted).length).toBeLessThanOrEqual(50_000);
    expect(fitted[0]!.content).toBe('the task');
    expect(fitted[1]!.content).toMatch(/^\[300000 characters elided: cut by settle/);
    expect(fitted[3]!.content).toBe('new'.repeat(1000));
  });

  it('bounds a model reply: oversized arguments refused by index, extra calls dropped, long text cut', () => {
    const call = (i: number, args: string) => ({
      id: `c${i}`,
      type: 'function' as const,
      function: { name: 'file_view', arguments: args },
    });
    const reply = boundModelReply({
      kind: 'tool_calls',
      content: 't'.repeat(200_000),
      totalTokens: 1,
      calls: [call(0, '{}'), call(1, 'x'.repeat(MAX_ARGS_CHARS + 1)), ...Array.from({ length: 100 }, (_, i) => call(i + 2, '{}'))],
    });
    if (reply.kind !== 'tool_calls') throw new Error('kind changed');
    expect(reply.calls).toHaveLength(MAX_CALLS_PER_TURN);
    expect(reply.calls[1]!.function.arguments).toBe('{}');
    expect(reply.refused).toEqual({ 1: `args must be at most ${MAX_ARGS_CHARS} characters of JSON (got ${MAX_ARGS_CHARS + 1})` });
    expect(reply.content!.length).toBeLessThanOrEqual(64 * 1024);
  });
});
