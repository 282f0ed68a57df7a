/**
 * The suite runs on each supported Node.js line (.ci/run): the `node`, `npm` and `npx` that tests
 * spawn must be the node running the tests, or a line would be tested partly on another one.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

describe('the node under test', () => {
  it('is the node a test spawns by name', async () => {
    const { stdout } = await run('node', ['-p', 'process.execPath + " " + process.version']);
    expect(stdout.trim()).toBe(`${process.execPath} ${process.version}`);
  });

  it('runs npm, and the programs npx starts', async () => {
    const { stdout: npm } = await run('npm', ['version', '--json']);
    expect(`v${(JSON.parse(npm) as { node: string }).node}`).toBe(process.version);
    // Every node process prints its version first: npx's own, then tsc's (a `#!/usr/bin/env node` bin).
    const { stdout } = await run('npx', ['--no-install', 'tsc', '--version'], {
      env: { ...process.env, NODE_OPTIONS: '--import=data:text/javascript,console.log(process.version)' },
    });
    expect(stdout.trim().split('\n')).toEqual([process.version, process.version, expect.stringMatching(/^Version /)]);
  });
});
