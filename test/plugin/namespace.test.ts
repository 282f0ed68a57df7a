/**
 * A team's own namespace without settle's search attributes: the plugin's worker refuses to run
 * in one line that names them and the command that registers them (before, it polled, and every
 * settle workflow stalled on `BadSearchAttributes`). The command it prints, run as printed,
 * makes the next start succeed. Against the real dev server and the real Temporal CLI.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { NativeConnection, Worker } from '@temporalio/worker';
import { SettlePlugin } from '../../api/worker';
import { findTemporalCli } from '../../stack/temporal';
import { installRuntime } from '../../workers/runtime';
import { uniqueId } from '../support/env';
import { teamTools } from './fixtures/tools';

const namespace = uniqueId('team-ns');
let connection: NativeConnection;

function temporalCli(args: string[]): string {
  const cli = findTemporalCli();
  if (cli.kind !== 'binary') throw new Error('the tests need the Temporal CLI binary (npm test builds it into .settle/bin)');
  return execFileSync(cli.path, [...args, '--address', inject('temporalAddress')], { encoding: 'utf8' });
}

async function runPluginWorker(): Promise<unknown> {
  const worker = await Worker.create({
    plugins: [new SettlePlugin({ tools: [...teamTools], databaseUrl: inject('databaseUrl'), keyRing: null, warn: () => {} })],
    connection,
    namespace,
    taskQueue: uniqueId('team-ns-queue'),
  });
  const running = worker.run();
  // A worker that passed the check polls; stop it once it does.
  const stopper = setTimeout(() => worker.shutdown(), 3_000);
  try {
    await running;
    return null;
  } catch (err) {
    return err;
  } finally {
    clearTimeout(stopper);
  }
}

beforeAll(async () => {
  installRuntime('WARN');
  temporalCli(['operator', 'namespace', 'create', '--namespace', namespace]);
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
}, 60_000);

afterAll(async () => {
  // Workers refused before they ran may still hold a reference for a moment.
  await connection?.close().catch(() => {});
});

describe("a team's namespace without settle's search attributes", { timeout: 120_000 }, () => {
  it('refuses the worker in one line with the command to run; that command, run as printed, lets it start', async () => {
    let refusal: unknown = null;
    // A namespace just created takes a moment to reach every service of the server.
    for (let i = 0; i < 30 && !(refusal instanceof Error && /search attributes/.test(refusal.message)); i++) {
      refusal = await runPluginWorker();
      if (!(refusal instanceof Error && /search attributes/.test(refusal.message))) await new Promise((r) => setTimeout(r, 500));
    }
    expect(refusal).toBeInstanceOf(Error);
    const line = (refusal as Error).message;
    expect(line.split('\n')).toHaveLength(1);
    expect(line).toContain(`namespace ${namespace} lacks settle's search attributes SettleTrajectoryStatus (Keyword)`);
    expect(line).toContain('SettleInDoubtCount (Int)');
    const commands = line.slice(line.indexOf('Register them once: ') + 'Register them once: '.length).split(' && ');
    expect(commands.length).toBeGreaterThan(0);
    for (const command of commands) {
      const [program, ...args] = command.split(' ');
      expect(program).toBe('temporal');
      temporalCli(args);
    }
    // Registered attributes, too, take a moment to reach every service.
    let after: unknown = new Error('not started');
    for (let i = 0; i < 30 && after !== null; i++) {
      after = await runPluginWorker();
      if (after !== null) await new Promise((r) => setTimeout(r, 500));
    }
    expect(after).toBeNull();
  });
});
