/**
 * Operator verdicts and approvals need operator authority an orchestrator does not hold (issue 27,
 * critical 3; docs/security.md#operator-authority). A raw Temporal client — what every
 * orchestrator holds — cannot settle an IN_DOUBT call or approve an A3 call under any name; the
 * operator's own key (`settle resolve`, `settle approve`) can, and the audit trail names the
 * operator that key proves. Real worker processes, real Temporal, real Postgres, real sandbox.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { SettleClient } from '../../client/index';
import { SA_TRAJECTORY_STATUS } from '../../workflows/search-attributes';
import type { TrajectoryResult } from '../../workflows/definitions';
import { mintCredential } from '../../activities/operator/operator-credentials';
import { callDigest } from '../../core/operator-credential';
import { runSettle } from '../support/cli';
import { historyOf } from '../support/history';
import { openTestDb, startTestWorker, tempWorkspace, testStore, uniqueId, type RunningWorker } from '../support/env';
import { inDoubtShellCall, until } from '../support/in-doubt';
import { approval, onCall, signed, stranger, TEST_OPERATOR } from '../support/operator';

const db = openTestDb(2);
const store = testStore(db);
const cliEnv = { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: inject('databaseUrl') };
let connection: Connection;
let client: Client;
let worker: RunningWorker;
let keyless: RunningWorker;

beforeAll(async () => {
  connection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection });
  [worker, keyless] = await Promise.all([startTestWorker(), startTestWorker({ operatorKeys: null })]);
});
afterAll(async () => {
  await Promise.all([worker?.stop(), keyless?.stop()]);
  await connection?.close();
  await db.destroy();
});

/** A failure's message with every cause's (update failed ← activity failed ← the refusal). */
function causes(err: unknown): string {
  const parts: string[] = [];
  for (let e = err as Error | undefined; e; e = e.cause as Error | undefined) parts.push(e.message);
  return parts.join(' ← ');
}

async function refusal(p: Promise<unknown>): Promise<string> {
  return p.then(
    (value) => {
      throw new Error(`expected a refusal, got ${JSON.stringify(value)}`);
    },
    (err: unknown) => causes(err),
  );
}

const readLog = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');

