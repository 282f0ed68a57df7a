/**
 * `settle resolve --as partial` on a record no trajectory waits for: written directly, COMPLETED
 * by the operator whose key signs, with an observation marked partial (never run again); an
 * unknown verdict is refused naming the three. Real Postgres, the real CLI.
 */
import { afterAll, describe, expect, inject, it } from 'vitest';
import { deriveKey } from '../../core/key';
import { runSettleAsync } from '../support/cli';
import { openTestDb, testStore, uniqueId } from '../support/env';
import { TEST_OPERATOR } from '../support/operator';

const db = openTestDb();
const store = testStore(db);
const cliEnv = { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: inject('databaseUrl') };
afterAll(() => db.destroy());

describe('settle resolve --as partial', () => {
  it('settles an IN_DOUBT record as COMPLETED with a partial observation, signed by the key’s operator', async () => {
    const trajectoryId = uniqueId('partial');
    const args = { command: 'echo a >> log; echo b >> log' };
    const key = deriveKey({ trajectoryId, turn: 0, callId: 'c1', tool: 'bash_execute', args });
    await store.claim({ key, trajectoryId, turn: 0, callId: 'c1', tool: 'bash_execute', args }, { leaseMs: 30_000, holder: 'A' });
    await store.markInDoubt(key, 1, 'exception', 'worker:A');

    const refused = await runSettleAsync(['resolve', key, '--as', 'half', '--reason', 'x'], { env: cliEnv });
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim()).toBe('settle: --as: must be applied, not-applied or partial (got "half")');

    const r = await runSettleAsync(['resolve', key, '--generation', '1', '--as', 'partial', '--reason', 'log has a, not b'], {
      env: cliEnv,
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`COMPLETED (settled by operator:${TEST_OPERATOR}) directly on the record`);
    const record = (await store.get(key))!;
    expect(record).toMatchObject({
      state: 'COMPLETED',
      generation: 1,
      settledBy: `operator:${TEST_OPERATOR}`,
      settleReason: 'log has a, not b',
    });
    expect(record.result).toEqual({
      output: '',
      error: `partial: the effect happened in part, not in full (settled by operator ${TEST_OPERATOR}: log has a, not b); it will not be run again, check what is left before acting on it`,
      exit_status: 1,
      truncated: false,
      partial: true,
    });
    expect((await store.events(key)).at(-1)).toMatchObject({ toState: 'COMPLETED', actor: `operator:${TEST_OPERATOR}` });

    // A second verdict names the argument and the rule it broke, never a bare placeholder.
    const again = await runSettleAsync(['resolve', key, '--as', 'applied', '--reason', 'again'], { env: cliEnv });
    expect(again.code).toBe(2);
    expect(again.stderr).toBe(`settle: KEY argument ${key}: must name an IN_DOUBT record; this one is COMPLETED, nothing to settle\n`);
  });
});
