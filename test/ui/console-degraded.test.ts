/**
 * The console tells the truth when a piece is down, and shows what it can read. In a real
 * Chromium against a console whose Temporal connection runs through a TCP relay the test cuts:
 *
 * - its worker gone, a trajectory waiting for approval keeps its row, marked "no worker polls <queue>";
 * - a lapsed lease that no sweeper takes says no worker runs (not "refresh");
 * - Temporal unreachable: the records still come from PostgreSQL, under a banner saying so (not a 502);
 * - `settle console` started while Temporal is already down starts, says so, and shows PostgreSQL's records.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sql } from 'kysely';
import { chromium, type Browser } from 'playwright-core';
import { SettleClient } from '../../client/index';
import { startConsole, type RunningConsole } from '../../cli/console/server';
import { openTestDb, startTestWorker, tempWorkspace, testStore, uniqueId, type RunningWorker } from '../support/env';
import { onCall } from '../support/operator';
import { until } from '../support/in-doubt';
import { SETTLE_BIN } from '../support/cli';
import { freePort } from '../../stack/ports';

const CHROMIUM = process.env.SETTLE_CHROMIUM ?? '/usr/bin/chromium';
const db = openTestDb(2);
const store = testStore(db);
let browser: Browser;
let worker: RunningWorker | undefined;
let relay: { address: string; cut(): void } | undefined;
let consoleClient: SettleClient | undefined;
let inbox: RunningConsole | undefined;
let consoleProcess: ChildProcess | undefined;

/** A TCP relay to Temporal: cut() closes it and every connection through it, as a network partition would. */
async function tcpRelay(target: string): Promise<{ address: string; cut(): void }> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((down) => {
    const up = net.connect({ host, port });
    for (const s of [down, up]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => sockets.delete(s));
    }
    down.pipe(up).pipe(down);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    cut: () => {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set SETTLE_CHROMIUM`);
  }
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
});
afterAll(async () => {
  await browser?.close();
  consoleProcess?.kill('SIGKILL');
  await inbox?.close();
  await consoleClient?.close().catch(() => {});
  relay?.cut();
  await worker?.stop();
  await db.destroy();
});

describe('settle console with pieces down', { timeout: 400_000 }, () => {
  it('keeps a waiting approval without its worker, says no sweeper runs, and shows the records with Temporal unreachable', async () => {
    // A trajectory waiting for approval of an A3 call; then its worker goes.
    worker = await startTestWorker();
    const settle = new SettleClient(worker.client, worker.taskQueue);
    const a3 = uniqueId('a3-orphan');
    await settle.start(a3, { workspace: tempWorkspace('a3-orphan'), levelOverrides: { bash_execute: 'A3' } });
    void settle.runTurn(a3, 0, [{ call_id: 'migrate', tool: 'bash_execute', args: { command: 'true' } }]).catch(() => {});
    await until(async () => (await settle.status(a3)).status === 'waiting_approval', 'waiting_approval');
    await worker.stop();
    worker = undefined;

    // An IN_DOUBT record, and an IN_FLIGHT record whose lease lapsed a minute ago.
    const record = async (label: string) => {
      const key = crypto.randomBytes(32).toString('hex');
      const trajectoryId = uniqueId(label);
      await store.claim(
        { key, trajectoryId, turn: 0, callId: 'c', tool: 'file_edit', args: {} },
        { leaseMs: 60_000, holder: 'console-test' },
      );
      return key;
    };
    const doubt = await record('console-doubt');
    await store.markInDoubt(doubt, 1, 'test: effect unknown', 'worker:console-test');
    const lapsed = await record('console-lapsed');
    await sql`UPDATE settle_endpoint_records SET lease_until = now() - interval '1 minute' WHERE key = ${lapsed}`.execute(db);

    relay = await tcpRelay(inject('temporalAddress'));
    consoleClient = await SettleClient.connect({ address: relay.address, namespace: 'default' });
    const { signer, keys } = onCall();
    inbox = await startConsole({ client: consoleClient, store, signer, keys, uiUrl: null, namespace: 'default' });
    const page = await browser.newPage();
    await page.goto(inbox.url);

    // A sweeper of another test's worker must not take the lapsed record while the page is read: a row lock keeps them off.
    const readWithLapsedHeld = () =>
      db.transaction().execute(async (trx) => {
        await sql`SELECT 1 FROM settle_endpoint_records WHERE key = ${lapsed} FOR UPDATE`.execute(trx);
        await page.goto(new URL('/', inbox!.url).toString());
        return page;
      });

    // The approval's row stays, saying why it cannot be read (once Temporal no longer lists its worker's poller).
    const approvalRow = page.locator(`tr[data-kind="approval"]:has(td.trajectory:text("${a3}"))`);
    await until(
      async () => {
        await readWithLapsedHeld();
        return (await approvalRow.locator('.unreadable').textContent())?.includes('no worker polls');
      },
      'the approval row marked "no worker polls"',
      180_000,
    );
    expect(await approvalRow.locator('.unreadable').textContent()).toContain(`no worker polls ${settle.taskQueue}`);
    const lapsedRow = page.locator(`tr[data-key="${lapsed}"]`);
    expect(await lapsedRow.locator('td.action').textContent()).toMatch(/no lease sweeper has taken it in \d+m \d+s: no worker runs/);
    expect(await lapsedRow.locator('td.action').textContent()).not.toContain('refresh');
    expect(await page.locator('.missing').count()).toBe(0);

    // Temporal unreachable: the page still answers, with the records from PostgreSQL under a banner.
    relay.cut();
    const response = await page.goto(new URL('/', inbox.url).toString());
    expect(response?.status()).toBe(200);
    expect(await page.locator('.missing').textContent()).toMatch(
      /^Temporal is unreachable \(.+\): calls waiting for approval, probe rounds and trajectory states are not shown; the records below come from PostgreSQL$/,
    );
    expect(await page.locator(`tr[data-key="${doubt}"] td.state`).textContent()).toContain('IN_DOUBT');
    await page.close();
  });

  it('starts while Temporal is already down, says so, and shows the records PostgreSQL holds', async () => {
    const key = crypto.randomBytes(32).toString('hex');
    await store.claim(
      { key, trajectoryId: uniqueId('console-cold'), turn: 0, callId: 'c', tool: 'file_edit', args: {} },
      { leaseMs: 60_000, holder: 'console-test' },
    );
    await store.markInDoubt(key, 1, 'test: effect unknown', 'worker:console-test');
    const closed = `127.0.0.1:${await freePort()}`; // nothing listens there

    const child = spawn(process.execPath, [SETTLE_BIN, 'console'], {
      env: { ...process.env, TEMPORAL_ADDRESS: closed, DATABASE_URL: inject('databaseUrl') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    consoleProcess = child;
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    const exited = new Promise<number | null>((r) => child.once('close', r));
    const said = await Promise.race([
      until(async () => /^Temporal is unreachable/m.test(out) && out, 'the console saying Temporal is unreachable', 60_000),
      exited.then((code) => Promise.reject(new Error(`settle console exited ${code}: ${err}`))),
    ]);
    const url = /^settle console for operator [^:]+: (\S+)$/m.exec(said)![1]!;
    expect(said).toMatch(
      new RegExp(
        `^Temporal is unreachable \\(.+\\): the console shows the records PostgreSQL holds, and what Temporal knows once it answers$`,
        'm',
      ),
    );

    const page = await browser.newPage();
    const response = await page.goto(url);
    expect(response?.status()).toBe(200);
    expect(await page.locator('.missing').textContent()).toMatch(
      /^Temporal is unreachable \(.+\): .* the records below come from PostgreSQL$/,
    );
    expect(await page.locator(`tr[data-key="${key}"] td.state`).textContent()).toContain('IN_DOUBT');
    await page.close();
    child.kill('SIGINT');
    expect({ code: await exited, err }).toEqual({ code: 0, err: '' });
  });
});
