/**
 * Each lint rule fires on a minimal bad definition and is silent on its fixed form; the
 * document formats the linter reads; what makes it refuse a document.
 */
import { describe, expect, it } from 'vitest';
import { InputError } from '../../core/errors';
import { extractDefinitions, lintDocument, type Finding, type RuleId } from '../../workbench/lint/index';

/** One tool named `t` with this argument schema (closed object unless the test says otherwise). */
function tool(parameters: unknown, extra: Record<string, unknown> = {}) {
  return [{ name: 't', description: 'A test tool.', parameters, ...extra }];
}

function closed(properties: Record<string, unknown>, more: Record<string, unknown> = {}) {
  return { type: 'object', properties, required: Object.keys(properties), additionalProperties: false, ...more };
}

const short = { type: 'string', maxLength: 64 };

function findings(document: unknown): Finding[] {
  return lintDocument(document).findings;
}

/** [rule, pointer] of every finding, the shape most assertions compare. */
function rulesAt(document: unknown): [RuleId, string][] {
  return findings(document).map((f) => [f.rule, f.pointer]);
}

describe('rule 1: closed-objects', () => {
  it('fires on an object whose property set is open, at every depth', () => {
    const open = { type: 'object', properties: { a: short }, required: ['a'] };
    expect(rulesAt(tool(open))).toEqual([['closed-objects', '/0/parameters']]);
    const nested = closed({ items: { type: 'array', maxItems: 4, items: open } });
    expect(rulesAt(tool(nested))).toEqual([['closed-objects', '/0/parameters/properties/items/items']]);
  });

  it('is silent once additionalProperties is false (or unevaluatedProperties is)', () => {
    expect(findings(tool(closed({ a: short })))).toEqual([]);
    expect(findings(tool({ type: 'object', properties: { a: short }, required: ['a'], unevaluatedProperties: false }))).toEqual([]);
    // A tool without arguments.
    expect(findings(tool({ type: 'object', properties: {}, additionalProperties: false }))).toEqual([]);
  });

  it('reports the finding in full: severity, tool, pointer, message, fix hint', () => {
    expect(findings(tool({ type: 'object', properties: { a: short }, required: ['a'] }))).toEqual([
      {
        severity: 'error',
        rule: 'closed-objects',
        tool: 't',
        pointer: '/0/parameters',
        message: 'object is not closed: keys outside its properties pass validation',
        hint: 'add "additionalProperties": false',
      },
    ]);
  });
});

describe('rule 2: required-fields', () => {
  it('fires when required names an undeclared property', () => {
    expect(rulesAt(tool(closed({ a: short }, { required: ['a', 'b'] })))).toEqual([['required-fields', '/0/parameters/required/1']]);
  });

  it('fires when a description calls a field required but required does not list it', () => {
    const bad = closed({ a: short, b: { ...short, description: 'The branch name. Required.' } }, { required: ['a'] });
    expect(rulesAt(tool(bad))).toEqual([['required-fields', '/0/parameters/properties/b']]);
    const mustBeGiven = closed({ b: { ...short, description: 'Must be given for every call.' } }, { required: [] });
    expect(rulesAt(tool(mustBeGiven))).toEqual([['required-fields', '/0/parameters/properties/b']]);
  });

  it('is silent when required lists it, or the description makes it conditional or optional', () => {
    expect(findings(tool(closed({ a: short, b: { ...short, description: 'The branch name. Required.' } })))).toEqual([]);
    const conditional = closed({ a: short, b: { ...short, description: 'Required when a is "x".' } }, { required: ['a'] });
    expect(findings(tool(conditional))).toEqual([]);
    const optional = closed({ a: short, b: { ...short, description: 'Optional; not required.' } }, { required: ['a'] });
    expect(findings(tool(optional))).toEqual([]);
  });
});

