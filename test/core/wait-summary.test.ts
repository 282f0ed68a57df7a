/** The metrics read back what waits and since when from the summary line waitDetails writes. */
import { describe, expect, it } from 'vitest';
import { parseWaitSummary, waitDetails } from '../../core/operator-details';

const base = {
  tool: 'bash_execute',
  target: 'echo `a` · b',
  key: 'ab'.repeat(32),
  explanation: 'why',
  commands: ['npx settle resolve KEY'],
};

describe('parseWaitSummary', () => {
  it('reads the headline and the start (to the second) of what waitDetails wrote', () => {
    const sinceMs = Date.parse('2026-12-05T03:04:05.678Z');
    expect(parseWaitSummary(waitDetails({ ...base, headline: 'waiting for an operator', sinceMs, deadline: null }))).toEqual({
      headline: 'waiting for an operator',
      sinceMs: Date.parse('2026-12-05T03:04:05Z'),
    });
    const withDeadline = waitDetails({
      ...base,
      headline: 'waiting for approval',
      sinceMs,
      deadline: { atMs: sinceMs + 3_600_000, then: 'denied' },
    });
    expect(parseWaitSummary(withDeadline)).toEqual({ headline: 'waiting for approval', sinceMs: Date.parse('2026-12-05T03:04:05Z') });
  });

  it('reads the first line of a workflow from before the short first line', () => {
    const old =
      '**waiting for an operator** · `bash_execute` `echo a` · key `abababababababab` · since 2026-12-05 03:04:05 UTC · no deadline';
    expect(parseWaitSummary(old)).toEqual({ headline: 'waiting for an operator', sinceMs: Date.parse('2026-12-05T03:04:05Z') });
  });

  it('answers null for any other text', () => {
    expect(parseWaitSummary('turn 0: file_edit running')).toBeNull();
    expect(parseWaitSummary('')).toBeNull();
  });
});
