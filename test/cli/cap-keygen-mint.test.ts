/** `settle cap keygen` and `settle cap mint` as a user meets them: a key SETTLE_CAP_KEYS takes, required options marked, all missing ones named at once. */
import { describe, expect, it } from 'vitest';
import { runSettle } from '../support/cli';
import { loadKeyRing } from '../../activities/capability/keyring';
import { verifySignature } from '../../activities/capability/signer';
import { CapabilityToken } from '../../core/capability/token';

describe('settle cap keygen / mint', { timeout: 120_000 }, () => {
  it('keygen prints one SETTLE_CAP_KEYS entry that mints a token it verifies', async () => {
    const r = await runSettle(['cap', 'keygen', '--kid', 'team-1']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const line = r.stdout.split('\n').find((l) => l.startsWith('SETTLE_CAP_KEYS='))!;
    const keys = line.slice('SETTLE_CAP_KEYS='.length);
    const ring = loadKeyRing({ SETTLE_CAP_KEYS: keys });
    expect(ring.signingKid).toBe('team-1');
    const args = [
      '--audience',
      'wf',
      '--rights',
      'write',
      '--objects',
      'path:/ws',
      '--max-cost',
      '1',
      '--budget',
      '3',
      '--expires-in',
      '1h',
    ];
    const minted = await runSettle(['cap', 'mint', ...args], { env: { SETTLE_CAP_KEYS: keys } });
    expect(minted.code).toBe(0);
    const token = CapabilityToken().parse(JSON.parse(minted.stdout));
    expect(verifySignature(token, ring)).toEqual({ allowed: true });
    // Two runs, two secrets.
    expect((await runSettle(['cap', 'keygen', '--kid', 'team-1'])).stdout).not.toContain(keys);
  });

  it('mint --help marks each required option; a mint missing several names them all in one line', async () => {
    const help = await runSettle(['cap', 'mint', '--help']);
    for (const flag of ['--audience', '--rights', '--objects', '--max-cost', '--budget', '--expires-in'])
      expect(help.stdout).toMatch(new RegExp(`${flag} <[^>]+>\\s+\\(required\\)`));
    expect(help.stdout).not.toMatch(/--out <file>\s+\(required\)/);
    const r = await runSettle(['cap', 'mint', '--audience', 'wf', '--rights', 'read'], {
      env: { SETTLE_CAP_KEYS: `k:${Buffer.alloc(32, 1).toString('base64')}` },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('settle: missing required options --objects, --max-cost, --budget, --expires-in\n');
  });
});