describe('rule 3: bounded-types', () => {
  it.each([
    [{ type: 'string' }, 'string has no upper bound'],
    [{ type: 'string', minLength: 1 }, 'string has no upper bound'],
    [{ type: 'string', format: 'uri' }, 'string has no upper bound'],
    [{ type: 'integer', minimum: 0 }, 'integer has no maximum'],
    [{ type: 'number', maximum: 1 }, 'number has no minimum'],
    [{ type: 'number' }, 'number has no minimum and no maximum'],
    [{ type: 'array', items: short }, 'array has no maxItems'],
    [{ type: ['string', 'null'] }, 'string has no upper bound'],
    [{ description: 'anything' }, 'declares no type: any JSON value passes'],
    [true, 'schema is `true`: any JSON value passes'],
  ])('fires on %j', (schema, message) => {
    const f = findings(tool(closed({ x: schema })));
    expect(f.map((x) => [x.rule, x.pointer])).toEqual([['bounded-types', '/0/parameters/properties/x']]);
    expect(f[0]!.message).toContain(message);
  });

  it.each([
    [{ type: 'string', maxLength: 10 }],
    [{ type: 'string', pattern: '^[a-z]+$' }],
    [{ type: 'string', enum: ['a', 'b'] }],
    [{ type: 'string', const: 'a' }],
    [{ type: 'string', format: 'uuid' }],
    [{ type: 'integer', minimum: 0, maximum: 9 }],
    [{ type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 }],
    [{ type: 'array', items: short, maxItems: 8 }],
    [{ type: 'array', prefixItems: [short, short], items: false }],
    [{ type: 'boolean' }],
  ])('is silent on %j', (schema) => {
    expect(findings(tool(closed({ x: schema })))).toEqual([]);
  });

  it('ignores schemas that test rather than describe a value (not, if)', () => {
    expect(findings(tool(closed({ x: { type: 'integer', minimum: 0, maximum: 9, not: { type: 'string' } } })))).toEqual([]);
  });

  it('checks array items too', () => {
    expect(rulesAt(tool(closed({ x: { type: 'array', maxItems: 3, items: { type: 'string' } } })))).toEqual([
      ['bounded-types', '/0/parameters/properties/x/items'],
    ]);
  });
});

describe('rule 4: explicit units, counts and index bases', () => {
  const num = (description?: string) => ({ type: 'integer', minimum: 0, maximum: 1000, ...(description ? { description } : {}) });

  it.each([
    ['timeout', 'explicit-units'],
    ['retryDelay', 'explicit-units'],
    ['cache_ttl', 'explicit-units'],
    ['max_size', 'explicit-units'],
    ['limit', 'explicit-counts'],
    ['maxCount', 'explicit-counts'],
    ['offset', 'index-base'],
    ['start_line', 'index-base'],
    ['column', 'index-base'],
  ] as const)('%s without a unit, count noun or base fires %s', (name, rule) => {
    // A minimum of -1000: a position's least value would state its base (see below).
    const schema = { ...num('How far to go.'), minimum: -1000 };
    expect(rulesAt(tool(closed({ [name]: schema })))).toEqual([[rule, `/0/parameters/properties/${name}`]]);
  });

  it.each([
    ['offset', { minimum: 0 }, 'How far to go.'],
    ['line', { minimum: 1 }, 'Where to start.'],
    ['start_index', { minimum: -1000 }, 'Where to start (default 0).'],
    ['column', { minimum: -1000, default: 0 }, 'Where to start.'],
  ])('%s with %j and %j states its base: silent', (name, bound, description) => {
    expect(findings(tool(closed({ [name]: { ...num(description), ...bound } })))).toEqual([]);
  });

  it.each([
    ['timeout_ms', undefined],
    ['timeoutSeconds', undefined],
    ['timeout', 'Wall-clock limit in milliseconds.'],
    ['delay', 'Seconds to wait, e.g. 30 s.'],
    ['max_size', 'Largest file to read, in bytes.'],
    ['size_bytes', undefined],
    ['limit', 'Maximum lines to return.'],
    ['limit', 'Maximum number of matching entries.'],
    ['max_results', undefined],
    ['offset', 'First line to return, 1-indexed.'],
    ['start_line', 'Line to start at; lines are numbered from 1.'],
    ['column', '0-based column.'],
  ])('%s with %j is silent', (name, description) => {
    expect(findings(tool(closed({ [name]: num(description) })))).toEqual([]);
  });

  it('reads numbers only: a string timeout carries its unit in the value', () => {
    expect(findings(tool(closed({ timeout: { type: 'string', pattern: '^[0-9]+(ms|s)$' } })))).toEqual([]);
  });
});

