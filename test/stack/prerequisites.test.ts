/**
 * `npm test` on a machine without the system programs the suite drives stops within seconds with
 * one line naming the install command (scripts/test-prerequisites.ts, the `pretest` script),
 * instead of failing test after test on its own timeout.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runNode } from '../support/cli';

const SCRIPT = path.resolve('scripts/test-prerequisites.ts');

describe('test prerequisites', () => {
  it('names the exact install command in one line when a program is missing and nothing can install it', async () => {
    const emptyPath = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-no-apt-'));
    const r = await runNode(['--import', 'tsx', SCRIPT], {
      cwd: process.cwd(),
      // No apt-get and no sudo on PATH; a bubblewrap that does not exist.
      env: { PATH: emptyPath, SETTLE_BWRAP: path.join(emptyPath, 'bwrap'), SETTLE_PROMTOOL: process.execPath },
    });
    fs.rmSync(emptyPath, { recursive: true, force: true });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([
      'settle tests need bubblewrap: run `sudo apt-get install -y bubblewrap` (Debian/Ubuntu; the same packages elsewhere), then npm test again',
    ]);
  });

  it('passes quietly where everything is installed', async () => {
    const r = await runNode(['--import', 'tsx', SCRIPT], { cwd: process.cwd() });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('names every missing program in the one line (promtool included)', async () => {
    const emptyPath = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-no-apt-'));
    const r = await runNode(['--import', 'tsx', SCRIPT], {
      cwd: process.cwd(),
      env: { PATH: emptyPath, SETTLE_BWRAP: process.execPath },
    });
    fs.rmSync(emptyPath, { recursive: true, force: true });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([
      'settle tests need prometheus: run `sudo apt-get install -y prometheus` (Debian/Ubuntu; the same packages elsewhere), then npm test again',
    ]);
  });
});
