/**
 * The local lane as an on-call SRE sees it, in a real headless Chromium against the test stack's
 * Temporal Web UI (2.42, from the Temporal CLI): a settled call run as a local activity is a
 * `core_local_activity` marker, not an activity task. What that UI shows of it, asserted as it is:
 *
 * - the event history lists it as "Local Activity" with its activity type and its summary, and
 *   the opened event shows its result or, for an attempt that ended IN_DOUBT, the SettleInDoubt
 *   failure;
 * - "Events with Metadata" (User Metadata) lists it with its summary and a status badge that reads
 *   "Unspecified" whatever its outcome: never "Completed" for the attempt in doubt, but never
 *   "Failed" either (an activity-lane attempt reads "Completed" or "Failed");
 * - the timeline labels it by activity type only (no summary), with the same icon either way.
 *
 * So the outcome an SRE reads at a glance is `settle status` and the current details; the
 * in-doubt attempt's probe (an activity) carries the call's summary and "after IN_DOUBT".
 * Screenshots land in .settle/artifacts/web-ui/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { SettleClient } from '../../client/index';
import { SETTLE_DIR } from '../../stack/paths';
import type { WorkerProcess } from '../../chaos/infra/worker-process';
import { runSettle } from '../support/cli';
import { startTestWorker, tempWorkspace, uniqueId, type RunningWorker } from '../support/env';
import { until, workerProcess } from '../support/in-doubt';

const CHROMIUM = process.env.SETTLE_CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = path.join(SETTLE_DIR, 'artifacts', 'web-ui');
let connection: Connection;
let browser: Browser;
let activityLane: RunningWorker;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set SETTLE_CHROMIUM`);
  }
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  connection = await Connection.connect({ address: inject('temporalAddress') });
  [browser, activityLane] = await Promise.all([
    chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    }),
    startTestWorker({ policy: { lanes: { file_edit: 'activity' } } }),
  ]);
});
afterAll(async () => {
  await browser?.close();
  for (const w of workers) w.child.kill('SIGKILL');
  await activityLane?.stop();
  await connection?.close();
});

const edit = (callId: string, file: string, to: string) => ({
  call_id: callId,
  tool: 'file_edit',
  args: { path: file, old_str: 'replicas=1', new_str: `replicas=${to}` },
});

/** A call's summary on the timeline (workflows/settled-call.ts): tool, target, key's first 6 hex digits. */
const summaryOf = (file: string) => new RegExp(`^file_edit ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} · key [0-9a-f]{6}…`);

/** The trajectory's page, once its event history lists `type` events. */
async function openTrajectory(id: string, type: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1600, height: 2000 } });
  await page.goto(`${inject('uiUrl')}/namespaces/default/workflows/${encodeURIComponent(id)}`, { waitUntil: 'load' });
  await eventRows(page, type).first().waitFor({ timeout: 60_000 });
  return page;
}

function eventRows(page: Page, type: string): Locator {
  return page.locator('tr').filter({ hasText: type });
}

/** The non-empty lines of an element's text. */
async function lines(el: Locator): Promise<string[]> {
  return (await el.innerText())
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}

