/**
 * settle against a Temporal server with mTLS on its frontend (cmd/server v1.29.1 on PostgreSQL,
 * certificates from a local CA made with openssl): the worker (workers/worker.ts), the CLI's
 * Temporal client (`settle start`), `settle status`'s own gRPC reader and `settle doctor` connect
 * through client/connection.ts's TEMPORAL_TLS_* path; a wrong CA, and TLS without a client
 * certificate, are refused in one line. One server for the file; run by the production lane
 * (scripts/production-lane.sh builds the server), or by vitest once .settle/bin/server exists.
 */
import fs from 'node:fs';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runSettle } from '../support/cli';
import { createLocalCa, type LocalCa } from '../../chaos/infra/local-ca';
import { PostgresTemporalServer } from '../../chaos/infra/temporal-postgres-server';
import { killWorkerProcesses, startWorkerProcess } from '../support/worker-process';
import { tempWorkspace, testWorkspaceRoot, uniqueId } from '../support/env';

const WORKER = fileURLToPath(new URL('../../workers/worker.ts', import.meta.url));
const SERVER_NAME = 'temporal.settle.test';

let ca: LocalCa;
let otherCa: LocalCa;
let client: { certFile: string; keyFile: string };
let temporal: PostgresTemporalServer;

beforeAll(async () => {
  ca = createLocalCa();
  otherCa = createLocalCa('another CA');
  const frontend = ca.issue('frontend', [`DNS:${SERVER_NAME}`, 'IP:127.0.0.1']);
  client = ca.issue('settle-worker', ['DNS:settle-worker']);
  const clientCertPair = { crt: fs.readFileSync(client.certFile), key: fs.readFileSync(client.keyFile) };
  temporal = await PostgresTemporalServer.start({
    tls: {
      ...frontend,
      caFile: ca.certFile,
      serverName: SERVER_NAME,
      requireClientAuth: true,
      systemWorker: ca.issue('system-worker', ['DNS:system-worker']),
    },
    connect: { tls: { serverRootCACertificate: fs.readFileSync(ca.certFile), serverNameOverride: SERVER_NAME, clientCertPair } },
  });
}, 300_000);
afterAll(async () => {
  killWorkerProcesses();
  await temporal?.destroy();
  ca?.remove();
  otherCa?.remove();
});

/** The environment of a worker or the CLI reaching the mTLS frontend, as an operator sets it. */
function mtlsEnv(overrides: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    TEMPORAL_TLS: undefined,
    TEMPORAL_API_KEY: undefined,
    DATABASE_URL: temporal.postgres.url,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: 'default',
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca.certFile,
    TEMPORAL_TLS_SERVER_NAME: SERVER_NAME,
    TEMPORAL_TLS_CLIENT_CERT_PATH: client.certFile,
    TEMPORAL_TLS_CLIENT_KEY_PATH: client.keyFile,
    ...overrides,
  };
}

async function waitForOutput(worker: ReturnType<typeof startWorkerProcess>, text: string): Promise<void> {
  for (let i = 0; i < 900 && !worker.output().includes(text) && worker.child.exitCode === null; i++)
    await new Promise((r) => setTimeout(r, 200));
}

