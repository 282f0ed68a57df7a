/**
 * A checkout's `settle` runs a compiled copy of the sources (.settle/build/, bin/checkout-build.js):
 * it must behave exactly as the sources do, and must never run code older than the sources.
 * No timing here: start-up times are measured by `npm run bench` (bench/cli-startup.bench.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runNode, runSettle } from '../support/cli';
import { RUNTIME_DIRS } from '../../bin/compile.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const SOURCE_CLI = path.join(REPO, 'cli', 'main.ts');
const FALLBACK_NOTICE =
  /^settle: running the TypeScript sources through tsx \(slower start\): the compiled copy in \.settle\/build could not be brought up to date: /;

/** The sources as they run through tsx: what the compiled CLI must match. */
function runSources(args: string[], input?: string) {
  return runNode(['--import', 'tsx', SOURCE_CLI, ...args], { cwd: REPO, ...(input !== undefined ? { input } : {}) });
}

describe('the compiled CLI of a checkout', () => {
  const keyArgs = ['key', '--trajectory', 't-1', '--turn', '0', '--call-id', 'c1', '--tool', 'file_edit'];
  const cases: { args: string[]; input?: string }[] = [
    { args: ['--help'] },
    { args: [] },
    ...['demo', 'dev', 'console', 'migrate', 'key', 'canonicalize', 'tools', 'records', 'show', 'start', 'status', 'approve', 'resolve']
      .concat(['doctor', 'lint', 'stats', 'breakeven', 'cost', 'cap', 'operator'])
      .map((c) => ({ args: [c, '--help'] })),
    { args: ['cap', 'check', '--help'] },
    { args: ['operator', 'keygen', '--help'] },
    { args: [...keyArgs, '--args', '{"path":"/ws/a"}'] },
    { args: [...keyArgs, '--args', '{"a":1,"a":2}'] },
    { args: ['key', '--trajectory', 't-1'] },
    { args: ['no-such-command'] },
    { args: ['records', '--limit', '0'] },
    { args: ['canonicalize'], input: '{"b":1,"a":[2,{"d":3,"c":4}]}' },
    { args: ['canonicalize'], input: '{"a":' },
    { args: ['breakeven', '--gen-tokens', '40', '--mask-ms', '0.5', '--repair-ms', '900'] },
    { args: ['cap', 'check', '--cap', '/nonexistent', '--op', 'read', '--target', '/x', '--cost', '1', '--audience', 't'] },
    { args: ['operator', 'keygen', 'bad name!'] },
  ];

  it.each(cases)('settle $args prints what the sources print, with the same exit code', async ({ args, input }) => {
    const [compiled, sources] = await Promise.all([
      runSettle(args, { ...(input !== undefined ? { input } : {}) }),
      runSources(args, input),
    ]);
    expect(compiled.stderr).not.toMatch(FALLBACK_NOTICE);
    expect(compiled).toEqual(sources);
  });
});

