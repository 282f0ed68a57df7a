/**
 * docs/spec.md cannot drift from the code: its field reference is what core/spec-reference.ts
 * generates from the schemas, every schema field has a description and no description names a
 * field that is gone, and every example in it is a valid spec (or runTurn payload).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SPAWN_DESCRIPTIONS, SPEC_DESCRIPTIONS, specReference, specReferenceIn, specRows } from '../../core/spec-reference';
import { RunTurnInputSchema, TrajectorySpecSchema } from '../../core/trajectory-input';
import { spawnSubagentArgs } from '../../core/capability/subagent';

const doc = fs.readFileSync(path.resolve('docs/spec.md'), 'utf8');
const normalise = (text: string) => text.replace(/[ \t]+/g, ' ').trim();

describe('docs/spec.md', () => {
  it('carries the field reference generated from the schemas (npm run docs:spec)', () => {
    const block = specReferenceIn(doc);
    expect(block, 'the spec-reference markers').not.toBeNull();
    expect(normalise(block!)).toBe(normalise(specReference()));
  });

  it('describes every field of the schemas, and only those', () => {
    const { spec, spawn } = specRows();
    expect(spec.length).toBeGreaterThan(20);
    expect(spec.filter((r) => !r.description).map((r) => r.path)).toEqual([]);
    expect(spawn.filter((r) => !r.description).map((r) => r.path)).toEqual([]);
    expect(Object.keys(SPEC_DESCRIPTIONS).filter((p) => !spec.some((r) => r.path === p))).toEqual([]);
    expect(Object.keys(SPAWN_DESCRIPTIONS).filter((p) => !spawn.some((r) => r.path === p))).toEqual([]);
  });

  it('every example is valid: a spec per driver, and a runTurn payload whose spawn_subagent arguments check', () => {
    const examples = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as Record<string, unknown>);
    expect(examples).toHaveLength(4);
    const specs = examples.filter((e) => 'trajectoryId' in e);
    expect(specs.map((s) => ('turns' in s ? 'scripted' : 'model' in s ? 'model' : 'runTurn')).sort()).toEqual([
      'model',
      'runTurn',
      'scripted',
    ]);
    for (const spec of specs) expect(TrajectorySpecSchema().safeParse(spec).error).toBeUndefined();
    const turn = RunTurnInputSchema().parse(examples.find((e) => !('trajectoryId' in e)));
    for (const call of turn.calls.filter((c) => c.tool === 'spawn_subagent'))
      expect(spawnSubagentArgs().safeParse(call.args).error).toBeUndefined();
  });
});
