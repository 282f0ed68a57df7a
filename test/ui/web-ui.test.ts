/**
 * What an on-call SRE sees in the Temporal Web UI, in a real headless Chromium (Debian's
 * `chromium`, driven by playwright-core) against the test stack's UI: filter by a settle search
 * attribute, open a trajectory waiting for an operator, read its summary, key, state and the
 * unblock command exactly as it must be pasted, settle it with the CLI, see it completed.
 * Screenshots land in .settle/artifacts/web-ui/ (git-ignored; CI keeps them as artifacts).
 *
 * The UI never reaches `networkidle` (it polls), so pages wait for `load` and then for what they
 * must show. Current details are rendered as Markdown inside an iframe.
 *
 * A page under a DNS name rebound to 127.0.0.1 (Chromium's resolver rules stand in for the
 * attacker's DNS) gets neither the UI, nor its API, nor its CSRF cookie.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { chromium, type Browser, type Frame, type Page } from 'playwright-core';
import { SETTLE_DIR } from '../../stack/paths';
import { openTestDb, testStore } from '../support/env';
import { TEST_OPERATOR } from '../support/operator';
import { inDoubtShellCall, until, type InDoubtShellCall } from '../support/in-doubt';

const CHROMIUM = process.env.SETTLE_CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = path.join(SETTLE_DIR, 'artifacts', 'web-ui');
const db = openTestDb(2);
const store = testStore(db);
const cliEnv = { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: inject('databaseUrl') };
let connection: Connection;
let browser: Browser;
let call: InDoubtShellCall | undefined;

beforeAll(async () => {
  // Fail, never skip: CI installs Chromium (.ci/run), and a missing browser must show.
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set SETTLE_CHROMIUM`);
  }
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  connection = await Connection.connect({ address: inject('temporalAddress') });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
});
afterAll(async () => {
  await browser?.close();
  await call?.worker.kill();
  await connection?.close();
  await db.destroy();
});

/** The frame (page or iframe) whose text contains `text`, once it shows. */
async function frameWith(page: Page, text: string, timeoutMs = 60_000): Promise<Frame> {
  return until(
    async () => {
      for (const frame of page.frames()) {
        const body = await frame
          .locator('body')
          .innerText({ timeout: 1_000 })
          .catch(() => '');
        if (body.includes(text)) return frame;
      }
      return null;
    },
    `a frame showing ${JSON.stringify(text)}`,
    timeoutMs,
  );
}

