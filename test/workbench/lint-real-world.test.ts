/**
 * The linter on the shapes real catalogs have (issue 13): the false positives a maintainer
 * rejected, the false negatives they would want, refs that do not resolve, the formats it was
 * blind to, and input deep enough to break a recursive walker. Each fixture is written here,
 * modelled on a pattern seen in public catalogs (bench/lint-corpus/ measures the real ones).
 */
import { describe, expect, it } from 'vitest';
import { InputError } from '../../core/errors';
import { lintDocument, MAX_LINT_DOCUMENT_DEPTH, MAX_SCHEMA_DEPTH, type Finding, type RuleId } from '../../workbench/lint/index';

const short = { type: 'string', maxLength: 64 };
const count = (description: string, more: Record<string, unknown> = {}) => ({
  type: 'integer',
  minimum: 1,
  maximum: 100,
  description,
  ...more,
});

function closed(properties: Record<string, unknown>, required: string[] = Object.keys(properties)) {
  return { type: 'object', properties, required, additionalProperties: false };
}

function lint(name: string, description: string, schema: unknown): Finding[] {
  return lintDocument([{ name, description, inputSchema: schema }]).findings;
}

const rules = (findings: Finding[]): [RuleId, string][] => findings.map((f) => [f.rule, f.pointer]);
const only = (rule: RuleId, findings: Finding[]) => rules(findings.filter((f) => f.rule === rule));

describe('false positives removed', () => {
  it('required-fields: "required for one mode" is not "required"', () => {
    const actions = closed(
      {
        method: { type: 'string', enum: ['list_workflows', 'run_workflow'], description: 'The method to execute' },
        workflow_id: { ...short, description: "The workflow ID. Required for 'run_workflow' method." },
      },
      ['method'],
    );
    expect(only('required-fields', lint('actions_run', 'Runs GitHub Actions.', actions))).toEqual([]);
    const editor = closed(
      {
        command: { type: 'string', enum: ['view', 'create'], description: 'The command to run.' },
        file_text: { ...short, description: 'Required parameter of `create` command, with the content of the file to be created.' },
      },
      ['command'],
    );
    expect(only('required-fields', lint('str_replace_editor', 'Views and creates files.', editor))).toEqual([]);
    const except = closed(
      {
        method: { type: 'string', enum: ['run_workflow', 'cancel_workflow_run'] },
        run_id: { type: 'integer', minimum: 1, maximum: 1e9, description: "The run. Required for all methods except 'run_workflow'." },
      },
      ['method'],
    );
    expect(only('required-fields', lint('actions_run_trigger', 'Triggers runs.', except))).toEqual([]);
    // Required "for" every mode there is, is required.
    const everyMode = closed(
      {
        operation: { type: 'string', enum: ['cordon', 'drain', 'uncordon'] },
        nodeName: { ...short, description: 'Name of the node to operate on (required for cordon, drain, uncordon)' },
      },
      ['operation'],
    );
    expect(only('required-fields', lint('node_management', 'Manages nodes.', everyMode))).toEqual([
      ['required-fields', '/0/inputSchema/properties/nodeName'],
    ]);
    // Unconditional wording still fires.
    const plain = closed({ a: short, b: { ...short, description: 'The branch. Required for all calls.' } }, ['a']);
    expect(only('required-fields', lint('t', 'x', plain))).toEqual([['required-fields', '/0/inputSchema/properties/b']]);
  });

  it('index-base: page sizes are counts, and a page that states its minimum has a base', () => {
    const list = closed(
      {
        per_page: count('Results per page for pagination (min 1, max 100)'),
        perPage: count('Results per page'),
        page: count('Page number for pagination (min 1)', { minimum: undefined }),
        cursor_page: count('Which page to fetch', { minimum: 1 }),
      },
      [],
    );
    expect(only('index-base', lint('list_issues', 'Lists issues.', list))).toEqual([]);
    const unstated = closed({ page: { type: 'integer', maximum: 100, description: 'Page to fetch.' } }, []);
    expect(only('index-base', lint('list_issues', 'Lists issues.', unstated))).toEqual([['index-base', '/0/inputSchema/properties/page']]);
  });

  it('explicit-counts: a name and description that say what is counted', () => {
    const thinking = closed({ totalThoughts: count('Estimated total thoughts needed') });
    expect(only('explicit-counts', lint('sequentialthinking', 'Thinks.', thinking))).toEqual([]);
    expect(only('explicit-counts', lint('t', 'x', closed({ limit: count('How far to go.') })))).toEqual([
      ['explicit-counts', '/0/inputSchema/properties/limit'],
    ]);
  });

  it('whole-file-rewrite: a create-only file_text in a tool that also offers old_str/new_str is the fix, not the problem', () => {
    const editor = closed(
      {
        command: { type: 'string', enum: ['create', 'str_replace'] },
        path: short,
        file_text: { ...short, description: 'Required parameter of `create` command.' },
        old_str: short,
        new_str: short,
      },
      ['command', 'path'],
    );
    expect(only('whole-file-rewrite', lint('str_replace_based_edit_tool', 'Creates and edits files.', editor))).toEqual([]);
  });
});

