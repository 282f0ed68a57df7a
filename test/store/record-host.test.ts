/**
 * The host on a workspace call's record (migrations/0005, docs/deploying.md#workers-on-several-hosts),
 * against real Postgres: a NOT_EXECUTED call is claimed again only from its host, and a probe on
 * another host answers unknown instead of reading a disk that does not hold the evidence.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deriveKey } from '../../core/key';
import { createActivities } from '../../activities/index';
import { hostIdFor } from '../../activities/host-id';
import type { ClaimRequest } from '../../activities/store/endpoint-store';
import { makeWorkerPolicy } from '../../activities/worker-policy';
import { openTestDb, tempWorkspace, testStore, testWorkspaceRoot, uniqueId } from '../support/env';

const db = openTestDb();
const store = testStore(db);
afterAll(() => db.destroy());

function editCall(file: string, tool = 'file_edit'): ClaimRequest {
  const trajectoryId = uniqueId('host');
  const args = { path: file, old_str: 'v1', new_str: 'v2' };
  return { key: deriveKey({ trajectoryId, turn: 0, callId: 'c1', tool, args }), trajectoryId, turn: 0, callId: 'c1', tool, args };
}

const claimAs = (host: string | undefined) => ({ leaseMs: 30_000, holder: `w@${host}`, ...(host ? { host } : {}) });

describe('the host on the record', () => {
  it('a NOT_EXECUTED workspace call is claimed again only from the host that claimed it', async () => {
    const call = editCall('/ws/a.txt');
    const first = await store.claim(call, claimAs('host-a'));
    expect(first.kind).toBe('claimed');
    expect((await store.get(call.key))?.host).toBe('host-a');
    await store.releaseNoEffect(call.key, 1, 'proved not executed', 'worker:test');

    expect(await store.claim(call, claimAs('host-b'))).toEqual({ kind: 'elsewhere', host: 'host-a', generation: 1 });
    expect(await store.claim(call, claimAs(undefined))).toEqual({ kind: 'elsewhere', host: 'host-a', generation: 1 });
    const record = await store.get(call.key);
    expect([record?.state, record?.generation]).toEqual(['NOT_EXECUTED', 1]);

    const again = await store.claim(call, claimAs('host-a'));
    expect(again).toMatchObject({ kind: 'claimed', generation: 2, from: 'NOT_EXECUTED' });
  });

  it('a record of a call that names no host (a tool whose effect lives elsewhere) is claimed again from any host', async () => {
    const call = editCall('https://example.test', 'http_request');
    expect((await store.claim(call, claimAs(undefined))).kind).toBe('claimed');
    await store.releaseNoEffect(call.key, 1, 'proved not executed', 'worker:test');
    expect(await store.claim(call, claimAs('host-b'))).toMatchObject({ kind: 'claimed', generation: 2 });
    expect((await store.get(call.key))?.host).toBe('host-b');
  });

  it("a probe on another host answers unknown; on the record's host it reads the file and settles", async () => {
    const ws = tempWorkspace('host');
    const file = path.join(ws, 'a.txt');
    fs.writeFileSync(file, 'v1\n');
    const policy = makeWorkerPolicy({ workspaceRoot: testWorkspaceRoot(), modelEndpoints: [], modelKeyEnvs: [], allowNoCapability: true });
    const here = createActivities({ store, identity: 'here', policy, runsTrajectories: true, host: 'host-a' });
    const elsewhere = createActivities({ store, identity: 'elsewhere', policy, runsTrajectories: true, host: 'host-b' });

    // Claimed on host-a with the intent of an edit that never happened (the file still reads v1).
    const call = editCall(file);
    const hash = (text: string) => crypto.createHash('sha256').update(text).digest('hex');
    const intent = {
      path: file,
      sha256_before: hash('v1\n'),
      sha256_after: hash('v2\n'),
      matches: 1,
      tmp_path: path.join(ws, '.a.txt.settle-tmp'),
    };
    expect((await store.claim(call, { ...claimAs('host-a'), intent })).kind).toBe('claimed');
    await store.markInDoubt(call.key, 1, 'worker died', 'worker:test');

    const far = await elsewhere.probeToolCall({ key: call.key, workspace: ws });
    expect(far).toMatchObject({ verdict: 'unknown', state: 'IN_DOUBT', generation: 1 });
    expect(far.detail).toMatch(/host host-a's disk; this worker is on host host-b/);
    expect(far.final).toBeUndefined(); // the host's own probe can still tell
    expect((await store.get(call.key))?.state).toBe('IN_DOUBT');

    const near = await here.probeToolCall({ key: call.key, workspace: ws });
    expect(near).toMatchObject({ verdict: 'not_applied', state: 'NOT_EXECUTED' });
  });

  it('the default host id differs for two directories at one path (mount namespaces) and follows SETTLE_HOST_ID', () => {
    const a = tempWorkspace('root-a');
    const b = tempWorkspace('root-b');
    expect(hostIdFor(a, {})).not.toBe(hostIdFor(b, {}));
    expect(hostIdFor(a, {})).toBe(hostIdFor(a, {}));
    expect(hostIdFor(a, { SETTLE_HOST_ID: 'rack-7' })).toBe('rack-7');
    expect(() => hostIdFor(a, { SETTLE_HOST_ID: 'a b' })).toThrow(/SETTLE_HOST_ID must be 1–100 letters/);
  });
});
