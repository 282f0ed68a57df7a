/**
 * `settle console` as an on-call SRE uses it, in a real headless Chromium (Debian's `chromium`,
 * driven by playwright-core) against a real worker: a shell call left IN_DOUBT by a killed worker
 * and an A3 call waiting for approval are both listed with age, tool, target and generation; the
 * SRE settles the first as partial and approves the second by clicking; the records and
 * trajectories then say who did it (the operator whose key the console signs with), and the
 * approved call ran once. Without the access token nothing is served, and without the CSRF token
 * (or from another origin) nothing is written. A page on another loopback port, which the same
 * browser opens, gets neither the console's cookie nor its CSRF token, and cannot approve.
 * Screenshots land in .settle/artifacts/console/.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { chromium, type Browser, type Page } from 'playwright-core';
import { SettleClient } from '../../client/index';
import { SETTLE_DIR } from '../../stack/paths';
import { runSettle, SETTLE_BIN } from '../support/cli';
import { openTestDb, startTestWorker, tempWorkspace, testStore, uniqueId, type RunningWorker } from '../support/env';
import { TEST_OPERATOR } from '../support/operator';
import { inDoubtShellCall, until, type InDoubtShellCall } from '../support/in-doubt';

const CHROMIUM = process.env.SETTLE_CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = path.join(SETTLE_DIR, 'artifacts', 'console');
const db = openTestDb(2);
const store = testStore(db);
let connection: Connection;
let browser: Browser;
let worker: RunningWorker;
let doubt: InDoubtShellCall | undefined;
const consoleProcesses: ChildProcess[] = [];
const servers: http.Server[] = [];

beforeAll(async () => {
  // Fail, never skip: CI installs Chromium, and a missing browser must show.
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set SETTLE_CHROMIUM`);
  }
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  connection = await Connection.connect({ address: inject('temporalAddress') });
  worker = await startTestWorker();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
});
afterAll(async () => {
  for (const child of consoleProcesses) child.kill('SIGTERM');
  for (const server of servers) server.close();
  await browser?.close();
  await doubt?.worker.kill();
  await worker?.stop();
  await connection?.close();
  await db.destroy();
});

/** `settle console` as the operator starts it (their key in SETTLE_OPERATOR_KEY): the URL it prints. */
async function startConsoleProcess(): Promise<string> {
  const child = spawn(process.execPath, [SETTLE_BIN, 'console', '--ui-url', inject('uiUrl') ?? 'http://127.0.0.1:1'], {
    env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: inject('databaseUrl') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  consoleProcesses.push(child);
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  return until(
    async () => /(http:\/\/[0-9a-f]{32}\.settle\.localhost:\d+\/\?token=[A-Za-z0-9_-]{43})/.exec(out)?.[1],
    `the console's URL (output so far: ${out})`,
    60_000,
  );
}

/**
 * A raw request to loopback, with headers a browser would not let a page choose (Host). The
 * console's `*.localhost` name is resolved as a browser does (loopback), not by the system resolver.
 */
function request(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  const u = new URL(url);
  const headers = { Host: u.host, ...options.headers };
  return new Promise((resolve, reject) => {
    const target = { host: '127.0.0.1', port: u.port, path: `${u.pathname}${u.search}`, method: options.method ?? 'GET', headers };
    const req = http.request(target, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/**
 * Another program's web server on loopback, as any local process can run one: it keeps the
 * cookies browsers send it, and its page tries to read the console from the browser.
 */
async function neighbourServer(consolePort: number): Promise<{ port: number; cookies: string[]; reports: string[] }> {
  const cookies: string[] = [];
  const reports: string[] = [];
  const page = `<!doctype html><title>neighbour</title><script>
    for (const host of ['127.0.0.1', 'localhost']) {
      fetch('http://' + host + ':${consolePort}/', { credentials: 'include' })
        .then((r) => r.text()).then((t) => 'read ' + t.length, (e) => 'blocked ' + e.name)
        .then((what) => fetch('/report?' + encodeURIComponent(host + ': ' + what)));
    }
  </script>`;
  const server = http.createServer((req, res) => {
    cookies.push(req.headers.cookie ?? '');
    if (req.url?.startsWith('/report?')) reports.push(decodeURIComponent(req.url.slice('/report?'.length)));
    res.writeHead(200, { 'Content-Type': 'text/html' }).end(page);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, cookies, reports };
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

describe('settle console, as an on-call SRE uses it', { timeout: 300_000 }, () => {
  it('lists an in-doubt and a waiting call; settles one as partial and approves the other from the page; refuses requests without its tokens', async () => {
    const client = new Client({ connection });
    doubt = await inDoubtShellCall(client, store, { command: 'echo step1 >> deploy.log; echo step2 >> deploy.log' });
    const doubtGeneration = (await store.get(doubt.key))!.generation;

    // An A3 call waiting for approval (no record yet: it waits before its claim).
    const settle = new SettleClient(worker.client, worker.taskQueue);
    const a3 = uniqueId('a3');
    const a3Workspace = tempWorkspace('a3');
    await settle.start(a3, { workspace: a3Workspace, levelOverrides: { bash_execute: 'A3' } });
    // Long enough that a summary cut at 57 characters hid its last part (where the effect is).
    const command = "echo 'routine housekeeping of the build cache, nothing to see here' >> effects.log";
    const turn = settle.runTurn(a3, 0, [{ call_id: 'migrate', tool: 'bash_execute', args: { command } }]);
    const pending = await until(async () => {
      const s = await settle.status(a3);
      return s.status === 'waiting_approval' ? s : null;
    }, 'waiting_approval');
    const a3Key = pending.calls[0]!.key!;
    // `settle status` lists the waiting approval with the whole command.
    const status = await runSettle(['status', a3], { env: { TEMPORAL_ADDRESS: inject('temporalAddress') } });
    expect(status.stdout, status.stdout + status.stderr).toContain(
      `waiting for approval: ${a3Key.slice(0, 16)} turn 0 call migrate bash_execute ${JSON.stringify({ command, timeout_ms: 30000 })}\n`,
    );

    const url = await startConsoleProcess();
    const origin = new URL(url).origin;

    // No token, a wrong token, a rebound Host: refused with one line, nothing served.
    const bare = await request(`${origin}/`);
    expect(bare.status).toBe(403);
    expect(bare.body).toBe('access token: missing or wrong (open the URL settle console printed at start)\n');
    expect((await request(`${origin}/?token=${'A'.repeat(43)}`)).status).toBe(403);
    const rebound = await request(url, { headers: { Host: `evil.example:${new URL(url).port}` } });
    expect(rebound.status).toBe(403);
    // The refusal does not name the host the console answers under (that name is its secret).
    expect(rebound.body).toBe('Host: is not this console’s (open the URL settle console printed at start)\n');
    expect(rebound.body).not.toContain(new URL(url).hostname);
    for (const host of [`127.0.0.1:${new URL(url).port}`, `localhost:${new URL(url).port}`]) {
      expect((await request(url, { headers: { Host: host } })).status).toBe(403);
    }
    // The token buys an HttpOnly, SameSite=Strict cookie, and leaves the address bar.
    const first = await request(url);
    expect(first.status).toBe(303);
    expect(first.headers.location).toBe('/');
    const cookie = String(first.headers['set-cookie']);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).not.toMatch(/Domain=/i); // host-only: this start's secret name, nothing else
    const session = cookie.split(';')[0]!;
    // With the cookie but without the CSRF token (or from another origin), no write.
    const form = { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: session };
    const noCsrf = await request(`${origin}/approve`, {
      method: 'POST',
      headers: form,
      body: new URLSearchParams({ trajectoryId: a3, key: a3Key, decision: 'approve', reason: 'forged' }).toString(),
    });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body).toBe('csrf: missing or wrong (submit the form from the console page)\n');
    const page0 = await request(`${origin}/`, { headers: { Cookie: session } });
    const csrf = /name="csrf" value="([^"]+)"/.exec(page0.body)![1]!;
    const crossSite = await request(`${origin}/approve`, {
      method: 'POST',
      headers: { ...form, Origin: 'http://evil.example' },
      body: new URLSearchParams({ csrf, trajectoryId: a3, key: a3Key, decision: 'approve', reason: 'forged' }).toString(),
    });
    expect(crossSite.status).toBe(403);
    expect((await settle.status(a3)).status).toBe('waiting_approval');

    // The page: both calls, with age, tool, target, generation, and the operator from the key.
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    await page.goto(url, { waitUntil: 'load' });
    expect(page.url()).toBe(`${origin}/`);
    expect(await page.locator('#operator').innerText()).toBe(TEST_OPERATOR);
    const doubtRow = page.locator(`tr[data-key="${doubt.key}"]`);
    const a3Row = page.locator(`tr[data-key="${a3Key}"]`);
    await doubtRow.waitFor();
    await a3Row.waitFor();
    expect(await doubtRow.locator('.state').innerText()).toContain('IN_DOUBT');
    expect(await doubtRow.locator('.tool').innerText()).toBe('bash_execute');
    expect(await doubtRow.locator('.target').innerText()).toContain('command echo step1 >> deploy.log; echo step2 >> deploy.log');
    expect(await doubtRow.locator('.generation').innerText()).toBe(String(doubtGeneration));
    expect(await doubtRow.locator('.age').innerText()).toMatch(/^\d+(s|m \d+s)$/);
    expect(await doubtRow.locator('.saw').innerText()).toMatch(/probe/);
    expect(await doubtRow.locator('.trajectory a').getAttribute('href')).toBe(
      `${inject('uiUrl')}/namespaces/default/workflows/${encodeURIComponent(doubt.trajectoryId)}`,
    );
    expect(await a3Row.locator('.state').innerText()).toContain('waiting for approval');
    expect(await a3Row.locator('.tool').innerText()).toBe('bash_execute');
    // The whole arguments, escaped, not a summary: the appended `>> effects.log` shows.
    // (The validated arguments: what runs, with the default timeout filled in.)
    expect(await a3Row.locator('.target code').innerText()).toBe(JSON.stringify({ command, timeout_ms: 30000 }));
    expect(await a3Row.locator('.target .shortened').count()).toBe(0);
    expect(await a3Row.locator('.generation').innerText()).toBe('-');
    // Sortable by age: the in-doubt call is older, first when oldest come first, last otherwise.
    const order = async () => page.locator('#inbox tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key')));
    expect((await order()).indexOf(doubt.key)).toBeLessThan((await order()).indexOf(a3Key));
    await page.click('#sort-age');
    await page.waitForURL(/order=newest/);
    expect((await order()).indexOf(doubt.key)).toBeGreaterThan((await order()).indexOf(a3Key));
    await shot(page, '1-inbox');

    // Settle the in-doubt call as partial: step1 ran, step2 did not.
    await doubtRow.locator('input[name="reason"]').fill('deploy.log has step1, not step2');
    await doubtRow.locator('button[value="partial"]').click();
    await page.waitForURL(/done=/);
    expect(await page.locator('#notice').innerText()).toContain(`COMPLETED as partial (settled by operator:${TEST_OPERATOR})`);
    await shot(page, '2-settled-partial');

    // Approve the waiting call.
    await page.locator(`tr[data-key="${a3Key}"] input[name="reason"]`).fill('CHG-42');
    await page.locator(`tr[data-key="${a3Key}"] button[value="approve"]`).click();
    await page.waitForURL(/done=/);
    expect(await page.locator('#notice').innerText()).toContain(`approved ${a3Key.slice(0, 16)}… in ${a3} by operator:${TEST_OPERATOR}`);

    // The in-doubt call: COMPLETED by the operator, partial for the agent, never run again.
    const settled = (await store.get(doubt.key))!;
    expect(settled).toMatchObject({ state: 'COMPLETED', generation: doubtGeneration, settledBy: `operator:${TEST_OPERATOR}` });
    expect(settled.settleReason).toBe('deploy.log has step1, not step2');
    expect(settled.result).toMatchObject({ partial: true, exit_status: 1 });
    const doubtResult = (await doubt.handle.result()) as {
      calls: { resolution: string; observation: { partial?: boolean; error: string } }[];
    };
    expect(doubtResult.calls[0]!.resolution).toBe('settled_by_operator');
    expect(doubtResult.calls[0]!.observation.partial).toBe(true);
    expect(doubtResult.calls[0]!.observation.error).toMatch(/^partial: the effect happened in part/);
    const events = await store.events(doubt.key);
    expect(events.at(-1)).toMatchObject({ toState: 'COMPLETED', actor: `operator:${TEST_OPERATOR}` });

    // The approved call ran once, with the approver on the trajectory and in the audit trail.
    const ran = (await turn).calls[0]!;
    expect(ran).toMatchObject({
      resolution: 'executed',
      state: 'COMPLETED',
      attempts: 1,
      approval: { approver: TEST_OPERATOR, reason: 'CHG-42' },
    });
    expect(fs.readFileSync(path.join(a3Workspace, 'effects.log'), 'utf8')).toBe(
      'routine housekeeping of the build cache, nothing to see here\n',
    );
    expect((await store.get(a3Key))!).toMatchObject({ state: 'COMPLETED', generation: 1 });
    expect(JSON.stringify(await store.events(a3Key))).toContain(TEST_OPERATOR);
    await settle.finish(a3, 'completed', 'done');

    // Nothing of theirs left in the inbox.
    await page.goto(`${origin}/`, { waitUntil: 'load' });
    expect(await page.locator(`tr[data-key="${doubt.key}"], tr[data-key="${a3Key}"]`).count()).toBe(0);
    await shot(page, '3-inbox-after');
    await page.close();
  });

  it('a page on another loopback port gets neither the cookie nor the CSRF token, and cannot approve', async () => {
    const settle = new SettleClient(worker.client, worker.taskQueue);
    const a3 = uniqueId('a3-neighbour');
    await settle.start(a3, { workspace: tempWorkspace('a3-neighbour'), levelOverrides: { bash_execute: 'A3' } });
    const turn = settle.runTurn(a3, 0, [{ call_id: 'wipe', tool: 'bash_execute', args: { command: 'echo wiped >> wipe.log' } }]);
    const pending = await until(async () => {
      const s = await settle.status(a3);
      return s.status === 'waiting_approval' ? s : null;
    }, 'waiting_approval');
    const key = pending.calls[0]!.key!;

    // The operator opens the console: the browser now holds its cookie.
    const url = await startConsoleProcess();
    const consolePort = Number(new URL(url).port);
    const context = await browser.newContext();
    const operatorPage = await context.newPage();
    await operatorPage.goto(url, { waitUntil: 'load' });
    await operatorPage.locator(`tr[data-key="${key}"]`).waitFor();
    expect((await context.cookies()).map((c) => [c.name, c.domain])).toEqual([['settle_console', new URL(url).hostname]]);

    // Nor can a neighbour take the console's port on ::1, where a browser may look for the name first.
    const squatter = net.createServer();
    const squat = await new Promise<string>((resolve) => {
      squatter.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      squatter.listen(consolePort, '::1', () => resolve('listening'));
    });
    squatter.close();
    expect(['EADDRINUSE', 'EADDRNOTAVAIL']).toContain(squat);

    // The same browser visits a neighbour on another loopback port, under every name that reaches it.
    const neighbour = await neighbourServer(consolePort);
    const neighbourPage = await context.newPage();
    for (const host of ['127.0.0.1', 'localhost', 'neighbour.settle.localhost']) {
      await neighbourPage.goto(`http://${host}:${neighbour.port}/`, { waitUntil: 'load' });
      await until(async () => neighbour.reports.length >= 2 || null, `the neighbour page's reports from ${host}`);
      neighbour.reports.length = 0;
    }
    expect(neighbour.cookies.join(';')).not.toContain('settle_console');

    // What the neighbour then does with whatever it received, at every address it can name.
    const received = neighbour.cookies.filter(Boolean).join('; ');
    for (const host of [`127.0.0.1:${consolePort}`, `localhost:${consolePort}`]) {
      const read = await request(`http://${host}/`, { headers: { Cookie: received } });
      expect(read.status).toBe(403);
      expect(read.body).not.toContain('name="csrf"');
      const forged = await request(`http://${host}/approve`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: received },
        body: new URLSearchParams({ trajectoryId: a3, key, decision: 'approve', reason: 'neighbour' }).toString(),
      });
      expect(forged.status).toBe(403);
    }
    expect((await settle.status(a3)).status).toBe('waiting_approval');

    // The operator's own page still acts: deny it, and the call never ran.
    await operatorPage.reload({ waitUntil: 'load' });
    await operatorPage.locator(`tr[data-key="${key}"] input[name="reason"]`).fill('not today');
    await operatorPage.locator(`tr[data-key="${key}"] button[value="deny"]`).click();
    await operatorPage.waitForURL(/done=/);
    expect((await turn).calls[0]).toMatchObject({ resolution: 'denied', approval: { approver: TEST_OPERATOR, decision: 'deny' } });
    await settle.finish(a3, 'completed', 'done');
    await context.close();
  });
});