describe('false negatives caught', () => {
  it('discriminated-unions: a required method enum that decides which fields apply, with the tagged oneOf it implies', () => {
    const flattened = closed(
      {
        method: { type: 'string', enum: ['get_workflow', 'get_workflow_run'], description: 'The method to execute' },
        owner: short,
        resource_id: { ...short, description: "A workflow ID for 'get_workflow' method; a run ID for 'get_workflow_run' method." },
        run_attempt: { type: 'integer', minimum: 1, maximum: 9, description: "Attempt number, 1-based. Only for 'get_workflow_run'." },
      },
      ['method', 'owner'],
    );
    const f = lint('actions_get', 'Gets Actions resources.', flattened).filter((x) => x.rule === 'discriminated-unions');
    expect(rules(f)).toEqual([['discriminated-unions', '/0/inputSchema/properties/method']]);
    expect(f[0]!.message).toMatch(/"method" selects one of 2 operations .*resource_id, run_attempt/);
    expect(f[0]!.hint).toContain('"oneOf"');
    expect(f[0]!.hint).toContain('{"method": {"const": "get_workflow_run"}');
    // An enum that no other field depends on is just an enum.
    const plain = closed({ state: { type: 'string', enum: ['open', 'closed'] }, owner: short });
    expect(only('discriminated-unions', lint('list', 'x', plain))).toEqual([]);
  });

  it('whole-file-rewrite: file content nested in arrays, and under other verbs', () => {
    const push = closed({
      files: {
        type: 'array',
        maxItems: 10,
        items: closed({ path: short, content: { ...short, description: 'File content' } }),
      },
    });
    expect(only('whole-file-rewrite', lint('push_files', 'Push multiple files in a single commit.', push))).toEqual([
      ['whole-file-rewrite', '/0/inputSchema/properties/files/items/properties/content'],
    ]);
    const gist = closed({ gist_id: short, filename: short, content: short });
    expect(only('whole-file-rewrite', lint('update_gist', 'Update an existing gist.', gist))).toEqual([
      ['whole-file-rewrite', '/0/inputSchema/properties/content'],
    ]);
  });

  it.each([9007199254740991, 2147483647, 1.7976931348623157e308, 2 ** 63 - 1])(
    'bounded-types: "maximum": %d is a type limit, not a bound',
    (max) => {
      const f = lint('t', 'x', closed({ id: { type: 'integer', minimum: 0, maximum: max, description: 'The ID.' } }));
      expect(only('bounded-types', f)).toEqual([['bounded-types', '/0/inputSchema/properties/id']]);
      expect(f.find((x) => x.rule === 'bounded-types')!.message).toMatch(/is the largest value of a number type: it bounds nothing/);
    },
  );
});

describe('$refs that do not resolve', () => {
  it.each([
    ['dangling', closed({ a: { $ref: '#/$defs/missing' } }), '/0/inputSchema/properties/a/$ref', /does not resolve/],
    [
      'a → b → a',
      { ...closed({ a: { $ref: '#/$defs/a' } }), $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } } },
      '/0/inputSchema/properties/a/$ref',
      /cycle of \$refs/,
    ],
    ['root {"$ref": "#"}', { $ref: '#' }, '/0/inputSchema/$ref', /cycle of \$refs/],
    ['outside the document', closed({ a: { $ref: 'https://example.com/s.json' } }), '/0/inputSchema/properties/a/$ref', /outside/],
  ])('%s is a finding, not silence', (_label, schema, pointer, message) => {
    const f = lint('t', 'x', schema).filter((x) => x.rule === 'resolvable-refs');
    expect(f.map((x) => x.pointer)).toContain(pointer);
    expect(f.find((x) => x.pointer === pointer)!.message).toMatch(message);
  });

  it('a recursive schema through content (a tree) is fine', () => {
    const tree = { ...closed({ name: short, children: { type: 'array', maxItems: 8, items: { $ref: '#' } } }) };
    expect(only('resolvable-refs', lint('t', 'x', tree))).toEqual([]);
  });
});