describe('rule 5: discriminated-unions', () => {
  const file = closed({ kind: { const: 'file' }, path: short });
  const dir = closed({
    kind: { const: 'dir' },
    path: short,
    depth: { type: 'integer', minimum: 0, maximum: 9, description: 'Levels to descend.' },
  });

  it('fires on an anyOf/oneOf whose branches carry no common distinct tag', () => {
    const untagged = closed({ target: { anyOf: [closed({ path: short }), closed({ url: short })] } });
    expect(rulesAt(tool(untagged))).toEqual([['discriminated-unions', '/0/parameters/properties/target/anyOf']]);
    const sameTag = closed({ target: { oneOf: [file, { ...dir, properties: { ...dir.properties, kind: { const: 'file' } } }] } });
    expect(rulesAt(tool(sameTag))).toEqual([['discriminated-unions', '/0/parameters/properties/target/oneOf']]);
    const optionalTag = closed({ target: { oneOf: [{ ...file, required: ['path'] }, dir] } });
    expect(rulesAt(tool(optionalTag))).toEqual([['discriminated-unions', '/0/parameters/properties/target/oneOf']]);
  });

  it('is silent on a tagged union (inline, one-value enum, or through $ref), and on branches of distinct JSON types', () => {
    expect(findings(tool(closed({ target: { oneOf: [file, dir] } })))).toEqual([]);
    const enumTag = closed({ target: { anyOf: [file, { ...dir, properties: { ...dir.properties, kind: { enum: ['dir'] } } }] } });
    expect(findings(tool(enumTag))).toEqual([]);
    const viaRef = closed({ target: { oneOf: [{ $ref: '#/$defs/file' }, { $ref: '#/$defs/dir' }] } }, { $defs: { file, dir } });
    expect(findings(tool(viaRef))).toEqual([]);
    expect(findings(tool(closed({ name: { anyOf: [short, { type: 'null' }] } })))).toEqual([]);
  });

  it('is silent on a tagged union at the root: the branches declare, close and require the properties', () => {
    expect(findings(tool({ type: 'object', required: ['kind'], oneOf: [file, dir] }))).toEqual([]);
    expect(rulesAt(tool({ type: 'object', oneOf: [closed({ path: short }), closed({ url: short })] }))).toEqual([
      ['discriminated-unions', '/0/parameters/oneOf'],
    ]);
  });
});

describe('anti-pattern: untyped-bag', () => {
  it.each([
    [{ type: 'object' }, '/0/parameters'],
    [{ type: 'object', properties: {} }, '/0/parameters'],
    [{ type: 'object', properties: { a: short }, required: ['a'], additionalProperties: true }, '/0/parameters/additionalProperties'],
    [{ type: 'object', properties: { a: short }, required: ['a'], additionalProperties: short }, '/0/parameters/additionalProperties'],
    [{}, '/0/parameters'],
    [closed({ args: { type: 'object', description: 'Extra arguments.' } }), '/0/parameters/properties/args'],
  ])('fires on %j', (schema, pointer) => {
    expect(rulesAt(tool(schema))).toEqual([['untyped-bag', pointer]]);
  });

  it('fires on a definition with no argument schema at all', () => {
    expect(rulesAt([{ name: 't', description: 'x' }])).toEqual([['untyped-bag', '/0']]);
  });

  it('is silent on typed, closed fields', () => {
    expect(findings(tool(closed({ args: closed({ a: short }) })))).toEqual([]);
  });
});

