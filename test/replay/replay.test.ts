/**
 * Safe upgrades: recorded histories of real trajectories (test/replay/fixtures, exported by the Temporal CLI through
 * `npm run record:histories`) must replay through the current workflow code without a
 * nondeterminism error. A change that breaks this would break running trajectories: it must
 * go through Temporal's patching API (`patched()`), not a re-recording.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, inject } from 'vitest';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { installRuntime } from '../../workers/runtime';

const FIXTURES = fileURLToPath(new URL('./fixtures', import.meta.url));
/** Fixture file → the workflow id it was recorded under (keys are derived from it). */
const manifest = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'manifest.json'), 'utf8')) as Record<string, string>;
const fixtures = Object.keys(manifest).sort();

describe('replay of recorded trajectories', () => {
  it('has, in every recorded set, every driver and ending, each with its workflow id', () => {
    expect(
      fs
        .readdirSync(FIXTURES)
        .filter((f) => f !== 'manifest.json')
        .sort(),
    ).toEqual(fixtures);
    const sets = new Set(fixtures.map((f) => f.split('-')[0]));
    // The window a patch's old branch lives for: the three most recent sets (docs/orchestrator.md#retiring-patches).
    expect(sets.size).toBeGreaterThanOrEqual(3);
    for (const set of sets) {
      expect(fixtures.filter((f) => f.startsWith(`${set}-`)).map((f) => f.slice(set!.length + 1))).toEqual([
        'cancelled-compensated.json',
        'continue-as-new-first-run.json',
        'continue-as-new-last-run.json',
        'demo.json',
        'model-driven.json',
        'orchestrator-a3.json',
      ]);
    }
  });

  it.each(fixtures)('%s replays through the current workflow code', async (file) => {
    installRuntime('WARN');
    const history = historyFromJSON(JSON.parse(fs.readFileSync(path.join(FIXTURES, file), 'utf8')));
    expect(history.events!.length).toBeGreaterThan(5);
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, manifest[file]);
  });
});