describe('formats it was blind to', () => {
  it("reads Gemini's parametersJsonSchema and functionDeclarations", () => {
    const decl = { name: 'read_file', description: 'Reads a file.', parametersJsonSchema: closed({ path: { type: 'string' } }) };
    expect(rules(lintDocument([decl]).findings)).toEqual([['bounded-types', '/0/parametersJsonSchema/properties/path']]);
    expect(rules(lintDocument({ functionDeclarations: [decl] }).findings)).toEqual([
      ['bounded-types', '/functionDeclarations/0/parametersJsonSchema/properties/path'],
    ]);
    expect(rules(lintDocument({ tools: [{ functionDeclarations: [decl] }] }).findings)).toEqual([
      ['bounded-types', '/tools/0/functionDeclarations/0/parametersJsonSchema/properties/path'],
    ]);
  });

  it('says exactly which provider built-in tools it skipped, instead of "no argument schema"', () => {
    const { tools, findings, skipped } = lintDocument([
      { type: 'text_editor_20250124', name: 'str_replace_editor' },
      { type: 'bash_20250124', name: 'bash' },
      { type: 'web_search_preview' },
      { name: 'own', description: 'x', input_schema: closed({ a: short }) },
    ]);
    expect(tools).toBe(1);
    expect(findings).toEqual([]);
    expect(skipped).toEqual([
      {
        name: 'str_replace_editor',
        pointer: '/0',
        reason: 'provider built-in tool (type "text_editor_20250124"): its arguments are defined by the provider',
      },
      { name: 'bash', pointer: '/1', reason: 'provider built-in tool (type "bash_20250124"): its arguments are defined by the provider' },
      {
        name: 'web_search_preview',
        pointer: '/2',
        reason: 'provider built-in tool (type "web_search_preview"): its arguments are defined by the provider',
      },
    ]);
  });
});

describe('deep input', () => {
  function deepSchema(levels: number): unknown {
    let s: unknown = { type: 'string', maxLength: 8 };
    for (let i = 0; i < levels; i++) s = { type: 'array', maxItems: 2, items: s };
    return closed({ a: s });
  }

  it(`lints ${MAX_SCHEMA_DEPTH} levels of sub-schemas without a false dialect error`, () => {
    expect(lint('t', 'x', deepSchema(MAX_SCHEMA_DEPTH - 2))).toEqual([]);
  });

  it.each([MAX_SCHEMA_DEPTH + 1, 650, 1300, 100_000])('refuses %d levels with an InputError naming the limit, not a crash', (levels) => {
    let error: unknown;
    try {
      lint('t', 'x', deepSchema(levels));
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InputError);
    // Past the document limit the whole document is refused first; below it, the schema walker's own limit.
    expect((error as InputError).message.length).toBeLessThan(300); // one short line, not the whole pointer
    expect((error as InputError).message).toMatch(
      levels * 2 < MAX_LINT_DOCUMENT_DEPTH
        ? new RegExp(
            `^/0/inputSchema/properties/a(/items)+…(/items)+ must nest sub-schemas at most ${MAX_SCHEMA_DEPTH} levels deep \\(settle lint's limit\\)$`,
          )
        : new RegExp(`^the document must nest arrays and objects at most ${MAX_LINT_DOCUMENT_DEPTH} levels deep`),
    );
  });

  it('gives no false dialect error on keywords the walker does not follow, up to the document limit', () => {
    let s: unknown = { type: 'string' };
    for (let i = 0; i < MAX_LINT_DOCUMENT_DEPTH - 8; i++) s = { not: s };
    expect(only('json-schema-2020-12', lint('t', 'x', closed({ a: { type: 'string', maxLength: 4, not: s } })))).toEqual([]);
  });
});