describe('anti-pattern: whole-file-rewrite', () => {
  const writer = (name: string, description: string, field: string) => [
    { name, description, parameters: closed({ path: short, [field]: { type: 'string', maxLength: 1_000_000 } }) },
  ];

  it('warns on a full-text parameter of a tool that writes files', () => {
    const f = findings(writer('write_file', 'Writes a file.', 'content'));
    expect(f.map((x) => [x.severity, x.rule, x.pointer])).toEqual([['warning', 'whole-file-rewrite', '/0/parameters/properties/content']]);
    expect(rulesAt(writer('save', 'Overwrites the file at path with the given text.', 'file_contents'))).toEqual([
      ['whole-file-rewrite', '/0/parameters/properties/file_contents'],
    ]);
  });

  it('is silent on an exact-replacement editor and on tools that do not write files', () => {
    expect(
      findings([
        {
          name: 'file_edit',
          description: 'Replaces one block of text in a file.',
          parameters: closed({ path: short, old_str: short, new_str: short }),
        },
      ]),
    ).toEqual([]);
    expect(findings(writer('send_message', 'Posts a chat message.', 'text'))).toEqual([]);
  });
});

describe('anti-pattern: not JSON Schema draft 2020-12', () => {
  it('fires on a keyword the meta-schema rejects, at its place', () => {
    const f = findings(tool(closed({ a: { type: 'strng', maxLength: 5 } })));
    expect(f.map((x) => [x.rule, x.pointer])).toEqual([['json-schema-2020-12', '/0/parameters/properties/a/type']]);
    expect(f[0]!.message).toMatch(/type must be equal to one of the allowed values/);
    expect(rulesAt(tool(closed({ a: short }, { required: 'a' })))).toEqual([['json-schema-2020-12', '/0/parameters/required']]);
  });

  it('fires on a pattern that is not a regular expression', () => {
    expect(rulesAt(tool(closed({ a: { type: 'string', pattern: '([a-z' } })))).toEqual([
      ['json-schema-2020-12', '/0/parameters/properties/a/pattern'],
    ]);
  });

  it('fires on another declared dialect (draft-07, as many MCP servers publish)', () => {
    const schema = { ...closed({ a: short }), $schema: 'http://json-schema.org/draft-07/schema#' };
    expect(rulesAt([{ name: 't', inputSchema: schema }])).toEqual([['json-schema-2020-12', '/0/inputSchema/$schema']]);
  });

  it('is silent on a valid 2020-12 schema, declared or not', () => {
    expect(findings(tool({ ...closed({ a: short }), $schema: 'https://json-schema.org/draft/2020-12/schema' }))).toEqual([]);
    expect(findings(tool(closed({ a: short })))).toEqual([]);
  });
});

describe('document formats', () => {
  const schema = closed({ a: { type: 'string' } });
  const at = (doc: unknown) => findings(doc).map((f) => f.pointer);

  it('reads an array, {"tools": [...]}, an MCP tools/list result, Anthropic and OpenAI shapes, one definition', () => {
    expect(at([{ name: 't', parameters: schema }])).toEqual(['/0/parameters/properties/a']);
    expect(at({ tools: [{ name: 't', parameters: schema }] })).toEqual(['/tools/0/parameters/properties/a']);
    expect(at({ tools: [{ name: 't', description: 'd', inputSchema: schema }], nextCursor: undefined })).toEqual([
      '/tools/0/inputSchema/properties/a',
    ]);
    expect(at([{ name: 't', input_schema: schema }])).toEqual(['/0/input_schema/properties/a']);
    expect(at([{ type: 'function', function: { name: 't', parameters: schema } }])).toEqual(['/0/function/parameters/properties/a']);
    expect(at({ name: 't', parameters: schema })).toEqual(['/parameters/properties/a']);
  });

  it('escapes property names in pointers (RFC 6901)', () => {
    expect(at(tool(closed({ 'a/b~c': { type: 'string' } })))).toEqual(['/0/parameters/properties/a~1b~0c']);
  });

  it('takes a $schema written beside the schema as its dialect (source listing 1 does this)', () => {
    const defs = extractDefinitions({ $schema: 'http://json-schema.org/draft-07/schema#', name: 't', parameters: closed({ a: short }) });
    expect(defs[0]!.dialect).toEqual({ uri: 'http://json-schema.org/draft-07/schema#', pointer: '/$schema' });
    expect(rulesAt({ $schema: 'https://json-schema.org/draft/2020-12/schema', name: 't', parameters: closed({ a: short }) })).toEqual([]);
  });

  it.each([
    [42, /^the document must be an array of tool definitions/],
    [{ tools: {} }, /^tools must be an array of tool definitions \(got an object\)/],
    [[{ name: 't', parameters: {} }, 'oops'], /^\[1\] must be an object \(a tool definition; got a string\)/],
    [{ tools: [null] }, /^tools\[0\] must be an object/],
    [[{ description: 'no name' }], /^\[0\]\.name must be a non-empty string/],
  ])('refuses %j with an InputError', (doc, message) => {
    expect(() => lintDocument(doc)).toThrow(InputError);
    expect(() => lintDocument(doc)).toThrow(message);
  });
});

