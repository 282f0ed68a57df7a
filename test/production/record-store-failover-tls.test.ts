/**
 * The production chaos lane's topology, small (the full size is `npm run chaos -- --production`):
 * a Temporal server v1.29.1 on PostgreSQL that requires mTLS on its frontend, and the record store
 * — a PostgreSQL 15 primary with a synchronous standby behind PgBouncer in transaction mode — over
 * TLS, every certificate from a local CA (chaos/infra/production-tls.ts). First the topology
 * itself: the workers say they connect with a client certificate and verify-full, plaintext is
 * refused at both doors, the harness's client reaches Temporal across a server restart. Then the
 * synchronous failover under real workers: each effect once. Needs .settle/bin/server: run by the
 * production lane (scripts/production-lane.sh builds it), and fails if it is absent.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Connection } from '@temporalio/client';
import { afterAll, describe, expect, it, inject } from 'vitest';
import { Cluster } from '../../chaos/harness/cluster';
import { runScenario } from '../../chaos/harness/scenario';
import { inLane } from '../../chaos/harness/lanes';
import { failoverSync, onProductionTopology } from '../../chaos/record-store-scenarios';
import { TEMPORAL_SERVER_NAME } from '../../chaos/infra/production-tls';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-failover-tls-test-'));
fs.chmodSync(dir, 0o755); // the postgres user must reach its data directory
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('the production chaos topology: Temporal on PostgreSQL over mTLS, the record store over TLS', () => {
  it(
    'workers connect with a client certificate and verify-full; plaintext is refused; a Temporal restart is survived',
    { timeout: 400_000 },
    async () => {
      const cluster = await Cluster.start({
        dir: path.join(dir, 'topology'),
        workers: 1,
        taskQueue: 'tls-topology',
        workflowBundlePath: inject('workflowBundlePath'),
        replicated: 'sync',
        tls: true,
        log: (line) => console.error(`[chaos] ${line}`),
      });
      try {
        const output = cluster.workers[0]!.output();
        expect(output).toMatch(
          /"settle worker: database tls: verify-full, server certificate verified \(CA from sslrootcert, host name 127\.0\.0\.1\)"/,
        );
        expect(output).toContain(
          `"settle worker: temporal tls: mTLS (client certificate sent), server certificate verified (CA from TEMPORAL_TLS_SERVER_CA_CERT_PATH or the profile, name ${TEMPORAL_SERVER_NAME})"`,
        );
        expect(cluster.databaseUrl).toMatch(/\?sslmode=verify-full&sslrootcert=/);

        // Plaintext at both doors: PgBouncer requires TLS, the frontend a TLS handshake.
        const plain = new pg.Client({ connectionString: cluster.databaseUrl.split('?')[0] });
        await expect(plain.connect()).rejects.toThrow(/SSL required/);
        await expect(Connection.connect({ address: cluster.temporalAddress, connectTimeout: 5_000 })).rejects.toThrow();

        // The server stops and starts on its PostgreSQL; the harness's client (TEMPORAL_TLS_*) reaches it after.
        await cluster.restartTemporal(500);
        const connection = await cluster.connectTemporal();
        try {
          const described = await connection.workflowService.describeNamespace({ namespace: 'default' });
          expect(described.namespaceInfo?.name).toBe('default');
        } finally {
          await connection.close();
        }
        expect(cluster.faults.map((f) => f.kind)).toEqual(['temporal-restart']);
      } finally {
        await cluster.stop();
      }
    },
  );

  it(
    'synchronous standby: the primary killed with calls in flight, the standby promoted; every effect once',
    { timeout: 400_000 },
    async () => {
      const small = { workers: 2, orchestrated: 2, scripted: 2, effectsEach: 4, spreadMs: 8_000, timeoutMs: 240_000 };
      // One failover a run: the next would come after the workload is done.
      const scenario = onProductionTopology(failoverSync(small, 600_000));
      const result = await runScenario(inLane(scenario, 'activity'), {
        dir,
        workflowBundlePath: inject('workflowBundlePath'),
        seed: 5,
        log: (line) => console.error(`[chaos] ${line}`),
      });
      expect(
        {
          duplicates: result.duplicates,
          lost: result.lost,
          misreported: result.misreported,
          leftInDoubt: result.leftInDoubt,
          failedTrajectories: result.failedTrajectories,
          unfinished: result.unfinished,
        },
        result.problems.join('\n'),
      ).toEqual({ duplicates: 0, lost: 0, misreported: 0, leftInDoubt: 0, failedTrajectories: 0, unfinished: 0 });
      expect(result.trajectories).toBe(4);
      expect(result.effects).toBeGreaterThanOrEqual(8);
      expect(result.faults.failover).toBe(1);
      expect(result.faults['failover: calls in flight']).toBeGreaterThan(0);
      expect(result.description).toMatch(/^Temporal server v1\.29\.1 on PostgreSQL, mTLS required/);
    },
  );
});
