/**
 * No module imports itself back through others, `import type` included. ESLint's
 * `import-x/no-cycle` skips type-only imports (it has no option to count them), so this test
 * reads every tracked source's imports with TypeScript's own pre-processor and resolver and
 * fails on every strongly connected group of modules, naming them.
 *
 * The checker is run on a small tree first, so a checker that finds nothing cannot pass.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const RESOLUTION: ts.CompilerOptions = { module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler };

/** Each file's relative imports (static, dynamic, re-exports, type-only alike) that resolve to another file of the set. */
function importGraph(files: string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
    const targets = importedFiles
      .filter(({ fileName }) => fileName.startsWith('.'))
      .map(({ fileName }) => ts.resolveModuleName(fileName, file, RESOLUTION, ts.sys).resolvedModule?.resolvedFileName)
      .filter((target): target is string => target !== undefined && known.has(path.resolve(target)))
      .map((target) => path.resolve(target));
    graph.set(file, targets);
  }
  return graph;
}

/** The groups of modules that reach each other (Tarjan's strongly connected components of more than one module, or a self-import). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || graph.get(v)!.includes(v)) found.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('the import-cycle checker finds what it looks for', () => {
  it('finds a cycle of type-only imports and a re-export, and no cycle in a chain', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-cycles-'));
    const files = {
      'a.ts': "import type { B } from './b';\nexport type A = B;",
      'b.ts': "export type { C as B } from './sub/c';",
      'sub/c.ts': "import { type A } from '../a';\nexport type C = string | A;",
      'd.ts': "import { x } from './e';\nexport const d = x;",
      'e.ts': 'export const x = 1;',
    };
    for (const [name, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      fs.writeFileSync(path.join(dir, name), text);
    }
    const found = cycles(importGraph(Object.keys(files).map((f) => path.join(dir, f))));
    expect(found.map((group) => group.map((f) => path.relative(dir, f)))).toEqual([['a.ts', 'b.ts', 'sub/c.ts']]);
    fs.rmSync(dir, { recursive: true });
  });
});

describe("settle's modules", () => {
  it('import no module that imports them back, type-only imports included', () => {
    const sources = execFileSync('git', ['ls-files', '-z', '--', '*.ts'], { cwd: ROOT, encoding: 'utf8' })
      .split('\0')
      // examples/ are projects of their own (they import settle as a package).
      .filter((f) => f && !f.startsWith('examples/') && fs.existsSync(path.join(ROOT, f)))
      .map((f) => path.join(ROOT, f));
    expect(sources.length).toBeGreaterThan(100);
    const found = cycles(importGraph(sources)).map((group) => group.map((f) => path.relative(ROOT, f)).join(' ↔ '));
    expect(found).toEqual([]);
  });
});
