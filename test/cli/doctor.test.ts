/**
 * `settle doctor` as an operator runs it: against the test stack (embedded PostgreSQL, Temporal
 * with settle's search attributes) everything answers ok; each problem is one FAIL line with its
 * fix and exit 1 — no DATABASE_URL, a missing namespace, a namespace without settle's search
 * attributes, a PostgreSQL 15 primary with an asynchronous replica.
 */
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { runSettle } from '../support/cli';
import { startPrimary, startStandby, type Pg15Server } from '../../chaos/infra/postgres15';

const servers: Pg15Server[] = [];
afterAll(async () => {
  for (const s of servers.reverse()) await s.stop();
});

const doctor = (env: NodeJS.ProcessEnv) => runSettle(['doctor'], { env: { TEMPORAL_NAMESPACE: 'default', ...env } });

describe('settle doctor', { timeout: 120_000 }, () => {
  it('answers ok for each requirement of a healthy setup, one line each, exit 0', async () => {
    const { code, stdout } = await doctor({ DATABASE_URL: inject('databaseUrl'), TEMPORAL_ADDRESS: inject('temporalAddress') });
    const lines = stdout.trim().split('\n');
    expect(lines.every((l) => l.startsWith('ok   '))).toBe(true);
    expect(lines.map((l) => l.slice(5).split(':')[0])).toEqual([
      'database',
      'database tls',
      'record store',
      'pooler',
      'clock',
      'schema',
      'temporal',
      'temporal tls',
      'namespace',
      'search attributes',
    ]);
    expect(stdout).toMatch(/^ok {3}search attributes: all 5 of settle's in default$/m);
    expect(code).toBe(0);
  });

  it('fails on a missing DATABASE_URL and a namespace that does not exist, naming the fix', async () => {
    const { code, stdout } = await doctor({
      DATABASE_URL: '',
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: 'no-such-namespace',
    });
    expect(stdout).toMatch(/^FAIL database: DATABASE_URL is not set: set it to the Postgres URL that holds the endpoint records$/m);
    expect(stdout).toMatch(
      /^FAIL namespace: no-such-namespace does not exist: create it \(temporal operator namespace create no-such-namespace\)/m,
    );
    expect(code).toBe(1);
  });

  it("fails on a namespace without settle's search attributes, printing the command that creates them", async () => {
    const namespace = `doctor-${Date.now()}`;
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
    } finally {
      await connection.close();
    }
    const { code, stdout } = await doctor({
      DATABASE_URL: inject('databaseUrl'),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: namespace,
    });
    expect(stdout).toMatch(
      new RegExp(
        `^FAIL search attributes: ${namespace} lacks SettleTrajectoryStatus \\(Keyword\\), .*: temporal operator search-attribute create --namespace ${namespace} --name SettleTrajectoryStatus --type Keyword`,
        'm',
      ),
    );
    expect(code).toBe(1);
  });

  it('fails on a record store with an asynchronous streaming replica, and only warns with SETTLE_RECORD_DURABILITY=local', async () => {
    const primary = await startPrimary();
    servers.push(primary, await startStandby(primary, 'replica1'));
    const env = { DATABASE_URL: primary.url, TEMPORAL_ADDRESS: inject('temporalAddress') };
    const refused = await doctor(env);
    expect(refused.stdout).toMatch(
      /^FAIL record store: 1 streaming replica \(replica1: .*\) attached asynchronously .*SETTLE_RECORD_DURABILITY=local to accept it$/m,
    );
    expect(refused.stdout).toMatch(/^warn schema: \d+ migration\(s\) not applied .*: run settle migrate/m);
    expect(refused.code).toBe(1);
    const accepted = await doctor({ ...env, SETTLE_RECORD_DURABILITY: 'local' });
    expect(accepted.stdout).toMatch(/^warn record store: 1 streaming replica .*\(accepted: SETTLE_RECORD_DURABILITY=local\)$/m);
    expect(accepted.code).toBe(0);
  });
});