describe('a verdict on an IN_DOUBT shell call', { timeout: 240_000 }, () => {
  it('from a raw Temporal client is refused (the record stays IN_DOUBT, nothing runs again); from the operator’s key it settles, naming that operator', async () => {
    const call = await inDoubtShellCall(client, store);
    try {
      const { handle, key, trajectoryId } = call;
      const log = path.join(call.workspace, 'deploy.log');
      const before = readLog(log);

      // What an orchestrator can send: any name, no credential.
      const raw = await refusal(
        handle.executeUpdate('settleCall', {
          args: [{ key, verdict: 'not_applied', operator: 'alice (on-call SRE)', reason: 'trust me', generation: 1 }],
        }),
      );
      expect(raw).toMatch(/credential must be an operator credential/);

      // A credential signed with a key the orchestrator made itself.
      const forged = mintCredential(stranger('alice').signer, {
        purpose: 'settle',
        namespace: 'default',
        trajectoryId,
        key,
        generation: 1,
        verdict: 'not_applied',
        reason: 'trust me',
      });
      expect(await refusal(new SettleClient(client, call.taskQueue).settle(trajectoryId, forged))).toMatch(
        /credential must be signed by an operator this worker knows \("alice" is not in SETTLE_OPERATOR_KEYS\)/,
      );

      // The operator's own credentials, but not for this verdict: another generation, another call, expired.
      const claim = {
        purpose: 'settle',
        namespace: 'default',
        trajectoryId,
        key,
        generation: 1,
        verdict: 'not_applied',
        reason: 'checked',
      } as const;
      const own = new SettleClient(client, call.taskQueue);
      const update = (credential: unknown) =>
        handle.executeUpdate('settleCall', {
          args: [{ key, verdict: 'not_applied', operator: TEST_OPERATOR, reason: 'checked', generation: 1, credential }],
        });
      expect(await refusal(update(signed({ ...claim, generation: 2 })))).toMatch(/credential must be for this generation/);
      expect(await refusal(update(signed({ ...claim, verdict: 'applied' })))).toMatch(/credential must be for this verdict/);
      // A credential for a generation not in doubt settles nothing (the write is fenced by it).
      expect(await own.settle(trajectoryId, signed({ ...claim, generation: 2 }))).toEqual({ state: 'IN_DOUBT' });
      expect(await refusal(own.settle(trajectoryId, signed({ ...claim, key: 'f'.repeat(64) })))).toMatch(/key must name a call/);
      expect(await refusal(own.settle(trajectoryId, signed(claim, Date.now() - 20 * 60_000)))).toMatch(/credential must be unexpired/);
      // A valid credential whose body was changed after signing.
      const altered = signed({ ...claim, verdict: 'applied' });
      altered.body = { ...(altered.body as typeof altered.body & { purpose: 'settle' }), verdict: 'not_applied' };
      expect(await refusal(own.settle(trajectoryId, altered))).toMatch(/credential must carry oncall's signature/);

      // Nothing changed: still IN_DOUBT at generation 1, still waiting, nothing ran again.
      await new Promise((r) => setTimeout(r, 1_500));
      expect(await store.get(key)).toMatchObject({ state: 'IN_DOUBT', generation: 1 });
      expect((await handle.describe()).typedSearchAttributes.get(SA_TRAJECTORY_STATUS)).toBe('waiting_operator');
      expect(readLog(log)).toBe(before);

      // The operator's key: `settle resolve` mints the credential; a name other than the key's is refused.
      const renamed = await runSettle(['resolve', key, '--as', 'applied', '--operator', 'alice', '--reason', 'deploy.log'], {
        env: cliEnv,
      });
      expect(renamed.code).toBe(2);
      expect(renamed.stderr).toContain(`--operator: must be the operator your key names (${TEST_OPERATOR})`);
      const resolved = await runSettle(['resolve', key, '--generation', '1', '--as', 'applied', '--reason', 'deploy.log has the line'], {
        env: cliEnv,
      });
      expect(resolved.stderr).toBe('');
      expect(resolved.stdout).toContain(`(settled by operator:${TEST_OPERATOR}) via the settleCall update`);
      const result = (await handle.result()) as TrajectoryResult;
      expect(result.calls[0]).toMatchObject({ state: 'COMPLETED', resolution: 'settled_by_operator' });
      expect(await store.get(key)).toMatchObject({ state: 'COMPLETED', settledBy: `operator:${TEST_OPERATOR}` });
      expect((await store.events(key)).at(-1)).toMatchObject({ toState: 'COMPLETED', actor: `operator:${TEST_OPERATOR}` });
      expect(readLog(log)).toBe(before);
    } finally {
      await call.worker.kill();
    }
  });

  it('settled directly on the record (no trajectory waits) needs the credential too', async () => {
    const call = await inDoubtShellCall(client, store);
    try {
      const { handle, key, trajectoryId } = call;
      await handle.terminate('the orchestrator went away');
      const { settleByOperator } = await import('../../activities/settled/operator-settlement');
      const request = { key, verdict: 'not_applied', reason: 'checked', generation: 1 } as const;
      const { keys } = onCall();
      await expect(settleByOperator(store, request, { keys, namespace: 'default' })).rejects.toThrow(
        /credential must be an operator credential/,
      );
      const forged = mintCredential(stranger(TEST_OPERATOR).signer, { purpose: 'settle', namespace: 'default', trajectoryId, ...request });
      await expect(settleByOperator(store, { ...request, credential: forged }, { keys, namespace: 'default' })).rejects.toThrow(
        /credential must carry oncall's signature/,
      );
      expect(await store.get(key)).toMatchObject({ state: 'IN_DOUBT', generation: 1 });

      const cli = await runSettle(['resolve', key, '--as', 'not-applied', '--reason', 'no line in deploy.log'], { env: cliEnv });
      expect(cli.stderr).toBe('');
      expect(cli.stdout).toMatch(new RegExp(`NOT_EXECUTED \\(settled by operator:${TEST_OPERATOR}\\) directly on the record`));
      expect(await store.get(key)).toMatchObject({ state: 'NOT_EXECUTED', settledBy: `operator:${TEST_OPERATOR}` });
    } finally {
      await call.worker.kill();
    }
  });
});

describe('an approval of an A3 call', { timeout: 120_000 }, () => {
  async function waitingA3(on: RunningWorker) {
    const client = new SettleClient(on.client, on.taskQueue);
    const ws = tempWorkspace('a3-authority');
    const id = uniqueId('a3-authority');
    await client.start(id, { workspace: ws, levelOverrides: { bash_execute: 'A3' } });
    const turn = client.runTurn(id, 0, [{ call_id: 'rm', tool: 'bash_execute', args: { command: 'echo ran > ran.txt' } }]);
    turn.catch(() => {}); // awaited by the test that lets it finish
    const pending = await until(async () => {
      const s = await client.status(id);
      return s.status === 'waiting_approval' ? s : null;
    }, 'waiting_approval');
    return { client, id, ws, key: pending.calls[0]!.key!, turn };
  }

  it('from a raw Temporal client is refused under any name; `settle approve` with the operator’s key runs it, naming that operator', async () => {
    const { client: own, id, ws, key, turn } = await waitingA3(worker);
    const handle = client.workflow.getHandle(id);
    const raw = await refusal(
      handle.executeUpdate('approveCall', { args: [{ key, approver: 'alice (change manager)', decision: 'approve', reason: 'CHG-1' }] }),
    );
    expect(raw).toMatch(/credential must be an operator credential/);
    const claim = await own.approvalClaim({ trajectoryId: id, key, decision: 'approve', reason: 'CHG-1' });
    const forged = mintCredential(stranger('alice').signer, claim);
    expect(await refusal(own.approve(id, forged))).toMatch(/"alice" is not in SETTLE_OPERATOR_KEYS/);
    // The operator's credentials for something else: a denial sent as an approval, another
    // trajectory, another namespace, another call than the one waiting, expired.
    const denial = await approval(own, id, key, 'deny', 'CHG-1');
    expect(
      await refusal(
        handle.executeUpdate('approveCall', {
          args: [{ key, approver: TEST_OPERATOR, decision: 'approve', reason: 'CHG-1', credential: denial }],
        }),
      ),
    ).toMatch(/credential must be for this decision/);
    expect(
      await refusal(own.approve(id, await approval(own, id, key, 'approve', 'CHG-1', { trajectoryId: 'another-trajectory' }))),
    ).toMatch(/credential must be for this trajectoryId/);
    expect(await refusal(own.approve(id, await approval(own, id, key, 'approve', 'CHG-1', { namespace: 'staging' })))).toMatch(
      /credential must be for this namespace/,
    );
    expect(await refusal(own.approve(id, await approval(own, id, key, 'approve', 'CHG-1', { tool: 'file_view' })))).toMatch(
      /credential must be for this tool/,
    );
    expect(
      await refusal(
        own.approve(id, await approval(own, id, key, 'approve', 'CHG-1', { call: callDigest('bash_execute', { command: 'true' }) })),
      ),
    ).toMatch(/credential must be for this call/);
    const expired = signed(claim, Date.now() - 20 * 60_000);
    expect(await refusal(own.approve(id, expired))).toMatch(/credential must be unexpired/);
    const verdict = signed({
      purpose: 'settle',
      namespace: 'default',
      trajectoryId: id,
      key,
      generation: 1,
      verdict: 'applied',
      reason: 'CHG-1',
    });
    expect(
      await refusal(
        handle.executeUpdate('approveCall', {
          args: [{ key, approver: TEST_OPERATOR, decision: 'approve', reason: 'CHG-1', credential: verdict }],
        }),
      ),
    ).toMatch(/credential must be for an approval/);

    expect((await own.status(id)).status).toBe('waiting_approval');
    expect(fs.existsSync(path.join(ws, 'ran.txt'))).toBe(false);

    const approved = await runSettle(['approve', id, key, '--reason', 'CHG-1'], { env: cliEnv });
    expect(approved.stderr).toBe('');
    expect(approved.stdout).toContain(`approved ${key.slice(0, 16)}… in ${id} by ${TEST_OPERATOR}`);
    expect((await turn).calls[0]).toMatchObject({ resolution: 'executed', approval: { approver: TEST_OPERATOR, decision: 'approve' } });
    expect((await store.events(key))[0]!.detail).toMatchObject({ approval: { approver: TEST_OPERATOR, reason: 'CHG-1' } });
    expect(fs.readFileSync(path.join(ws, 'ran.txt'), 'utf8')).toBe('ran\n');
    await own.finish(id, 'completed', 'done');
    await handle.result();
    // The verified approval is a patch (its marker) and a local activity; the history replays.
    expect((await historyOf(client, id)).patches).toContain('operator-authority-v1');
    const history = await handle.fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, id);
  });

  it('a worker without operator keys refuses every approval, even a valid one (fail closed)', async () => {
    const { client: own, id, ws, key } = await waitingA3(keyless);
    expect(await refusal(own.approve(id, await approval(own, id, key, 'approve', 'CHG-2')))).toMatch(
      /credential must be verifiable: this worker holds no operator keys \(SETTLE_OPERATOR_KEYS is unset\)/,
    );
    expect((await own.status(id)).status).toBe('waiting_approval');
    expect(fs.existsSync(path.join(ws, 'ran.txt'))).toBe(false);
    await client.workflow.getHandle(id).terminate('test done');
  });
});