describe('an out-of-date compiled copy', () => {
  let checkout: string;
  let mainTs: string;
  const settle = (args: string[]) => runNode([path.join(checkout, 'bin', 'settle.js'), ...args], { cwd: checkout });
  const description = async () => (await settle(['--help'])).stdout.split('\n')[2];
  const compiledMain = () => path.join(checkout, '.settle', 'build', 'cli', 'main.js');

  // A checkout of its own (the sources, bin/, package.json, tsconfig.json; node_modules linked): edits here touch nothing of the repository's.
  beforeAll(() => {
    checkout = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-checkout-'));
    for (const entry of [...RUNTIME_DIRS, 'bin', 'package.json', 'tsconfig.json']) {
      fs.cpSync(path.join(REPO, entry), path.join(checkout, entry), { recursive: true });
    }
    fs.symlinkSync(path.join(REPO, 'node_modules'), path.join(checkout, 'node_modules'));
    mainTs = path.join(checkout, 'cli', 'main.ts');
  });
  afterAll(() => fs.rmSync(checkout, { recursive: true, force: true }));

  it('is compiled on first use and then run as it is', async () => {
    const first = await settle(['--help']);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(fs.existsSync(compiledMain())).toBe(true);
    const before = fs.statSync(compiledMain()).mtimeMs;
    expect(await description()).toBe('Effect settlement for AI agents’ tool calls on Temporal and Postgres.');
    expect(fs.statSync(compiledMain()).mtimeMs).toBe(before);
  });

  it('is compiled again when a source changes, even when its modification time and size are put back', async () => {
    // A whole-second mtime, so that putting it back gives exactly the same one.
    const mtime = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000);
    fs.utimesSync(mainTs, mtime, mtime);
    expect((await settle(['--help'])).code).toBe(0);
    const stat = fs.statSync(mainTs);
    const text = fs.readFileSync(mainTs, 'utf8');
    // Same length, same mtime: only the content and the change time tell.
    fs.writeFileSync(mainTs, text.replace('Effect settlement for AI agents’', 'EFFECT SETTLEMENT FOR AI AGENTS’'));
    fs.utimesSync(mainTs, mtime, mtime);
    expect(fs.statSync(mainTs).mtimeMs).toBe(stat.mtimeMs);
    expect(fs.statSync(mainTs).size).toBe(stat.size);
    expect(await description()).toBe('EFFECT SETTLEMENT FOR AI AGENTS’ tool calls on Temporal and Postgres.');
  });

  it('is compiled again when a source is only touched', async () => {
    await settle(['--help']);
    const before = fs.statSync(compiledMain());
    fs.utimesSync(mainTs, new Date(), new Date(Date.now() + 5_000));
    const r = await settle(['--help']);
    expect(r.code).toBe(0);
    expect(fs.statSync(compiledMain()).mtimeMs).not.toBe(before.mtimeMs);
  });

  it('sees a change in a module a command imports only when it runs', async () => {
    const actions = path.join(checkout, 'cli', 'workbench-actions.ts');
    const text = fs.readFileSync(actions, 'utf8');
    fs.writeFileSync(actions, text.replace('p_break = L_gen', 'P_BREAK = L_gen'));
    const r = await settle(['breakeven', '--gen-tokens', '40', '--mask-ms', '0.5', '--repair-ms', '900']);
    expect(r.stdout).toMatch(/^P_BREAK = L_gen/);
    fs.writeFileSync(actions, text);
  });

  it('is compiled once when several commands start together after a change, and each runs the new code', async () => {
    const text = fs.readFileSync(mainTs, 'utf8');
    fs.writeFileSync(
      mainTs,
      text.replace(/\.description\('[^']*'\)\n {2}\.showHelpAfterError/, ".description('Together.')\n  .showHelpAfterError"),
    );
    const results = await Promise.all([1, 2, 3, 4].map(() => settle(['--help'])));
    for (const r of results) {
      expect(r.stderr).toBe('');
      expect(r.stdout.split('\n')[2]).toBe('Together.');
    }
    expect(fs.existsSync(path.join(checkout, '.settle', 'build.lock'))).toBe(false);
  });

  it('is not used when a source does not compile: the sources run through tsx, said in one line', async () => {
    const broken = path.join(checkout, 'cli', 'broken.ts');
    fs.writeFileSync(broken, 'export const x = ;\n');
    const stat = fs.statSync(compiledMain());
    const r = await settle(['key', '--trajectory', 't', '--turn', '0', '--call-id', 'c', '--tool', 'file_edit', '--args', '{}']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^[0-9a-f]{64}\n$/);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(FALLBACK_NOTICE);
    expect(lines[0]).toContain('cli/broken.ts:1:');
    // The copy was not vouched for meanwhile: the fix is picked up, compiled, and the notice gone.
    fs.rmSync(broken);
    const fixed = await settle(['--help']);
    expect(fixed.stderr).toBe('');
    expect(fs.statSync(compiledMain()).mtimeMs).not.toBe(stat.mtimeMs);
  });

  it('takes over the lock of a process that died while compiling', async () => {
    const lock = path.join(checkout, '.settle', 'build.lock');
    // A pid that is not running: a process started and finished.
    const gone = await runNode(['-e', 'console.log(process.pid)']);
    fs.writeFileSync(lock, gone.stdout.trim());
    fs.utimesSync(mainTs, new Date(), new Date(Date.now() + 10_000));
    const r = await settle(['--help']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(fs.existsSync(lock)).toBe(false);
  });
});