describe('what a call can reach', () => {
  const bag = { type: 'object' }; // an untyped bag: a defect wherever a call can reach it
  const defs = { Used: closed({ name: short }), Bag: bag, Loose: { type: 'string' } };

  it('lints only the definitions a call reaches through $ref; the rest get one note for the whole catalog', () => {
    const catalog = [
      { name: 'a', description: 'A.', parameters: closed({ x: { $ref: '#/$defs/Used' } }, { $defs: defs }) },
      { name: 'b', description: 'B.', parameters: closed({ y: short }, { $defs: defs }) },
    ];
    const all = findings(catalog);
    expect(all.filter((f) => f.severity !== 'info')).toEqual([]);
    expect(all.filter((f) => f.severity === 'info')).toEqual([
      {
        severity: 'info',
        rule: 'unreachable-definitions',
        tool: 'a',
        pointer: '/0/parameters/$defs/Bag',
        message: '5 definitions in 2 tools no argument reaches through $ref (not linted; the first is here)',
        hint: 'remove the definitions a tool does not use, so its schema carries only what its arguments need',
      },
    ]);
  });

  it('follows $refs transitively, through anchors and recursion, and still lints what they reach', () => {
    const chained = closed(
      { x: { $ref: '#/$defs/Outer' }, z: { $ref: '#leaf' } },
      {
        $defs: {
          Outer: closed({ inner: { $ref: '#/$defs/Bag' }, self: { $ref: '#/$defs/Outer' } }),
          Bag: bag,
          Leaf: { $anchor: 'leaf', type: 'string' },
        },
      },
    );
    expect(rulesAt(tool(chained))).toEqual([
      ['untyped-bag', '/0/parameters/$defs/Bag'],
      ['bounded-types', '/0/parameters/$defs/Leaf'],
    ]);
  });
});

