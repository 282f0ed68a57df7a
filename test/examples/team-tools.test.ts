/**
 * examples/team-tools, tested from the outside: settle packed, the example copied out of the
 * repository and installed offline from the tarball, built with its own `tsc` against settle's
 * shipped .d.ts, and run as plain JavaScript — its own worker process, its own starter — against
 * the suite's Temporal and Postgres. Its worker is SIGKILLed in the middle of each of its two
 * calls, and the effects are counted where they land: the billing service's effect log and the
 * ledger file, each exactly once.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { callKey } from '../../api/testing';
import { uniqueId } from '../support/env';
import { startIdempotentServer, type IdempotentServer } from '../support/idempotent-http-server';
import { consumerEnv, inConsumer, installConsumer, packSettle, REPO, type ConsumerPackage } from '../support/packed-settle';
import { killWorkerProcesses, startWorkerProcess, type WorkerProcess } from '../support/worker-process';

const run = promisify(execFile);
const EXAMPLE = path.join(REPO, 'examples', 'team-tools');

let tmp: string;
let project: string;
let billing: IdempotentServer;

beforeAll(async () => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'settle-example-')));
  const packed = await packSettle(tmp);
  project = path.join(tmp, 'team-tools');
  // The example as its authors keep it: sources, tsconfig, package.json (no node_modules, no dist).
  fs.cpSync(EXAMPLE, project, { recursive: true, filter: (src) => !/\/(node_modules|dist)(\/|$)/.test(src.slice(EXAMPLE.length)) });
  const manifest = JSON.parse(fs.readFileSync(path.join(EXAMPLE, 'package.json'), 'utf8')) as ConsumerPackage;
  await installConsumer(project, packed, manifest);
  // What a consumer runs: its own build, with its own TypeScript (a devDependency from the cache).
  await inConsumer(project, 'npm', ['run', 'build']);
  billing = await startIdempotentServer();
}, 600_000);

afterAll(async () => {
  killWorkerProcesses();
  await billing?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('examples/team-tools, installed from the packed settle', () => {
  it('builds with its own tsc against the installed declarations: a wrong argument or result type is an error', async () => {
    // Each line is an error only if settle's types reached the example (an unresolved import is `any`).
    const probe = path.join(project, 'src', 'types-reach.ts');
    fs.writeFileSync(
      probe,
      [
        "import { settled } from 'settle/workflow';",
        "import type { teamTools } from './tools.js';",
        'export async function wrong(): Promise<void> {',
        '  const tools = settled<typeof teamTools>();',
        '  // @ts-expect-error amount_cents is a number',
        "  await tools.create_invoice({ customer: 'cus_1', amount_cents: '12' }, { callId: 'a' });",
        "  const line = await tools.append_ledger_line({ ledger: '/l', invoice_id: 'in_1', amount_cents: 1 }, { callId: 'b' });",
        '  // @ts-expect-error the result records a string',
        '  const recorded: number | undefined = line.result?.recorded;',
        '  void recorded;',
        '}',
        '',
      ].join('\n'),
    );
    try {
      const checked = await inConsumer(project, 'npx', ['--offline', 'tsc', '-p', '.', '--noEmit']).catch((err: { stdout: string }) => err);
      expect(checked.stdout).toBe('');
    } finally {
      fs.rmSync(probe);
    }
    expect(fs.existsSync(path.join(project, 'dist', 'worker.js'))).toBe(true);
    expect(fs.existsSync(path.join(project, 'node_modules', 'tsx'))).toBe(false);
  }, 240_000);

  it('survives a SIGKILL of its worker in the middle of each call: one invoice at the service, one line in the ledger', async () => {
    const taskQueue = uniqueId('team-tools');
    const workflowId = uniqueId('bill');
    const ledger = path.join(tmp, `${workflowId}.ledger`);
    const customer = 'cus_42';
    const amount = 1200;
    const env = consumerEnv({ TEMPORAL_TASK_QUEUE: taskQueue, BILLING_API_URL: billing.url });
    const worker = (failpoints = ''): WorkerProcess =>
      startWorkerProcess(path.join(project, 'dist', 'worker.js'), { SETTLE_FAILPOINTS: failpoints }, { cwd: project, env });
    const before = billing.effects().length;

    // 1. create_invoice: the service performed it and holds its response; worker A dies waiting for it.
    const held = billing.hold();
    const a = worker();
    const started = run(process.execPath, ['dist/start.js', workflowId, customer, String(amount), ledger], {
      cwd: project,
      env: { ...env, TEMPORAL_ADDRESS: inject('temporalAddress') },
    });
    started.catch(() => {}); // awaited below; a failure before then must not go unhandled
    const invoice = await Promise.race([held.reached, a.exited.then(() => Promise.reject(new Error(`worker A exited:\n${a.output()}`)))]);
    a.child.kill('SIGKILL');
    expect(await a.exited).toBe('SIGKILL');
    held.release();

    // 2. append_ledger_line: worker B takes over, settles the invoice, writes the line and is
    // SIGKILLed right after the write, before it records the result.
    const b = worker('settled.after_execute=kill');
    expect(await b.exited, b.output()).toBe('SIGKILL');
    expect(b.output()).toContain('settle failpoint: settled.after_execute → kill');
    expect(fs.readFileSync(ledger, 'utf8').split('\n').filter(Boolean)).toHaveLength(1);

    // 3. Worker C finds the ledger call in doubt; the probe finds the line; the workflow completes.
    const c = worker();
    const { stdout } = await started;
    c.child.kill('SIGTERM');
    await c.exited;
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      invoice: { resolution: string; invoiceId: string | null };
      ledger: { resolution: string } | null;
    };

    const invoiceKey = callKey({ workflowId, callId: 'invoice', tool: 'create_invoice', args: { customer, amount_cents: amount } });
    const effects = billing.effects().slice(before);
    expect(effects.map((e) => [e.collection, e.key])).toEqual([['invoices', invoiceKey]]);
    expect(invoice.id).toBe(effects[0]!.id);
    // The probe went downstream: the replay with the same key was answered from the stored response.
    expect(billing.requests().filter((r) => r.key === invoiceKey && r.status === 200).length).toBeGreaterThanOrEqual(2);

    const ledgerKey = callKey({
      workflowId,
      callId: 'ledger',
      tool: 'append_ledger_line',
      args: { ledger, invoice_id: invoice.id, amount_cents: amount },
    });
    expect(fs.readFileSync(ledger, 'utf8')).toBe(`${invoice.id} ${amount} ${ledgerKey}\n`);
    expect(result).toEqual({
      invoice: { resolution: 'settled_by_probe', invoiceId: invoice.id },
      ledger: { resolution: 'settled_by_probe' },
    });
  }, 240_000);
});