describe('Temporal with mTLS on its frontend', { timeout: 240_000 }, () => {
  it('the worker, settle start, settle status and settle doctor connect with a client certificate', async () => {
    const taskQueue = uniqueId('mtls');
    const worker = startWorkerProcess(WORKER, {
      ...mtlsEnv({ TEMPORAL_TASK_QUEUE: taskQueue }),
      SETTLE_WORKSPACE_ROOT: testWorkspaceRoot(),
      SETTLE_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    });
    await waitForOutput(worker, 'settle worker: polling');
    expect(worker.output()).toContain('settle worker: polling');
    expect(worker.output()).toContain(
      `"settle worker: temporal tls: mTLS (client certificate sent), server certificate verified (CA from TEMPORAL_TLS_SERVER_CA_CERT_PATH or the profile, name ${SERVER_NAME})"`,
    );
    expect(worker.output()).toMatch(/queue=mtls-[^ ]+ \(mtls\)/);

    const ws = tempWorkspace('mtls');
    const file = path.join(ws, 'a.txt');
    fs.writeFileSync(file, 'v1\n');
    const id = uniqueId('mtls');
    const spec = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'settle-spec-')), 'spec.json');
    fs.writeFileSync(
      spec,
      JSON.stringify({
        trajectoryId: id,
        workspace: ws,
        turns: [{ turn: 0, calls: [{ call_id: 'e', tool: 'file_edit', args: { path: file, old_str: 'v1', new_str: 'v2' } }] }],
      }),
    );
    const started = await runSettle(['start', spec], { env: mtlsEnv({ TEMPORAL_TASK_QUEUE: taskQueue }) });
    expect(started.stderr).toBe('');
    expect(started.stdout).toContain(`started ${id}`);
    let status = await runSettle(['status', id], { env: mtlsEnv({ TEMPORAL_TASK_QUEUE: taskQueue }) });
    for (let i = 0; i < 60 && !/completed/i.test(status.stdout.split('\n')[0] ?? ''); i++) {
      await new Promise((r) => setTimeout(r, 1_000));
      status = await runSettle(['status', id], { env: mtlsEnv({ TEMPORAL_TASK_QUEUE: taskQueue }) });
    }
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('COMPLETED');
    expect(fs.readFileSync(file, 'utf8')).toBe('v2\n');

    const doctor = await runSettle(['doctor'], { env: mtlsEnv() });
    expect(doctor.stdout).toMatch(
      new RegExp(`^ok {3}temporal: connected to ${temporal.address} namespace=default queue=settle \\(mtls\\)$`, 'm'),
    );
    expect(doctor.stdout).toMatch(/^ok {3}temporal tls: mTLS \(client certificate sent\), server certificate verified/m);
    expect(doctor.stdout).toMatch(/^ok {3}search attributes: all \d+ of settle's in default$/m);
    expect(doctor.code).toBe(0);

    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  });

  const refusals = [
    {
      what: 'a CA that did not sign the frontend certificate',
      env: () => mtlsEnv({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: otherCa.certFile }),
      cause:
        /unable to verify the first certificate: the frontend's certificate is not signed by a trusted CA: set TEMPORAL_TLS_SERVER_CA_CERT_PATH/,
    },
    {
      // Empty: unset, as a shell's `VAR= command` means.
      what: 'TLS without a client certificate',
      env: () => mtlsEnv({ TEMPORAL_TLS_CLIENT_CERT_PATH: '', TEMPORAL_TLS_CLIENT_KEY_PATH: '' }),
      cause:
        /certificate required: the frontend requires a client certificate \(mTLS\): set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH/,
    },
  ];
  for (const refusal of refusals) {
    it(`refuses ${refusal.what} in one line: worker start, settle status, settle doctor`, async () => {
      const worker = startWorkerProcess(WORKER, { ...refusal.env(), SETTLE_WORKFLOW_BUNDLE: inject('workflowBundlePath') });
      expect(await worker.exited).toBe(1);
      const errors = worker
        .output()
        .split('\n')
        .filter((l) => l.includes('"level":"error"'));
      expect(errors, worker.output()).toHaveLength(1);
      expect(errors[0]).toMatch(
        /settle worker: cannot connect to Temporal at 127\.0\.0\.1:\d+ namespace=default queue=settle \((tls|mtls)\): /,
      );
      expect(errors[0]).toMatch(refusal.cause);

      const status = await runSettle(['status', 'no-such-trajectory'], { env: refusal.env() });
      expect(status.code).not.toBe(0);
      expect(status.stderr.trim().split('\n'), status.stderr).toHaveLength(1);
      expect(status.stderr).toMatch(refusal.cause);

      const doctor = await runSettle(['doctor'], { env: refusal.env() });
      expect(doctor.code).toBe(1);
      expect(doctor.stdout).toMatch(/^FAIL temporal: cannot connect to 127\.0\.0\.1:\d+ namespace=default queue=settle \((tls|mtls)\): /m);
      expect(doctor.stdout).toMatch(refusal.cause);
      console.log(
        `${refusal.what}:\n  worker: ${errors[0]}\n  status: ${status.stderr.trim()}\n  doctor: ${doctor.stdout.split('\n').find((l) => l.startsWith('FAIL'))}`,
      );
    });
  }

  it('TEMPORAL_API_KEY alone turns TLS on and sends the key as a bearer token (settle status, settle doctor)', async () => {
    // Temporal Cloud's mode, without Cloud: a TLS endpoint that records what reaches it. Its
    // certificate is trusted the way a public CA is (as a system CA), so no TEMPORAL_TLS_* is set.
    const cert = ca.issue('api-key-endpoint', ['IP:127.0.0.1']);
    const seen: { authorization: string | undefined; encrypted: boolean }[] = [];
    const server = http2.createSecureServer({ cert: fs.readFileSync(cert.certFile), key: fs.readFileSync(cert.keyFile) });
    server.on('stream', (stream, headers) => {
      seen.push({ authorization: headers.authorization, encrypted: stream.session?.encrypted === true });
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '7', 'grpc-message': 'recorded' },
        { endStream: true },
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as { port: number }).port;
      const env = {
        TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
        TEMPORAL_NAMESPACE: 'default',
        TEMPORAL_API_KEY: 'settle-test-key',
        // gRPC's own stand-in for the system's CAs (it does not read NODE_EXTRA_CA_CERTS).
        GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: ca.certFile,
        NODE_EXTRA_CA_CERTS: ca.certFile,
        DATABASE_URL: temporal.postgres.url,
      };
      const status = await runSettle(['status', 'some-trajectory'], { env });
      expect(status.code).not.toBe(0);
      const doctor = await runSettle(['doctor'], { env });
      expect(doctor.stdout).toMatch(
        /^ok {3}temporal tls: TLS with an API key, server certificate verified \(CA from the system, name 127\.0\.0\.1\)$/m,
      );
      expect(seen.length).toBeGreaterThanOrEqual(2);
      expect(seen.every((s) => s.encrypted && s.authorization === 'Bearer settle-test-key')).toBe(true);
    } finally {
      server.close();
    }
  });
});
