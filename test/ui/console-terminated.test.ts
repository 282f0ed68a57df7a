/**
 * A trajectory ended from outside keeps the settle status its workflow last wrote (`running`): the
 * console reads it as what the run was doing when it ended, `TERMINATED (ended while running)`,
 * never as running. In a real Chromium, against the real Temporal and PostgreSQL.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { TypedSearchAttributes } from '@temporalio/common';
import { chromium, type Browser } from 'playwright-core';
import { SettleClient } from '../../client/index';
import { startConsole, type RunningConsole } from '../../cli/console/server';
import { SA_TRAJECTORY_STATUS } from '../../workflows/search-attributes';
import { openTestDb, testStore, uniqueId } from '../support/env';
import { onCall } from '../support/operator';

const CHROMIUM = process.env.SETTLE_CHROMIUM ?? '/usr/bin/chromium';
const db = openTestDb(2);
const store = testStore(db);
let browser: Browser;
let client: SettleClient | undefined;
let inbox: RunningConsole | undefined;

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
  await inbox?.close();
  await client?.close();
  await db.destroy();
});

describe('the console and a terminated trajectory', { timeout: 120_000 }, () => {
  it('reads TERMINATED (ended while running), not running', async () => {
    client = await SettleClient.connect({ address: inject('temporalAddress'), namespace: 'default', taskQueue: uniqueId('tq-none') });
    // A run whose settle status says `running` (as a workflow writes it), ended from outside.
    const trajectoryId = uniqueId('terminated');
    const handle = await client.client.workflow.start('trajectoryWorkflow', {
      taskQueue: client.taskQueue,
      workflowId: trajectoryId,
      args: [{ workspace: '/nonexistent', turns: [] }],
      typedSearchAttributes: new TypedSearchAttributes([{ key: SA_TRAJECTORY_STATUS, value: 'running' }]),
    });
    await handle.terminate('test: ended from outside');
    // Its call's effect is unknown.
    const key = crypto.randomBytes(32).toString('hex');
    await store.claim(
      { key, trajectoryId, turn: 0, callId: 'c', tool: 'file_edit', args: {} },
      { leaseMs: 60_000, holder: 'console-test' },
    );
    await store.markInDoubt(key, 1, 'test: effect unknown', 'worker:console-test');

    const { signer, keys } = onCall();
    inbox = await startConsole({ client, store, signer, keys, uiUrl: null, namespace: 'default' });
    const page = await browser.newPage();
    await page.goto(inbox.url);
    const state = await page.locator(`tr[data-key="${key}"] td.state`).textContent();
    expect(state).toContain('IN_DOUBT');
    expect(state).toContain('TERMINATED (ended while running)');
    await page.close();
  });
});
