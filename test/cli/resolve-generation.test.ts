/** `settle resolve --generation`: the generation the operator examined, validated before anything is touched. */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../../bin/settle.js', import.meta.url));
const KEY = 'a'.repeat(64);

function resolve(generation: string) {
  const r = spawnSync(process.execPath, [BIN, 'resolve', KEY, '--generation', generation, '--as', 'applied', '--reason', 'checked'], {
    encoding: 'utf8',
  });
  return { code: r.status, stderr: r.stderr };
}

describe('settle resolve --generation', () => {
  it.each(['0', 'two', '9007199254740993'])('refuses %s with exit 2, naming the option and the rule', (generation) => {
    const r = resolve(generation);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--generation: must be an integer ≥ 1');
  });
});