/** Runs a command line in a shell, as an operator pasting it would. */
function shell(commandLine: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', commandLine], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

describe('the Temporal Web UI, as an on-call SRE uses it', { timeout: 300_000 }, () => {
  it('finds the trajectory by SettleTrajectoryStatus, shows summary, key, state and the exact command; the CLI settles it', async () => {
    const ui = inject('uiUrl');
    expect(ui, 'the test stack runs the Web UI').toBeTruthy();
    const summary = 'SRE drill: deploy of ticket 4711';
    call = await inDoubtShellCall(new Client({ connection }), store, { summary });
    const { trajectoryId, key } = call;
    // The generation in doubt, as `settle show` gives it: the command shown must be fenced to it.
    const generation = (await store.get(key))!.generation;
    const page = await browser.newPage({ viewport: { width: 1600, height: 1200 } });

    // 1. The list, filtered by a settle search attribute.
    const query = encodeURIComponent(`SettleTrajectoryStatus = "waiting_operator" AND WorkflowId = "${trajectoryId}"`);
    await page.goto(`${ui}/namespaces/default/workflows?query=${query}`, { waitUntil: 'load' });
    const link = page
      .locator(`a[href$="/workflows/${encodeURIComponent(trajectoryId)}"], a[href*="/workflows/${encodeURIComponent(trajectoryId)}/"]`)
      .first();
    await link.waitFor({ timeout: 60_000 });
    await shot(page, '1-list-waiting-operator');

    // 2. The trajectory's user metadata: static summary, current details with key, state and commands.
    await link.click();
    await page.waitForLoadState('load');
    await page.getByText('User Metadata').first().click();
    await frameWith(page, summary);
    const details = await frameWith(page, 'waiting for an operator');
    const text = await details.locator('body').innerText();
    const applied = `npx settle resolve ${key} \\\n  --generation ${generation} --as applied --reason 'what you checked'`;
    // Verbatim: no en dash for "--", no curly quotes, the whole key.
    expect(text).toContain(applied);
    expect(text).toContain(`npx settle resolve ${key} \\\n  --generation ${generation} --as not-applied --reason 'what you checked'`);
    // A short first line, then the call: nothing for the pane to cut.
    const [first, second] = text.split('\n').filter((l) => l.trim());
    expect(first).toMatch(/^waiting for an operator · since \S+ \S+ UTC$/);
    expect(second).toBe(`bash_execute echo deployed >> deploy.log · key ${key.slice(0, 16)} · no deadline`);
    // Every line of the details shows: the pane is as tall and as wide as the text it renders.
    const pane = await details.frameElement();
    const fit = await pane.evaluate((el) => {
      const frame = el.getBoundingClientRect();
      const doc = (
        el as unknown as {
          contentDocument: {
            body: {
              querySelectorAll(
                s: string,
              ): ArrayLike<{ textContent: string | null; getBoundingClientRect(): { bottom: number; right: number } }>;
            };
          };
        }
      ).contentDocument;
      const texts = Array.from(doc.body.querySelectorAll('p, pre, li')).filter((e) => (e.textContent ?? '').trim() !== '');
      return {
        height: frame.height,
        width: frame.width,
        bottom: Math.max(...texts.map((e) => e.getBoundingClientRect().bottom)),
        right: Math.max(...texts.map((e) => e.getBoundingClientRect().right)),
      };
    });
    expect(fit.bottom).toBeLessThanOrEqual(fit.height);
    expect(fit.right).toBeLessThanOrEqual(fit.width);
    expect(text).toContain('IN_DOUBT');
    expect(text).not.toMatch(/[–—‘’“”]/);
    await shot(page, '2-trajectory-waiting-operator');
    // Never green for the uncertain: the attempt that ended IN_DOUBT reads "Failed" among the
    // events with metadata (its summary, then its badge), not "Completed".
    const attempt = page.getByText(/^bash_execute echo deployed >> deploy\.log · key/).first();
    await attempt.waitFor({ timeout: 30_000 });
    const row = (await attempt.locator('xpath=../..').innerText()).split('\n').filter((l) => l.trim());
    expect(row).toEqual(['Activity', expect.stringMatching(/^bash_execute echo deployed >> deploy\.log · key/), 'Failed']);
    // Nor for a probe that could not tell: it reads "Failed" too (SettleProbeUnknown), not a green "Completed".
    const probe = page.getByText(/^probe bash_execute echo deployed >> deploy\.log · key .* after IN_DOUBT/).first();
    await probe.waitFor({ timeout: 30_000 });
    const probeRow = (await probe.locator('xpath=../..').innerText()).split('\n').filter((l) => l.trim());
    expect(probeRow).toEqual([
      'Activity',
      expect.stringMatching(/^probe bash_execute echo deployed >> deploy\.log · key .* after IN_DOUBT/),
      'Failed',
    ]);

    // 3. Paste the command as shown, with a reason, into a shell in the project (the operator's key,
    // from the environment, names who): `npx settle` runs the project's own bin, no PATH entry needed.
    const onPath = await shell('command -v settle', cliEnv);
    expect(onPath.stdout).toBe('');
    expect(onPath.code).not.toBe(0);
    const pasted = applied.replace("'what you checked'", "'deploy.log has the line'");
    const resolved = await shell(pasted, cliEnv);
    expect(resolved.stderr).toBe('');
    expect(resolved.code).toBe(0);
    expect(resolved.stdout).toContain(`settled by operator:${TEST_OPERATOR}`);

    // 4. Completed, as the UI shows it.
    await call.handle.result();
    await page.reload({ waitUntil: 'load' });
    await frameWith(page, 'completed 1 calls');
    await shot(page, '3-trajectory-completed');
    await page.close();
  });

  it('refuses a page under a rebound DNS name: no UI, no API, no CSRF cookie; the real names still work', async () => {
    const ui = inject('uiUrl')!;
    const port = new URL(ui).port;
    const rebound = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--host-resolver-rules=MAP evil.example 127.0.0.1',
      ],
    });
    try {
      const page = await rebound.newPage();
      for (const path of ['/', '/api/v1/namespaces', '/api/v1/namespaces/default/workflows']) {
        const refused = (await page.goto(`http://evil.example:${port}${path}`, { waitUntil: 'load' }))!;
        expect(refused.status()).toBe(421);
        expect((await page.locator('body').innerText()).trim()).toBe(
          `Host: must be 127.0.0.1:${port} or localhost:${port} (got "evil.example:${port}")`,
        );
      }
      expect(await page.context().cookies()).toEqual([]);
      for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
        const answered = (await page.goto(`${origin}/api/v1/namespaces`, { waitUntil: 'load' }))!;
        expect(answered.status()).toBe(200);
        expect(await page.locator('body').innerText()).toContain('"default"');
      }
    } finally {
      await rebound.close();
    }
  });
});
