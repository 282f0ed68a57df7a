import { describe, expect, it } from 'vitest';
import { parseDurabilityMode, recordStoreFindings, refused, type RecordStoreSettings } from '../../core/record-store-requirements';

const standalone: RecordStoreSettings = {
  inRecovery: false,
  synchronousCommit: 'on',
  synchronousStandbyNames: '',
  fsync: 'on',
  fullPageWrites: 'on',
  replicas: [],
  clockSkewMs: 3,
  clockUncertaintyMs: 1,
  pooling: 'session',
};
const asyncReplica = { ...standalone, replicas: [{ name: 'replica1', syncState: 'async' }] };

const lines = (s: RecordStoreSettings, mode = parseDurabilityMode(undefined)) =>
  recordStoreFindings(s, mode).filter((f) => f.level !== 'ok');

describe('record store requirements', () => {
  it('accepts a standalone primary with the defaults (the embedded dev Postgres), saying what it does not survive', () => {
    const findings = recordStoreFindings(standalone, 'replicated');
    expect(refused(findings)).toBe(false);
    expect(findings.map((f) => f.level)).toEqual(['ok', 'ok', 'ok']);
    expect(findings[0]!.line).toMatch(/^record store: standalone primary .* not a failover/);
  });

  it('refuses asynchronous replicas by default, naming the setting and the opt-out; local accepts them with a warning', () => {
    const [fail] = lines(asyncReplica);
    expect(fail).toEqual({
      level: 'fail',
      subject: 'record store',
      line: expect.stringMatching(/^record store: 1 streaming replica \(replica1: async\) attached asynchronously/),
    });
    expect(fail!.line).toContain("set synchronous_standby_names on the primary (e.g. 'ANY 1 (replica1)')");
    expect(fail!.line).toMatch(/or set SETTLE_RECORD_DURABILITY=local to accept it$/);
    const [accepted] = lines(asyncReplica, 'local');
    expect(accepted!.level).toBe('warn');
    expect(accepted!.line).toMatch(/\(accepted: SETTLE_RECORD_DURABILITY=local\)$/);
  });

  it('accepts a synchronous standby; warns about an asynchronous one beside it', () => {
    const sync = { ...standalone, synchronousStandbyNames: 'ANY 1 (replica1)', replicas: [{ name: 'replica1', syncState: 'quorum' }] };
    expect(lines(sync)).toEqual([]);
    expect(recordStoreFindings(sync, 'replicated')[0]!.line).toMatch(/^record store: commits wait for a synchronous standby/);
    const mixed = { ...sync, replicas: [...sync.replicas, { name: 'reporting', syncState: 'async' }] };
    expect(lines(mixed)).toEqual([
      {
        level: 'warn',
        subject: 'record store',
        line: expect.stringMatching(/reporting: async not synchronous: .*promote only a synchronous standby$/),
      },
    ]);
  });

  it('refuses synchronous_commit = local with a synchronous standby: commits would not wait for it', () => {
    const local = {
      ...standalone,
      synchronousCommit: 'local',
      synchronousStandbyNames: 'replica1',
      replicas: [{ name: 'replica1', syncState: 'sync' }],
    };
    expect(lines(local)).toEqual([
      {
        level: 'fail',
        subject: 'record store',
        line: expect.stringMatching(/^record store: synchronous_commit = local for settle’s role: commits do not wait/),
      },
    ]);
  });

  it('accepts a named standby whose mode the role cannot see, and says how to let it see', () => {
    const hidden = { ...standalone, synchronousStandbyNames: 'replica1', replicas: [{ name: null, syncState: null }] };
    const findings = recordStoreFindings(hidden, 'replicated');
    expect(refused(findings)).toBe(false);
    expect(findings[0]!.line).toMatch(/grant it pg_monitor/);
  });

  it('refuses crash-unsafe settings unless none is chosen; a standby and statement pooling whatever the mode', () => {
    const unsafe = { ...standalone, fsync: 'off', synchronousCommit: 'off' };
    expect(lines(unsafe, 'local').map((f) => f.level)).toEqual(['fail', 'fail']);
    expect(lines(unsafe, 'none').map((f) => f.level)).toEqual(['warn', 'warn']);
    expect(lines(unsafe)[0]!.line).toMatch(
      /^record store: fsync = off: .*set fsync = on, or set SETTLE_RECORD_DURABILITY=none to accept it$/,
    );
    expect(lines({ ...standalone, inRecovery: true }, 'none').map((f) => f.level)).toEqual(['fail']);
    expect(lines({ ...standalone, pooling: 'statement' }, 'none')).toEqual([
      { level: 'fail', subject: 'pooler', line: expect.stringMatching(/pool_mode = transaction or session/) },
    ]);
    expect(lines({ ...standalone, pooling: 'transaction' })).toEqual([]);
  });

  it('warns about a clock more than the bound away beyond the measurement uncertainty', () => {
    expect(lines({ ...standalone, clockSkewMs: 1_400, clockUncertaintyMs: 500 })).toEqual([]);
    expect(lines({ ...standalone, clockSkewMs: -2_500, clockUncertaintyMs: 10 })).toEqual([
      {
        level: 'warn',
        subject: 'clock',
        line: expect.stringMatching(/^clock: this host’s clock is 2\.5 s ahead of the database’s: .*NTP$/),
      },
    ]);
  });

  it('refuses an unknown SETTLE_RECORD_DURABILITY in one line naming the variable and the values', () => {
    expect(parseDurabilityMode('')).toBe('replicated');
    expect(() => parseDurabilityMode('warn')).toThrow('SETTLE_RECORD_DURABILITY must be one of replicated, local, none (got "warn")');
  });
});