describe('discriminated-unions on real catalogs', () => {
  it('is silent on branches of different JSON types, also when a branch is behind a $ref or implies its type', () => {
    const parent = closed({ parent: { anyOf: [{ $ref: '#/$defs/Ref' }, short] } }, { $defs: { Ref: closed({ id: short }) } });
    expect(findings(tool(parent))).toEqual([]);
    const implied = closed({ parent: { oneOf: [{ properties: { id: short }, required: ['id'], additionalProperties: false }, short] } });
    expect(findings(tool(implied))).toEqual([]);
    const nullable = closed({ tags: { anyOf: [{ type: 'array', items: short, maxItems: 4 }, { type: 'null' }] } });
    expect(findings(tool(nullable))).toEqual([]);
    // Notion's `parent`: a $ref to a tagged oneOf of objects, or a string.
    const page = closed({ type: { const: 'page' }, page_id: short });
    const space = closed({ type: { const: 'workspace' } });
    const viaUnion = closed({ parent: { anyOf: [{ $ref: '#/$defs/Parent' }, short] } }, { $defs: { Parent: { oneOf: [page, space] } } });
    expect(findings(tool(viaUnion))).toEqual([]);
  });

  it('is silent on a union of overlapping strings: no tag fits a string (git_checkout: a branch name or any ref)', () => {
    const target = { anyOf: [short, { type: 'string', pattern: '^[^-]' }] };
    expect(findings(tool(closed({ target })))).toEqual([]);
  });

  it('leaves a union with a branch that takes any object to untyped-bag, which reports that branch', () => {
    const anyObject = { type: 'object', additionalProperties: true };
    const union = closed({ item: { anyOf: [closed({ text: short }), short, anyObject] } });
    expect(rulesAt(tool(union))).toEqual([['untyped-bag', '/0/parameters/properties/item/anyOf/2/additionalProperties']]);
  });

  it('is silent on a union whose branches are one branch written twice, and still fires on two different untagged objects', () => {
    expect(findings(tool(closed({ name: { anyOf: [short, short] } })))).toEqual([]);
    const twoObjects = closed({ target: { anyOf: [closed({ path: short }), closed({ path: short }), closed({ url: short })] } });
    expect(rulesAt(tool(twoObjects))).toEqual([['discriminated-unions', '/0/parameters/properties/target/anyOf']]);
  });

  it('catches a required type enum whose values each select a same-named field, with the text inside anyOf', () => {
    const block = (kind: string) => ({
      anyOf: [{ ...short, description: `The ${kind} content, for a ${kind} block.` }, { type: 'null' }],
    });
    const flat = closed(
      { type: { anyOf: [{ enum: ['text', 'image'] }] }, text: block('text'), image: block('image') },
      { required: ['type'] },
    );
    expect(rulesAt(tool(flat))).toEqual([['discriminated-unions', '/0/parameters/properties/type']]);
    const byName = closed(
      { type: { enum: ['text', 'image'] }, text: { anyOf: [short, { type: 'null' }] }, image: short },
      { required: ['type'] },
    );
    expect(rulesAt(tool(byName))).toEqual([['discriminated-unions', '/0/parameters/properties/type']]);
    // An enum whose values name no fields and tie none: no union implied.
    const plain = closed({ type: { enum: ['fast', 'slow'] }, text: short }, { required: ['type'] });
    expect(findings(tool(plain))).toEqual([]);
  });
});

describe('required-fields in the tool description', () => {
  const rename = (description: string) => [
    { name: 'rename_user', description, parameters: closed({ user_id: short, new_name: short }, { required: ['user_id'] }) },
  ];

  it('fires when the tool description says a field is required and required does not list it', () => {
    const all = findings(rename('Renames a user. Both `user_id` and `new_name` are required.'));
    expect(all.map((f) => [f.rule, f.pointer])).toEqual([['required-fields', '/0/parameters/properties/new_name']]);
    expect(all[0]!.message).toBe(
      'the tool description calls "new_name" required ("Both `user_id` and `new_name` are required."), but it is not in required',
    );
  });

  it('is silent on a mode-specific or conditional requirement, a choice, and a field required already', () => {
    expect(findings(rename('Renames or disables a user. `new_name` is required for rename.'))).toEqual([]);
    expect(findings(rename('Renames a user. `new_name` is required when renaming.'))).toEqual([]);
    expect(findings(rename('Renames a user. Either `user_id` or `new_name` is required.'))).toEqual([]);
    expect(findings(rename('Renames a user. `user_id` is required.'))).toEqual([]);
  });
});

describe('definitions the linter cannot read as a schema', () => {
  it('reports "inputSchema": null in one clear line, not a JavaScript error', () => {
    const all = findings({ tools: [{ name: 'n', description: 'N.', inputSchema: null }] });
    expect(all).toEqual([
      {
        severity: 'error',
        rule: 'json-schema-2020-12',
        tool: 'n',
        pointer: '/tools/0/inputSchema',
        message: 'the argument schema is null, not a JSON Schema (an object or a boolean): its arguments are not checked',
        hint: 'publish an object schema with typed properties and "additionalProperties": false',
      },
    ]);
  });
});
