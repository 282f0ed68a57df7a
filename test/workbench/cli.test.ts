/** The workbench commands as a user runs them: output, exit codes 0/1/2, one-line errors. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, inject } from 'vitest';
import { CallStats } from '../../activities/store/call-stats';
import { publishedCatalog } from '../../core/tools/catalog';
import { runSettle as settle } from '../support/cli';
import { openTestDb, uniqueId } from '../support/env';
import { fakeMcpServer } from '../support/fake-mcp-server';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const FS_SERVER = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', import.meta.url));

function oneLine(stderr: string): string {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

const db = openTestDb(2);
afterAll(() => db.destroy());

describe('settle lint', () => {
  it('exits 1 on source listing 5 and prints one line per finding: severity, rule, tool, pointer, message, fix', async () => {
    const r = await settle(['lint', path.join(FIXTURES, 'listing5.json')]);
    expect(r.code).toBe(1);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(7);
    expect(lines[0]).toBe(
      'error   bounded-types        file_view  /tools/1/parameters/properties/path  string has no upper bound (no maxLength, pattern, enum or const); ' +
        'fix: add "maxLength" sized to what the tool can take (e.g. 1024 for a path, 65536 for a text block)',
    );
    expect(r.stderr.trim()).toBe(`settle lint: 7 errors, 0 warnings in 4 tools (${path.join(FIXTURES, 'listing5.json')})`);
  });

  it('--json prints the findings as one array', async () => {
    const r = await settle(['lint', '--json', path.join(FIXTURES, 'listing1.json')]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual([
      expect.objectContaining({ severity: 'error', rule: 'bounded-types', tool: 'file_edit', pointer: '/parameters/properties/old_str' }),
      expect.objectContaining({ severity: 'error', rule: 'bounded-types', tool: 'file_edit', pointer: '/parameters/properties/new_str' }),
    ]);
  });

  it('exits 0 on our catalog: settle tools --json | settle lint -', async () => {
    const published = (await settle(['tools', '--json'])).stdout;
    expect(JSON.parse(published)).toEqual(publishedCatalog());
    const r = await settle(['lint', '-'], { input: published });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim()).toBe('settle lint: no findings in 5 tools (stdin)');
    expect((await settle(['lint', '--json', '-'], { input: published })).stdout.trim()).toBe('[]');
  });

  it('exits 0 when only warnings are found', async () => {
    const writer = [
      {
        name: 'write_file',
        description: 'Writes a file.',
        parameters: {
          type: 'object',
          properties: { content: { type: 'string', maxLength: 100000 } },
          required: ['content'],
          additionalProperties: false,
        },
      },
    ];
    const r = await settle(['lint', '-'], { input: JSON.stringify(writer) });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^warning whole-file-rewrite +write_file {2}\/0\/parameters\/properties\/content /);
  });

  it.each([
    [['lint', '-'], '{"tools": [', /^settle: stdin must be valid JSON \(/],
    [['lint', '-'], '[{"name": "a", "parameters": {}}, 7]', /^settle: stdin: \[1\] must be an object \(a tool definition; got a number\)$/],
    [['lint', '-'], '"just a string"', /^settle: stdin: the document must be an array of tool definitions/],
    [['lint', '/nonexistent/tools.json'], '', /^settle: FILE \/nonexistent\/tools.json must be a readable file \(ENOENT/],
    [['lint'], '', /^settle: FILE must be given .* or else --mcp/],
    [['lint', 'x.json', '--mcp', 'node server.js'], '', /^settle: FILE must be given .* exactly one of them$/],
    [['lint', '--mcp', 'settle-no-such-command-4711'], '', /^settle: --mcp must start an MCP server .*ENOENT/],
    [['lint', '--mcp', `${process.execPath} -e "process.exit(0)"`], '', /^settle: --mcp must start an MCP server .*Connection closed/],
    [
      ['lint', '--mcp', `${process.execPath} -e "console.error('no config'); process.exit(3)"`],
      '',
      /^settle: --mcp must start an MCP server .*its stderr: no config\)$/,
    ],
    [['lint', '--mcp', 'node "unclosed'], '', /^settle: --mcp must close its " quote$/],
  ])('%j exits 2 with one line', async (args, input, message) => {
    const r = await settle(args, { input });
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toMatch(message);
    expect(r.stdout).toBe('');
  });

  it('refuses a document nested past the limit with exit 2 and one line, at 650, 1,300 and 100,000 levels', async () => {
    for (const levels of [70, 650, 1300, 100_000]) {
      let schema = '{"type": "string", "maxLength": 4}';
      schema = '{"type": "array", "maxItems": 2, "items": '.repeat(levels) + schema + '}'.repeat(levels);
      const r = await settle(['lint', '-'], { input: `[{"name": "t", "parameters": ${schema}}]` });
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(oneLine(r.stderr)).toMatch(
        levels < 200
          ? /^settle: stdin: \/0\/parameters(\/items)+…(\/items)+ must nest sub-schemas at most 64 levels deep/
          : /^settle: stdin: the document must nest arrays and objects at most 256 levels deep/,
      );
    }
  });

  it('names the provider built-in tools it skipped', async () => {
    const doc = [{ type: 'text_editor_20250124', name: 'str_replace_editor' }, { type: 'web_search_preview' }];
    const r = await settle(['lint', '-'], { input: JSON.stringify(doc) });
    expect(r.code).toBe(0);
    expect(r.stderr.trim().split('\n')).toEqual([
      'settle lint: skipped str_replace_editor (/0): provider built-in tool (type "text_editor_20250124"): its arguments are defined by the provider',
      'settle lint: skipped web_search_preview (/1): provider built-in tool (type "web_search_preview"): its arguments are defined by the provider',
      'settle lint: no findings in 0 tools; 2 built-in tools skipped (stdin)',
    ]);
  });

  it('--mcp lints a real MCP server (server-filesystem over stdio) end to end', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-mcp-'));
    try {
      const r = await settle(['lint', '--json', '--mcp', `"${process.execPath}" "${FS_SERVER}" "${dir}"`]);
      expect(r.code).toBe(1);
      const findings = JSON.parse(r.stdout) as { severity: string; rule: string; tool: string; pointer: string }[];
      const of = (tool: string) =>
        findings.filter((f) => f.tool === tool).map((f) => [f.severity, f.rule, f.pointer.replace(/^\/tools\/\d+/, '')]);
      // Pointers index the server's own tools/list result.
      const writeFile = findings.find((f) => f.tool === 'write_file')!;
      const index = writeFile.pointer.split('/')[2];
      expect(of('write_file')).toEqual([
        ['error', 'json-schema-2020-12', '/inputSchema/$schema'], // published as draft-07
        ['error', 'closed-objects', '/inputSchema'],
        ['error', 'bounded-types', '/inputSchema/properties/path'],
        ['error', 'bounded-types', '/inputSchema/properties/content'],
        ['warning', 'whole-file-rewrite', '/inputSchema/properties/content'],
      ]);
      expect(findings.filter((f) => f.tool === 'write_file').every((f) => f.pointer.startsWith(`/tools/${index}/`))).toBe(true);
      expect(of('edit_file')).toContainEqual(['error', 'closed-objects', '/inputSchema/properties/edits/items']);
      expect(of('list_allowed_directories')).toContainEqual(['error', 'untyped-bag', '/inputSchema']);
      expect(of('read_text_file')).toContainEqual(['error', 'bounded-types', '/inputSchema/properties/head']);
      expect(r.stderr).toMatch(/^settle lint: \d+ errors, 1 warning in \d+ tools \(MCP server /);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('settle lint --mcp and the operator environment', () => {
  const tool = {
    name: 'echo',
    description: 'Echoes.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  };

  it('starts the server with the minimal environment plus only the variables named by --env', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-mcp-env-'));
    try {
      const server = fakeMcpServer(dir, { tools: [tool] });
      const env = { SETTLE_CAP_KEYS: 'k1:c2VjcmV0', DATABASE_URL: 'postgres://u:pw@127.0.0.1/x', SERVER_CONFIG: '/etc/x', OTHER: '1' };
      const r = await settle(['lint', '--mcp', server.commandLine, '--env', 'SERVER_CONFIG'], { env });
      expect(r.stderr).toMatch(/^settle lint: /);
      const names = server.envNames();
      expect(names).toContain('SERVER_CONFIG');
      expect(names).toContain('PATH');
      for (const secret of ['SETTLE_CAP_KEYS', 'DATABASE_URL', 'OTHER']) expect(names).not.toContain(secret);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    [['--env', 'NOT SET'], /^settle: --env must name an environment variable \(letters, digits, _; got "NOT SET"\)$/],
    [['--env', 'SETTLE_LINT_UNSET_4711'], /^settle: --env must name a variable that is set \(SETTLE_LINT_UNSET_4711 is not\)$/],
    [['x.json', '--env', 'PATH'], /^settle: --env must be given with --mcp$/],
  ])('refuses %j with exit 2 and one line', async (extra, message) => {
    const args = extra[0] === 'x.json' ? ['lint', ...extra] : ['lint', '--mcp', 'node x.js', ...extra];
    const r = await settle(args);
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toMatch(message);
  });
});

describe('settle lint prints what a tool list or server says with control characters escaped', () => {
  // eslint-disable-next-line no-control-regex -- finding raw control characters is the point
  const RAW = /[\u001b\u0007\u009b\u202e]/;

  it('tool and property names from an MCP server', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-mcp-esc-'));
    try {
      const server = fakeMcpServer(dir, {
        tools: [
          {
            name: 'evil\u001b]0;owned\u0007',
            description: 'Evil.',
            inputSchema: { type: 'object', properties: { ['p\u202eq\u009b2J']: { type: 'string' } }, additionalProperties: false },
          },
        ],
      });
      const r = await settle(['lint', '--mcp', server.commandLine]);
      expect(r.code).toBe(1);
      expect(r.stdout).not.toMatch(RAW);
      expect(r.stderr).not.toMatch(RAW);
      expect(r.stdout).toContain('evil\\x1b]0;owned\\x07  /tools/0/inputSchema/properties/p\\u202eq\\x9b2J');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the names of skipped built-in tools, errors naming a pointer, and the stderr of a server that failed', async () => {
    const skipped = await settle(['lint', '-'], { input: JSON.stringify([{ type: 'web_search_preview', name: 'w\u001b[2J' }]) });
    expect(skipped.stderr).not.toMatch(RAW);
    expect(skipped.stderr).toContain('skipped w\\x1b[2J');

    const nested = await settle(['lint', '-'], {
      input: JSON.stringify([{ name: 't', parameters: { type: 'object', properties: { ['x\u001b[31m']: { $ref: '#/nowhere' } } } }]),
    });
    expect(nested.stdout + nested.stderr).not.toMatch(RAW);

    const failed = await settle([
      'lint',
      '--mcp',
      `${process.execPath} -e "process.stderr.write('\\x1b]0;owned\\x07\\u202e'); process.exit(3)"`,
    ]);
    expect(failed.code).toBe(2);
    expect(failed.stderr).not.toMatch(RAW);
    expect(oneLine(failed.stderr)).toMatch(/its stderr: \\x1b]0;owned\\x07\\u202e\)$/);
  });
});

describe('settle stats / breakeven', () => {
  const env = { DATABASE_URL: inject('databaseUrl') };

  it('shows calls, malformed calls and the rate per tool, as a table and as JSON', async () => {
    const stats = new CallStats(db);
    const tool = uniqueId('cli_tool');
    const trajectoryId = uniqueId('cli');
    for (let turn = 0; turn < 8; turn++) {
      await stats.recordProposedCall({
        trajectoryId,
        turn,
        callId: 'c',
        tool,
        issue: turn < 2 ? { field: 'args.path', rule: 'be present' } : null,
      });
    }
    const json = await settle(['stats', '--json', '--since', '1h'], { env });
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as { tool: string }[]).find((r) => r.tool === tool)).toEqual({
      tool,
      calls: 8,
      malformed: 2,
      rate: 0.25,
    });
    const table = await settle(['stats'], { env });
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^tool +calls +malformed +rate$/m);
    expect(table.stdout).toMatch(new RegExp(`^${tool} +8 +2 +25\\.00 %$`, 'm'));
    expect(table.stdout).toMatch(/\(all time, database clock\)/);
  });

  it("breakeven prints p_break as a fraction and a percentage, and compares a tool's measured rate", async () => {
    const r = await settle(['breakeven', '--gen-tokens', '80', '--mask-ms', '0.5', '--repair-ms', '1800']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('p_break = L_gen · t_mask / T_repair = 80 × 0.5 ms / 1800 ms = 0.02222 (2.22 %)');

    const stats = new CallStats(db);
    const [often, rarely] = [uniqueId('often'), uniqueId('rarely')];
    const trajectoryId = uniqueId('be');
    for (let turn = 0; turn < 20; turn++) {
      await stats.recordProposedCall({
        trajectoryId,
        turn,
        callId: 'a',
        tool: often,
        issue: turn < 1 ? { field: 'args', rule: 'be an object' } : null,
      }); // 5 %
      await stats.recordProposedCall({ trajectoryId, turn, callId: 'b', tool: rarely, issue: null }); // 0 %
    }
    const argv = ['breakeven', '--gen-tokens', '80', '--mask-ms', '0.5', '--repair-ms', '1800', '--tool'];
    const pays = await settle([...argv, often], { env });
    expect(pays.code).toBe(0);
    expect(pays.stdout).toContain(`${often}: measured malformed rate 1/20 = 5.00 % (all time) > 2.22 %: constrained decoding pays off`);
    const doesNot = await settle([...argv, rarely, '--since', '7d', '--json'], { env });
    expect(JSON.parse(doesNot.stdout)).toMatchObject({
      pBreak: (80 * 0.5) / 1800,
      measured: { tool: rarely, calls: 20, malformed: 0, rate: 0, window: 'last 7d' },
      constrainedDecodingPaysOff: false,
    });
    const unknown = await settle([...argv, uniqueId('never')], { env });
    expect(unknown.code).toBe(2);
    expect(oneLine(unknown.stderr)).toMatch(
      /^settle: --tool must name a tool with recorded calls \(none for "never-[0-9a-f]+", all time\)$/,
    );
  });

  it.each([
    [['stats', '--since', '3 days'], /--since must be a duration like 30m, 24h or 7d/],
    [['stats', '--since', '0h'], /--since must be a duration/],
    [['breakeven', '--gen-tokens', '0', '--mask-ms', '0.5', '--repair-ms', '1800'], /--gen-tokens must be an integer from 1/],
    [['breakeven', '--gen-tokens', '80', '--mask-ms', '-1', '--repair-ms', '1800'], /--mask-ms must be a decimal number ≥ 0/],
    [['breakeven', '--gen-tokens', '80', '--mask-ms', '0.5', '--repair-ms', '0'], /--repair-ms must be a decimal number > 0/],
    [['breakeven', '--gen-tokens', '80', '--mask-ms', 'abc', '--repair-ms', '1'], /--mask-ms must be a decimal number/],
    [['breakeven', '--gen-tokens', '80', '--mask-ms', '0.5'], /required option '--repair-ms <ms>' not specified/],
  ])('%j exits 2 with one line naming the flag', async (args, message) => {
    const r = await settle(args, { env });
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toMatch(message);
  });

  it('stats without a database exits 2 naming DATABASE_URL', async () => {
    const r = await settle(['stats'], { env: { DATABASE_URL: '' } });
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe('settle: DATABASE_URL: must be set (or run `settle dev`, whose settings the CLI then finds)');
  });
});

describe('settle cost', () => {
  it('counts our catalog against source listing 5 with o200k_base: K, mean S, per turn, per trajectory, difference', async () => {
    const r = await settle(['cost', '--turns', '40', '--vs', path.join(FIXTURES, 'listing5.json'), '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.encoding).toBe('o200k_base');
    expect(out.counted).toMatch(/compact JSON text \(JSON\.stringify\) as published/);
    // Listing 5's definitions, measured (deterministic for a given encoding).
    expect(out.vs.tools).toEqual([
      { name: 'bash_execute', tokens: 97 },
      { name: 'file_view', tokens: 101 },
      { name: 'file_edit', tokens: 93 },
      { name: 'grep_search', tokens: 97 },
    ]);
    expect(out.vs.cost).toEqual({ turns: 40, tools: 4, meanTokens: 97, perTurn: 388, perTrajectory: 15_520 });
    const ours = out.catalog.cost;
    expect(out.catalog.tools.map((t: { name: string }) => t.name)).toEqual([
      'bash_execute',
      'file_view',
      'file_edit',
      'grep_search',
      'http_request',
    ]);
    expect(ours.tools).toBe(5);
    expect(ours.perTurn).toBe(out.catalog.tools.reduce((a: number, t: { tokens: number }) => a + t.tokens, 0));
    expect(ours.perTrajectory).toBe(40 * ours.perTurn);
    expect(ours.meanTokens).toBe(ours.perTurn / 5);
    expect(out.comparison.difference).toBe(15_520 - ours.perTrajectory);
    expect(out.comparison.fractionLess).toBeCloseTo((15_520 - ours.perTrajectory) / 15_520, 12);
  });

  it('prints the same as text, naming the encoding and what was counted', async () => {
    const r = await settle(['cost', '--catalog', path.join(FIXTURES, 'listing5.json'), '--turns', '40']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("tokens: o200k_base (js-tiktoken) over each definition's compact JSON text (JSON.stringify) as published");
    expect(r.stdout).toContain('K = 4 tools, mean S = 97 tokens');
    expect(r.stdout).toContain('per turn: K · S = 388 tokens');
    expect(r.stdout).toContain('per trajectory: N · K · S = 40 × 4 × 97 = 15,520 tokens');
  });

  it.each([
    [['cost', '--turns', '0'], /--turns must be an integer from 1/],
    [['cost'], /required option '--turns <n>' not specified/],
    [['cost', '--turns', '40', '--catalog', '/nonexistent.json'], /^settle: --catalog \/nonexistent.json must be a readable file/],
    [['cost', '--turns', '40', '--vs', '-'], /^settle: stdin must be valid JSON/],
  ])('%j exits 2 with one line', async (args, message) => {
    const r = await settle(args, { input: 'not json' });
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toMatch(message);
  });
});
