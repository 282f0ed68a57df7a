/** The published catalog obeys the five schema rules and matches the runtime's validation. */
import Ajv2020 from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { CATALOG, publishedCatalog, type ToolName } from '../../core/tools/catalog';
import { parseArgs } from '../../core/validation';
import { builtInTools } from '../../activities/tools/built-in';
import { publishTeamTool } from '../../activities/tools/team-tool';
import { ToolRegistry } from '../../activities/tools/registry';

const published = publishedCatalog();

/** Every sub-schema of a JSON Schema, with its JSON pointer. */
function* schemas(node: unknown, pointer = ''): Generator<[string, Record<string, any>]> {
  if (!node || typeof node !== 'object') return;
  const schema = node as Record<string, any>;
  yield [pointer, schema];
  for (const [k, v] of Object.entries(schema.properties ?? {})) yield* schemas(v, `${pointer}/properties/${k}`);
  if (schema.items) yield* schemas(schema.items, `${pointer}/items`);
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    (schema[key] ?? []).forEach((s: unknown, i: number) => schemas(s, `${pointer}/${key}/${i}`));
  }
}

describe('published catalog', () => {
  it('publishes the four generic tools and http_request with their levels', () => {
    expect(published.map((t) => [t.name, t['x-settle-level']])).toEqual([
      ['bash_execute', 'A2'],
      ['file_view', 'A0'],
      ['file_edit', 'A2'],
      ['grep_search', 'A0'],
      ['http_request', 'A1'],
    ]);
  });

  it('every schema is valid JSON Schema draft 2020-12', () => {
    const ajv = new Ajv2020({ strict: true });
    for (const tool of published) {
      expect(tool.parameters.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
      expect(() => ajv.compile(tool.parameters)).not.toThrow();
    }
  });

  it.each(published.map((t) => [t.name, t] as const))('%s obeys the five rules', (_name, tool) => {
    expect(tool.description.length).toBeGreaterThan(20);
    for (const [pointer, s] of schemas(tool.parameters)) {
      if (s.type === 'object') {
        expect(s.additionalProperties, `${pointer}: closed property set`).toBe(false); // rule 1
        for (const r of s.required ?? []) expect(Object.keys(s.properties), `${pointer}: required ⊆ properties`).toContain(r); // rule 2
      }
      if (s.type === 'string') expect(s.maxLength ?? s.enum ?? s.pattern, `${pointer}: bounded string`).toBeDefined(); // rule 3
      if (s.type === 'integer' || s.type === 'number') {
        expect(s.minimum, `${pointer}: minimum`).toBeDefined();
        expect(s.maximum, `${pointer}: maximum`).toBeDefined();
      }
      if (s.type === 'array') expect(s.maxItems, `${pointer}: maxItems`).toBeDefined();
      if (pointer) expect(s.description, `${pointer}: described`).toBeTruthy(); // rule 4: units and conventions live here
      for (const key of ['anyOf', 'oneOf'] as const) expect(s[key], `${pointer}: no untagged unions`).toBeUndefined(); // rule 5
    }
  });

  it('units and conventions are in names and descriptions', () => {
    const bash = published.find((t) => t.name === 'bash_execute')!;
    expect(Object.keys((bash.parameters as any).properties)).toContain('timeout_ms');
    const view = published.find((t) => t.name === 'file_view')!;
    expect((view.parameters as any).properties.offset.description).toMatch(/1-indexed/);
  });

  it('what the schema accepts, the runtime accepts, and the other way round', () => {
    const ajv = new Ajv2020({ strict: true });
    const samples: Record<ToolName, unknown[]> = {
      bash_execute: [{ command: 'ls' }, { command: 'ls', timeout_ms: 999 }, { command: '' }, { command: 'ls', timeout: 5 }],
      file_view: [
        { path: '/w/a', offset: 1, limit: 500 },
        { path: '/w/a', offset: 1, limit: 501 },
        { path: 'w/a', offset: 1, limit: 1 },
      ],
      file_edit: [
        { path: '/w/a', old_str: 'x', new_str: '' },
        { path: '/w/a', old_str: '', new_str: 'y' },
        { path: '/w/a', old_str: 'x' },
      ],
      grep_search: [
        { pattern: 'a', path: '/w' },
        { pattern: 'a', path: '/w', glob: '*.ts', max_results: 0 },
        { pattern: 'a', path: '/w', glob: 'a b' },
      ],
      // Beyond the schema, the runtime also checks that body is JSON text and status_url shares url's origin.
      http_request: [
        { method: 'POST', url: 'https://api.example.com/v1/charges', body: '{"amount":100}' },
        { method: 'GET', url: 'https://api.example.com/v1/charges' },
        { method: 'POST', url: 'https://user@api.example.com/v1/charges' },
        { method: 'POST', url: 'https://api.example.com/v1/x', headers: [{ name: 'Authorization', value: 'Bearer x' }] },
        { method: 'PUT', url: 'http://10.0.0.5:8080/v1/x', status_url: 'http://10.0.0.5:8080/v1/x/1' },
      ],
    };
    for (const tool of published) {
      const validate = ajv.compile(tool.parameters);
      for (const sample of samples[tool.name as ToolName]) {
        const runtime = CATALOG[tool.name as ToolName].args().safeParse(sample).success;
        expect(validate(sample), `${tool.name} ${JSON.stringify(sample)}`).toBe(runtime);
      }
    }
  });

  it('every catalog tool is a defineTool definition with the catalog’s name, level, argument model, probe and published form', () => {
    const registry = ToolRegistry.builtIn();
    expect(Object.keys(builtInTools()).sort()).toEqual(Object.keys(CATALOG).sort());
    for (const [name, definition] of Object.entries(builtInTools())) {
      const entry = CATALOG[name as ToolName];
      expect(definition.__settleTool, name).toBe(true);
      expect(definition.name).toBe(name);
      expect(definition.level, name).toBe(entry.level);
      expect(definition.args, name).toBe(entry.args());
      expect(definition.level === 'A0' ? false : definition.probe !== undefined, name).toBe(entry.probe !== false);
      const mine = published.find((p) => p.name === name)!;
      const { description, parameters } = publishTeamTool(definition);
      expect(description, name).toBe(mine.description);
      expect({ ...parameters, description }, name).toEqual({ ...mine.parameters, description });
      const registered = registry.get(name)!;
      expect(registered.definition).toBe(definition);
      expect(registry.runnable(name)!.kind, name).toBe(entry.level === 'A0' ? 'read-only' : 'settled');
    }
    expect(registry.get('spawn_subagent')).toMatchObject({ level: 'A2', builtIn: true, runsIn: 'workflow' });
  });
});

describe('bad input names the field and the rule, before any effect', () => {
  it.each([
    ['file_view', { path: '/w/a', offset: 0, limit: 10 }, 'args.offset must be at least 1 (got 0)'],
    ['file_view', { path: '/w/a', offset: 1, limit: 501 }, 'args.limit must be at most 500 (got 501)'],
    ['file_view', { path: '/w/a', offset: 1.5, limit: 5 }, 'args.offset must be an integer (got 1.5)'],
    ['file_view', { offset: 1, limit: 5 }, 'args.path must be present (required, a string)'],
    ['file_view', { path: '/w/a', offset: '1', limit: 5 }, 'args.offset must be a number (got "1")'],
    ['bash_execute', { command: 'ls', timeout_ms: 300001 }, 'args.timeout_ms must be at most 300000 (got 300001)'],
    ['bash_execute', { command: 'x'.repeat(8193) }, 'args.command must have at most 8192 characters (got 8193)'],
    ['bash_execute', { command: 'ls', timeout: 5 }, 'args must contain only the declared fields; remove "timeout"'],
    ['grep_search', { pattern: 'a', path: '/w', max_results: 1001 }, 'args.max_results must be at most 1000 (got 1001)'],
    [
      'grep_search',
      { pattern: 'a', path: 'relative' },
      'args.path must be an absolute path of names made of letters, digits, ".", "_" and "-" (e.g. /work/src/app.ts) (got "relative")',
    ],
    ['file_edit', { path: '/w/a', old_str: '', new_str: 'y' }, 'args.old_str must have at least 1 character (got 0)'],
    ['http_request', { method: 'POST', url: 'https://a.example/x', body: '{amount: 1}' }, 'args.body must be JSON text'],
    [
      'http_request',
      { method: 'POST', url: 'https://a.example/x', status_url: 'https://b.example/x' },
      'args.status_url must be on the same scheme, host and port as url',
    ],
    ['http_request', { method: 'GET', url: 'https://a.example/x' }, 'args.method must be'],
  ])('%s %j', (tool, args, message) => {
    expect(() => parseArgs(CATALOG[tool as ToolName].args(), args)).toThrow(message);
  });
});