/** "Events with Metadata" (User Metadata tab): [event kind, summary, status badge] per event, in history order. */
async function eventsWithMetadata(page: Page, count: number): Promise<string[][]> {
  await page.getByText('User Metadata').first().click();
  const heading = page.getByText('Events with Metadata').first();
  await heading.waitFor({ timeout: 30_000 });
  return until(
    async () => {
      const text = await page.locator('main').innerText();
      const section = text.slice(text.indexOf('Events with Metadata') + 'Events with Metadata'.length);
      const cells = section.split('\n').map((l) => l.trim());
      const end = cells.indexOf('Current Details');
      const filled = cells.slice(0, end < 0 ? undefined : end).filter(Boolean);
      const rows = Array.from({ length: Math.floor(filled.length / 3) }, (_, i) => filled.slice(3 * i, 3 * i + 3));
      return rows.length >= count ? rows : null;
    },
    `${count} events with metadata`,
    30_000,
  );
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

describe('the local lane in the Temporal Web UI and settle status', { timeout: 300_000 }, () => {
  it('lists local calls with their summaries; the attempt that ended IN_DOUBT shows its failure, never "Completed"', async () => {
    const ui = inject('uiUrl');
    expect(ui, 'the test stack runs the Web UI').toBeTruthy();
    const client = new Client({ connection });
    const workspace = tempWorkspace('ui-local');
    const config = path.join(workspace, 'config.txt');
    const other = path.join(workspace, 'other.txt');
    fs.writeFileSync(config, 'replicas=1\n');
    fs.writeFileSync(other, 'replicas=1\n');
    const taskQueue = uniqueId('tq-ui-local');
    const id = uniqueId('ui-local');
    // Turn 0's edit: its worker is killed right after the rename, inside the local activity; the
    // next worker's attempt finds the record IN_DOUBT and a probe settles it. Turn 1's runs plainly.
    const handle = await new SettleClient(client, taskQueue).start(id, {
      workspace,
      leaseMs: 2_000,
      turns: [
        { turn: 0, calls: [edit('scale', config, '2')] },
        { turn: 1, calls: [edit('other', other, '3')] },
      ],
    });
    const doomed = workerProcess(taskQueue, 'file_edit.after_rename=kill');
    workers.push(doomed);
    expect((await doomed.exited).signal).toBe('SIGKILL');
    workers.push(workerProcess(taskQueue));
    const result = await handle.result();
    expect(result.calls.map((c) => [c.callId, c.resolution, c.state, c.probes ?? 0])).toEqual([
      ['scale', 'settled_by_probe', 'COMPLETED', 1],
      ['other', 'executed', 'COMPLETED', 0],
    ]);
    expect(fs.readFileSync(config, 'utf8')).toBe('replicas=2\n');

    // The search attributes, as for an activity-lane call: while the probe ran, the trajectory was
    // waiting_probe with one call in doubt; it ended completed with none.
    expect(await attributeUpserts(client, id)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ SettleTrajectoryStatus: 'waiting_probe', SettleInDoubtCount: 1 }),
        expect.objectContaining({ SettleTrajectoryStatus: 'completed', SettleInDoubtCount: 0 }),
      ]),
    );

    // 1. The event history. The attempt that found the call in doubt is a "Local Activity" event
    // with its type and summary; having met a dead worker's trace, the run left the local lane
    // (PATCH_LOCAL_TRACE): the probe, the replay of turn 0's settled result and turn 1's edit are
    // activities, each with its summary.
    const page = await openTrajectory(id, 'Local Activity');
    const local = eventRows(page, 'Local Activity').filter({ hasText: 'executeToolCall' });
    await until(async () => (await local.count()) === 1, 'one executeToolCall local activity');
    const inDoubt = local.nth(0);
    expect((await lines(inDoubt)).at(-1)).toMatch(new RegExp(`${summaryOf(config).source}$`));
    const scheduled = eventRows(page, 'Activity Task Scheduled').filter({ hasText: 'executeToolCall' });
    await until(async () => (await scheduled.count()) === 2, 'two executeToolCall activities');
    // Descending: turn 1's edit, then the replay of turn 0's settled result.
    expect((await lines(scheduled.nth(0))).at(-1)).toMatch(summaryOf(other));
    expect((await lines(scheduled.nth(1))).at(-1)).toMatch(new RegExp(`${summaryOf(config).source} · replay: settled applied by probe$`));
    // The probe that followed is an activity, with the call's summary.
    const probe = eventRows(page, 'Activity Task Scheduled').filter({ hasText: 'probeToolCall' });
    expect((await lines(probe)).at(-1)).toMatch(
      new RegExp(`^probe ${summaryOf(config).source.slice(1)} · after IN_DOUBT \\(gen 1, round 1\\)$`),
    );
    await shot(page, 'local-1-history');

    // 2. Opened, the attempt in doubt shows its failure.
    await inDoubt.click();
    const failure = page.getByText(/"type": "SettleInDoubt"/).first();
    await failure.waitFor({ timeout: 30_000 });
    const opened = await page.locator('main').innerText();
    expect(opened).toMatch(/"message": "IN_DOUBT at generation 1: lease expired while IN_FLIGHT/);
    expect(opened).toContain('"nonRetryable": true');
    await shot(page, 'local-2-in-doubt-opened');

    // 3. Events with Metadata: a local attempt reads "Unspecified" whatever its outcome, so the
    // attempt in doubt is never "Completed"; the activities read "Completed". First, the run's one
    // question of which host holds its workspace (docs/deploying.md#workers-on-several-hosts).
    const events = await eventsWithMetadata(page, 5);
    expect(events).toEqual([
      ['Local Activity', `locate workspace ${workspace}`, 'Unspecified'],
      ['Local Activity', expect.stringMatching(summaryOf(config)), 'Unspecified'],
      ['Activity', expect.stringMatching(/^probe file_edit .* · after IN_DOUBT \(gen 1, round 1\)$/), 'Completed'],
      ['Activity', expect.stringMatching(/ · replay: settled applied by probe$/), 'Completed'],
      ['Activity', expect.stringMatching(summaryOf(other)), 'Completed'],
    ]);
    await frameWith(page, 'completed 2 calls');
    await shot(page, 'local-3-events-with-metadata');
    await page.close();

    // 4. settle status: the calls query lists both local calls with their resolutions.
    const env = { TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_TASK_QUEUE: taskQueue };
    const json = await runSettle(['status', id, '--json'], { env });
    expect(json.stderr).toBe('');
    expect(JSON.parse(json.stdout)).toMatchObject({
      runStatus: 'COMPLETED',
      status: 'completed',
      inDoubt: 0,
      calls: [
        { callId: 'scale', tool: 'file_edit', state: 'COMPLETED', resolution: 'settled_by_probe', probes: 1 },
        { callId: 'other', tool: 'file_edit', state: 'COMPLETED', resolution: 'executed' },
      ],
    });
    const table = await runSettle(['status', id], { env });
    expect(table.code).toBe(0);
    const rows = table.stdout.split('\n');
    expect(rows.find((r) => /^0 +scale +file_edit /.test(r))).toMatch(/ COMPLETED +settled_by_probe /);
    expect(rows.find((r) => /^1 +other +file_edit /.test(r))).toMatch(/ COMPLETED +executed /);
  });

  it('the same call in the activity lane (SETTLE_LANES=file_edit=activity) reads "Activity … Completed"', async () => {
    const workspace = tempWorkspace('ui-activity');
    const file = path.join(workspace, 'config.txt');
    fs.writeFileSync(file, 'replicas=1\n');
    const id = uniqueId('ui-activity');
    const handle = await new SettleClient(activityLane.client, activityLane.taskQueue).start(id, {
      workspace,
      turns: [{ turn: 0, calls: [edit('scale', file, '2')] }],
    });
    expect((await handle.result()).calls[0]).toMatchObject({ resolution: 'executed', state: 'COMPLETED' });
    const page = await openTrajectory(id, 'Activity Task Scheduled');
    const events = await eventsWithMetadata(page, 2);
    expect(events).toEqual([
      ['Local Activity', `locate workspace ${workspace}`, 'Unspecified'],
      ['Activity', expect.stringMatching(summaryOf(file)), 'Completed'],
    ]);
    await shot(page, 'local-4-activity-lane');
    await page.close();
  });
});

/** The values each search-attribute upsert of the trajectory's history set, in order. */
async function attributeUpserts(client: Client, id: string): Promise<Record<string, unknown>[]> {
  const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
  return events.flatMap((e) => {
    const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    if (!fields) return [];
    const values = Object.entries(fields).map(([k, p]) => [k, JSON.parse(Buffer.from(p.data!).toString('utf8')) as unknown]);
    return [Object.fromEntries(values) as Record<string, unknown>];
  });
}

/** Waits for a frame of the page (the current details are Markdown in an iframe) to show `text`. */
async function frameWith(page: Page, text: string): Promise<void> {
  await until(
    async () => {
      for (const frame of page.frames()) {
        const body = await frame
          .locator('body')
          .innerText({ timeout: 1_000 })
          .catch(() => '');
        if (body.includes(text)) return true;
      }
      return false;
    },
    `a frame showing ${JSON.stringify(text)}`,
    30_000,
  );
}
