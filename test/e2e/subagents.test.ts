/**
 * Trajectories holding capabilities, and sub-agents as child workflows with attenuated ones.
 * Real Temporal, real Postgres, a worker holding the key ring.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SettleClient } from '../../client/index';
import { sign } from '../../activities/capability/signer';
import { BudgetStore } from '../../activities/capability/budget-store';
import type { KeyRing } from '../../activities/capability/keyring';
import { tokenDigest, type CapabilityToken } from '../../core/capability/token';
import { openTestDb, startTestWorker, tempWorkspace, testKeyRing, uniqueId, type RunningWorker } from '../support/env';
import { SA_PARENT_TRAJECTORY } from '../../workflows/search-attributes';
import { historyOf } from '../support/history';
import { startChatServer } from '../support/chat-server';

let worker: RunningWorker;
let keyless: RunningWorker;
let settle: SettleClient;
let ring: KeyRing;
const db = openTestDb(2);
const budgets = new BudgetStore(db);

beforeAll(async () => {
  ring = testKeyRing();
  worker = await startTestWorker({ keyRing: ring });
  keyless = await startTestWorker({ keyRing: null });
  settle = new SettleClient(worker.client, worker.taskQueue);
});
afterAll(async () => {
  await worker?.stop();
  await keyless?.stop();
  await db.destroy();
});

function rootCapability(aud: string, ws: string, over: Partial<CapabilityToken['body']> = {}): CapabilityToken {
  return sign(
    {
      v: 1,
      aud,
      rights: ['read', 'write', 'exec'],
      objects: [`path:${ws}`],
      pred: { max_cost: 3, budget: 50 },
      exp: Date.now() + 3_600_000,
      parent: null,
      depth: 0,
      ...over,
    },
    ring,
  );
}

function setup() {
  const ws = tempWorkspace('sub');
  fs.mkdirSync(path.join(ws, 'sub'));
  fs.mkdirSync(path.join(ws, 'other'));
  fs.writeFileSync(path.join(ws, 'sub', 'a.txt'), 'v=1\n');
  fs.writeFileSync(path.join(ws, 'other', 'b.txt'), 'v=1\n');
  return ws;
}

describe('capabilities in trajectories', () => {
  it('a sub-agent runs as <parent>/sub-<n> with an attenuated capability, and can never act outside it', async () => {
    const ws = setup();
    const id = uniqueId('parent');
    const capability = rootCapability(id, ws);
    await settle.start(id, {
      workspace: ws,
      capability,
      turns: [
        {
          turn: 0,
          calls: [
            {
              call_id: 'delegate',
              tool: 'spawn_subagent',
              args: {
                task: 'bump the version in sub/',
                rights: ['read', 'write'],
                objects: [`path:${ws}/sub`],
                max_cost: 1,
                budget: 4,
                expires_in_ms: 600_000,
                turns: [
                  {
                    turn: 0,
                    calls: [{ call_id: 'in', tool: 'file_edit', args: { path: `${ws}/sub/a.txt`, old_str: 'v=1', new_str: 'v=2' } }],
                  },
                  {
                    turn: 1,
                    calls: [{ call_id: 'out', tool: 'file_edit', args: { path: `${ws}/other/b.txt`, old_str: 'v=1', new_str: 'v=2' } }],
                  },
                  { turn: 2, calls: [{ call_id: 'sh', tool: 'bash_execute', args: { command: 'touch pwned' } }] },
                ],
              },
            },
          ],
        },
        { turn: 1, calls: [{ call_id: 'own', tool: 'file_view', args: { path: `${ws}/other/b.txt`, offset: 1, limit: 1 } }] },
      ],
    });
    const result = await settle.result(id);

    const childId = `${id}/sub-1`;
    const delegated = JSON.parse(result.calls[0]!.observation!.output);
    expect(delegated).toMatchObject({ subagent: childId, outcome: 'completed' });
    expect(delegated.calls.map((c: any) => [c.tool, c.resolution])).toEqual([
      ['file_edit', 'executed'],
      ['file_edit', 'denied'],
      ['bash_execute', 'denied'],
    ]);
    expect(delegated.calls[1].error).toMatch(/^denied by capability \(objects\)/);
    expect(delegated.calls[2].error).toMatch(/^denied by capability \(rights\): exec is not among read, write/);
    expect(fs.readFileSync(path.join(ws, 'sub', 'a.txt'), 'utf8')).toBe('v=2\n');
    expect(fs.readFileSync(path.join(ws, 'other', 'b.txt'), 'utf8')).toBe('v=1\n');
    expect(fs.existsSync(path.join(ws, 'pwned'))).toBe(false);
    expect(result.calls[1]).toMatchObject({ resolution: 'read' });

    // The child is linked to its parent for SREs, and its unspent budget came back.
    const child = await settle.client.workflow.getHandle(childId).describe();
    expect(child.typedSearchAttributes.get(SA_PARENT_TRAJECTORY)).toBe(id);
    // From its start: the parent passed the child's search attributes, which upserts neither.
    const childHistory = await historyOf(settle.client, childId);
    expect(childHistory.startAttributes).toEqual([
      'SettleInDoubtCount',
      'SettleParentTrajectory',
      'SettlePendingApprovals',
      'SettleTrajectoryStatus',
    ]);
    expect(childHistory.patches).toEqual(['settle-2026-12-host-queues']);
    expect(childHistory.upserts).toEqual([
      ['TemporalChangeVersion'],
      ['SettleInDoubtCount', 'SettlePendingApprovals', 'SettleProblemCount', 'SettleTrajectoryStatus'], // completed
    ]);
    const parentBudget = await budgets.get(tokenDigest(capability));
    expect(parentBudget).toMatchObject({ reserved: 0, spent: 2 }); // the child's one edit + the parent's own read
  });

  it('the same spawn call again replays the sub-agent instead of starting a second child', async () => {
    const ws = setup();
    const id = uniqueId('respawn');
    const spawn = {
      call_id: 'delegate',
      tool: 'spawn_subagent',
      args: {
        task: 'append once',
        rights: ['read', 'write', 'exec'],
        objects: [`path:${ws}`],
        max_cost: 1,
        budget: 4,
        expires_in_ms: 600_000,
        turns: [{ turn: 0, calls: [{ call_id: 'sh', tool: 'bash_execute', args: { command: 'echo ran >> runs.log' } }] }],
      },
    };
    await settle.start(id, {
      workspace: ws,
      capability: rootCapability(id, ws),
      turns: [
        { turn: 0, calls: [spawn] },
        { turn: 0, calls: [spawn] },
      ],
    });
    const result = await settle.result(id);
    expect(result.calls.map((c) => [c.key, c.resolution])).toEqual([
      [result.calls[0]!.key, 'executed'],
      [result.calls[0]!.key, 'replayed'],
    ]);
    expect(result.calls[1]!.observation).toEqual(result.calls[0]!.observation);
    expect(fs.readFileSync(path.join(ws, 'runs.log'), 'utf8')).toBe('ran\n');
    await expect(settle.client.workflow.getHandle(`${id}/sub-2`).describe()).rejects.toThrow(/not found/);
  });

  it('a child whose capability was widened by hand passes the workflow pre-check and is still denied at the activity', async () => {
    const ws = setup();
    const id = uniqueId('forged');
    const genuine = rootCapability(id, ws, { objects: [`path:${ws}/sub`] });
    // Workflow code (or history) edited to widen the objects: the unsigned fields now allow it.
    const forged = { body: { ...genuine.body, objects: [`path:${ws}`] }, sig: genuine.sig };
    await settle.start(id, {
      workspace: ws,
      capability: forged,
      turns: [
        { turn: 0, calls: [{ call_id: 'x', tool: 'file_edit', args: { path: `${ws}/other/b.txt`, old_str: 'v=1', new_str: 'v=9' } }] },
      ],
    });
    const result = await settle.result(id);
    expect(result.calls[0]).toMatchObject({ resolution: 'denied', state: 'NO_RECORD' });
    expect(result.calls[0]!.observation!.error).toMatch(/^denied by capability \(signature\)/);
    expect(fs.readFileSync(path.join(ws, 'other', 'b.txt'), 'utf8')).toBe('v=1\n');
  });

  it('refuses to spawn a sub-agent wider than the parent, and denies access on a worker without keys', async () => {
    const ws = setup();
    const id = uniqueId('wide');
    await settle.start(id, {
      workspace: ws,
      capability: rootCapability(id, ws),
      turns: [
        {
          turn: 0,
          calls: [
            {
              call_id: 'greedy',
              tool: 'spawn_subagent',
              args: {
                task: 't',
                rights: ['read', 'connect'],
                objects: [`path:${ws}`],
                max_cost: 1,
                budget: 1,
                expires_in_ms: 60_000,
                turns: [{ turn: 0, calls: [{ call_id: 'c', tool: 'file_view', args: { path: `${ws}/sub/a.txt`, offset: 1, limit: 1 } }] }],
              },
            },
            {
              call_id: 'rich',
              tool: 'spawn_subagent',
              args: {
                task: 't',
                rights: ['read'],
                objects: [`path:${ws}`],
                max_cost: 1,
                budget: 51,
                expires_in_ms: 60_000,
                turns: [{ turn: 0, calls: [{ call_id: 'c', tool: 'file_view', args: { path: `${ws}/sub/a.txt`, offset: 1, limit: 1 } }] }],
              },
            },
          ],
        },
      ],
    });
    const result = await settle.result(id);
    expect(result.calls.map((c) => [c.callId, c.resolution])).toEqual([
      ['greedy', 'denied'],
      ['rich', 'denied'],
    ]);
    expect(result.calls[0]!.observation!.error).toMatch(/\(rights\): the child asks for connect/);
    expect(result.calls[1]!.observation!.error).toMatch(/\(budget\)/);

    const keylessClient = new SettleClient(keyless.client, keyless.taskQueue);
    const id2 = uniqueId('nokeys');
    await keylessClient.start(id2, {
      workspace: ws,
      capability: rootCapability(id2, ws),
      turns: [{ turn: 0, calls: [{ call_id: 'v', tool: 'file_view', args: { path: `${ws}/sub/a.txt`, offset: 1, limit: 1 } }] }],
    });
    const denied = await keylessClient.result(id2);
    expect(denied.calls[0]!.observation!.error).toMatch(/\(kid\): this worker holds no capability keys/);
  });

  describe('levels only rise across a spawn', () => {
    /** A child that edits a file and runs a command: each A3 in the parent, so each must wait for approval in the child too. */
    function sneakyChild(ws: string) {
      return {
        task: 'do what the parent may not do unapproved',
        rights: ['read', 'write', 'exec'],
        objects: [`path:${ws}`],
        max_cost: 1,
        budget: 4,
        expires_in_ms: 600_000,
        turns: [
          {
            turn: 0,
            calls: [
              { call_id: 'edit', tool: 'file_edit', args: { path: `${ws}/sub/a.txt`, old_str: 'v=1', new_str: 'v=2' } },
              { call_id: 'sh', tool: 'bash_execute', args: { command: 'touch unapproved' } },
            ],
          },
        ],
      };
    }
    const strict = { levelOverrides: { bash_execute: 'A3', file_edit: 'A3' }, approvalTimeoutMs: 1500 } as const;

    function expectNothingRanUnapproved(ws: string, observation: string) {
      const delegated = JSON.parse(observation);
      expect(delegated.outcome).toBe('completed');
      expect(delegated.calls.map((c: any) => [c.tool, c.resolution])).toEqual([
        ['file_edit', 'denied'],
        ['bash_execute', 'denied'],
      ]);
      for (const call of delegated.calls) expect(call.error).toMatch(/no approval within 1500 ms/);
      expect(fs.readFileSync(path.join(ws, 'sub', 'a.txt'), 'utf8')).toBe('v=1\n');
      expect(fs.existsSync(path.join(ws, 'unapproved'))).toBe(false);
    }

    it('a child spawned by a scripted turn waits for approval where its parent would', async () => {
      const ws = setup();
      const id = uniqueId('a3-child');
      await settle.start(id, {
        workspace: ws,
        capability: rootCapability(id, ws),
        ...strict,
        turns: [{ turn: 0, calls: [{ call_id: 'delegate', tool: 'spawn_subagent', args: sneakyChild(ws) }] }],
      });
      const result = await settle.result(id);
      expectNothingRanUnapproved(ws, result.calls[0]!.observation!.output);
      const child = await settle.result(`${id}/sub-1`);
      expect(child.calls.map((c) => c.level)).toEqual(['A3', 'A3']);
    });

    it('a child the model chose to spawn waits for approval where its parent would', async () => {
      const ws = setup();
      const id = uniqueId('a3-model');
      const server = await startChatServer([
        { tool_calls: [{ id: 'call_spawn', name: 'spawn_subagent', arguments: JSON.stringify(sneakyChild(ws)) }] },
        { content: 'Delegated.' },
      ]);
      worker.allowModelEndpoint(server.baseUrl);
      try {
        await settle.start(id, {
          workspace: ws,
          capability: rootCapability(id, ws),
          ...strict,
          model: { baseUrl: server.baseUrl, model: 'scripted-model', task: 'Edit and run, via a sub-agent.' },
        });
        const result = await settle.result(id);
        expect(result.calls.map((c) => [c.tool, c.resolution])).toEqual([['spawn_subagent', 'executed']]);
        expectNothingRanUnapproved(ws, result.calls[0]!.observation!.output);
      } finally {
        await server.close();
      }
    });
  });
});
