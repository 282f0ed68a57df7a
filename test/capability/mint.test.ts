/** `mintCapability` (settle/client): a root capability that the worker's checks accept, and bad grants named by field. */
import { describe, expect, it } from 'vitest';
import { mintCapability } from '../../api/client';
import { authorize } from '../../activities/capability/authorize';
import { loadKeyRing } from '../../activities/capability/keyring';

const KEYS = `k1:${Buffer.alloc(32, 7).toString('base64')}`;
const grant = {
  audience: 'wf-1',
  rights: ['write'] as const,
  objects: ['path:/srv/ledger'],
  maxCost: 2,
  budget: 5,
  expiresInMs: 60_000,
};

describe('mintCapability', () => {
  it('signs a root capability with the first key; the worker’s check allows what it grants and nothing else', async () => {
    const token = mintCapability(grant, { keys: KEYS, nowMs: 1_000 });
    expect(token.body).toEqual({
      v: 1,
      kid: 'k1',
      aud: 'wf-1',
      rights: ['write'],
      objects: ['path:/srv/ledger'],
      pred: { max_cost: 2, budget: 5 },
      exp: 61_000,
      parent: null,
      depth: 0,
    });
    const ring = loadKeyRing({ SETTLE_CAP_KEYS: KEYS });
    const access = {
      op: 'write' as const,
      target: { kind: 'path' as const, path: '/srv/ledger/a' },
      cost: 1,
      audience: 'wf-1',
      nowMs: 2_000,
      key: 'k',
    };
    expect((await authorize(token, access, { ring, budgets: null })).verdict).toEqual({ allowed: true });
    expect((await authorize(token, { ...access, audience: 'wf-2' }, { ring, budgets: null })).verdict).toMatchObject({
      allowed: false,
      component: 'audience',
    });
    expect((await authorize(token, { ...access, cost: 3 }, { ring, budgets: null })).verdict).toMatchObject({ allowed: false });
  });

  it('reads SETTLE_CAP_KEYS by default, and says so when it is unset', () => {
    const saved = process.env.SETTLE_CAP_KEYS;
    try {
      process.env.SETTLE_CAP_KEYS = KEYS;
      expect(mintCapability(grant).body.kid).toBe('k1');
      delete process.env.SETTLE_CAP_KEYS;
      expect(() => mintCapability(grant)).toThrow(/^SETTLE_CAP_KEYS must be set/);
    } finally {
      if (saved === undefined) delete process.env.SETTLE_CAP_KEYS;
      else process.env.SETTLE_CAP_KEYS = saved;
    }
  });

  it('refuses a bad grant in one line naming the field and the rule', () => {
    const bad = (change: object) => () => mintCapability({ ...grant, ...change }, { keys: KEYS });
    expect(bad({ rights: ['fly'] })).toThrow('grant.rights.0 must be one of read, write, exec, connect');
    expect(bad({ rights: [] })).toThrow('grant.rights must name at least one right');
    expect(bad({ objects: ['file:/x'] })).toThrow(/^grant\.objects\.0 must be a typed object such as path:/);
    expect(bad({ audience: '' })).toThrow('grant.audience must be a non-empty workflow id');
    expect(bad({ budget: 1.5 })).toThrow('grant.budget must be an integer');
    expect(bad({ maxCost: -1 })).toThrow('grant.maxCost must be ≥ 0');
    expect(bad({ expiresInMs: 0 })).toThrow('grant.expiresInMs must be a positive number of milliseconds');
    expect(bad({ extra: 1 })).toThrow('grant must not have extra');
  });
});
