/**
 * Where settle's state lives (activities/state-dir.ts): the project's `.settle`, found from the
 * current directory, never inside node_modules, or the directory SETTLE_STATE_DIR names.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveStateDir, SETTLE_DIR } from '../../activities/state-dir';

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'settle-state-dir-')));
const project = path.join(tmp, 'team');
const installed = path.join(project, 'node_modules', 'settle');
fs.mkdirSync(path.join(installed, 'dist', 'cli'), { recursive: true });
fs.mkdirSync(path.join(project, 'src', 'deep'), { recursive: true });
fs.writeFileSync(path.join(project, 'package.json'), '{}');
fs.writeFileSync(path.join(installed, 'package.json'), '{}');

afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('the state directory', () => {
  it("is this repository's .settle when the tests run (nothing moves for the suite and CI)", () => {
    expect(SETTLE_DIR).toBe(path.join(path.resolve(__dirname, '../..'), '.settle'));
  });

  it('is the nearest project above the current directory', () => {
    expect(resolveStateDir(path.join(project, 'src', 'deep'), {})).toBe(path.join(project, '.settle'));
    expect(resolveStateDir(project, {})).toBe(path.join(project, '.settle'));
  });

  it('is never inside node_modules: from inside an installed package it is the project that installed it', () => {
    expect(resolveStateDir(path.join(installed, 'dist', 'cli'), {})).toBe(path.join(project, '.settle'));
  });

  it('is the directory SETTLE_STATE_DIR names, relative to the current directory', () => {
    expect(resolveStateDir(project, { SETTLE_STATE_DIR: '/srv/settle-state' })).toBe('/srv/settle-state');
    expect(resolveStateDir(project, { SETTLE_STATE_DIR: 'state' })).toBe(path.join(project, 'state'));
  });

  it('refuses a SETTLE_STATE_DIR inside node_modules, naming the variable', () => {
    expect(() => resolveStateDir(project, { SETTLE_STATE_DIR: 'node_modules/x' })).toThrow(
      /^SETTLE_STATE_DIR: must not lie inside node_modules/,
    );
  });
});
