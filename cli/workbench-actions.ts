/**
 * What `settle lint`, `stats`, `breakeven` and `cost` do (declared in cli/workbench.ts): imported
 * only when one of them runs, with the linter, the tokenizer and Postgres.
 */
import type { Command } from 'commander';
import { InputError } from '../core/errors';
import { printable } from './terminal-text';
import { readFileOrStdin } from './stdin';
import { assertJsonDepth } from '../core/json-text';
import {
  extractAll,
  extractDefinitions,
  formatFinding,
  hasErrors,
  lintDefinitions,
  MAX_LINT_DOCUMENT_DEPTH,
} from '../workbench/lint/index';
import { breakEvenRate, constrainedDecodingPaysOff } from '../workbench/breakeven';
import { type CatalogCost, catalogCost, compareCatalogCost } from '../workbench/catalog-cost';
import { definitionText, ENCODING } from '../workbench/tokens';
import { tokenCounter } from './token-counter';
import { CallStats, type ToolCallStats } from '../activities/store/call-stats';

/** A --since window: its length, and the text the user wrote for it. */
export interface Since {
  ms: number;
  text: string;
}

export async function lint(
  command: Command,
  file: string | undefined,
  opts: { mcp?: string; env: string[]; timeoutMs: number; json: boolean },
): Promise<void> {
  await reportingUsage(command, async () => {
    if ((file === undefined) === (opts.mcp === undefined)) {
      throw new InputError(
        'FILE',
        'be given (a file of tool definitions, or - for stdin), or else --mcp "<command>" — exactly one of them',
      );
    }
    if (opts.mcp === undefined && opts.env.length > 0) throw new InputError('--env', 'be given with --mcp');
    let document: unknown;
    let source: string;
    if (opts.mcp !== undefined) {
      const { listMcpTools } = await import('./mcp-tools');
      document = await listMcpTools(opts.mcp, { timeoutMs: opts.timeoutMs, env: opts.env });
      source = `MCP server ${JSON.stringify(opts.mcp)}`;
    } else {
      source = file === '-' ? 'stdin' : file!;
      document = await readJson(file!);
    }
    // Depth before anything recursive runs: past the limit, exit 2 with one line (no crash, no false finding).
    const { definitions, skipped } = withSource(source, () => {
      assertJsonDepth(document, 'the document', MAX_LINT_DOCUMENT_DEPTH);
      return extractAll(document);
    });
    const findings = withSource(source, () => lintDefinitions(definitions));
    if (opts.json) console.log(JSON.stringify(findings, null, 2));
    // Names, pointers and reasons come from the tool list (an MCP server's own): escaped (terminal-text.ts).
    else for (const f of findings) console.log(printable(formatFinding(f)));
    for (const s of skipped) console.error(printable(`settle lint: skipped ${s.name} (${s.pointer || '""'}): ${s.reason}`));
    const errors = findings.filter((f) => f.severity === 'error').length;
    const warnings = findings.filter((f) => f.severity === 'warning').length;
    const notes = findings.length - errors - warnings;
    const skippedText = skipped.length === 0 ? '' : `; ${plural(skipped.length, 'built-in tool')} skipped`;
    console.error(
      findings.length === 0
        ? `settle lint: no findings in ${plural(definitions.length, 'tool')}${skippedText} (${printable(source)})`
        : `settle lint: ${plural(errors, 'error')}, ${plural(warnings, 'warning')}${notes ? `, ${plural(notes, 'note')}` : ''} in ${plural(definitions.length, 'tool')}${skippedText} (${printable(source)})`,
    );
    if (hasErrors(findings)) process.exitCode = 1;
  });
}

export async function stats(command: Command, opts: { since?: Since; json: boolean }): Promise<void> {
  await reportingUsage(command, async () => {
    const rows = await withCallStats((s) => s.stats(opts.since === undefined ? {} : { sinceMs: opts.since.ms }));
    if (opts.json) {
      console.log(JSON.stringify(rows, null, 2));
      return;
    }
    const window = windowText(opts.since);
    if (rows.length === 0) {
      console.log(`no proposed calls recorded (${window})`);
      return;
    }
    // Tool names as models proposed them: escaped (terminal-text.ts).
    const tools = rows.map((r) => printable(r.tool));
    const width = Math.max(4, ...tools.map((t) => t.length));
    console.log(`${'tool'.padEnd(width)}  ${'calls'.padStart(8)}  ${'malformed'.padStart(9)}  ${'rate'.padStart(8)}`);
    for (const [i, r] of rows.entries()) {
      console.log(
        `${tools[i]!.padEnd(width)}  ${String(r.calls).padStart(8)}  ${String(r.malformed).padStart(9)}  ${percent(r.rate).padStart(8)}`,
      );
    }
    console.log(`(${window}, database clock)`);
  });
}

export async function breakeven(
  command: Command,
  opts: { genTokens: number; maskMs: number; repairMs: number; tool?: string; since?: Since; json: boolean },
): Promise<void> {
  await reportingUsage(command, async () => {
    const pBreak = breakEvenRate({ genTokens: opts.genTokens, maskMs: opts.maskMs, repairMs: opts.repairMs });
    let measured: ToolCallStats | undefined;
    if (opts.tool !== undefined) {
      const tool = opts.tool;
      const rows = await withCallStats((s) => s.stats({ tool, ...(opts.since === undefined ? {} : { sinceMs: opts.since.ms }) }));
      measured = rows[0];
      if (!measured)
        throw new InputError('--tool', `name a tool with recorded calls (none for ${JSON.stringify(tool)}, ${windowText(opts.since)})`);
    }
    const paysOff = measured ? constrainedDecodingPaysOff(measured.rate, pBreak) : undefined;
    if (opts.json) {
      const withMeasurement = measured
        ? { measured: { ...measured, window: windowText(opts.since) }, constrainedDecodingPaysOff: paysOff }
        : {};
      console.log(
        JSON.stringify({ genTokens: opts.genTokens, maskMs: opts.maskMs, repairMs: opts.repairMs, pBreak, ...withMeasurement }, null, 2),
      );
      return;
    }
    console.log(
      `p_break = L_gen · t_mask / T_repair = ${opts.genTokens} × ${opts.maskMs} ms / ${opts.repairMs} ms = ${fraction(pBreak)} (${percent(pBreak)})`,
    );
    console.log(
      pBreak > 0
        ? `constrained decoding pays off for a tool whose calls are malformed more often than ${percent(pBreak)} (about 1 call in ${formatNumber(Math.round(1 / pBreak))})`
        : 'the mask costs nothing: constrained decoding pays off at any malformed rate above 0',
    );
    if (measured) {
      console.log(
        `${printable(measured.tool)}: measured malformed rate ${measured.malformed}/${measured.calls} = ${percent(measured.rate)} (${windowText(opts.since)}) ${paysOff ? '>' : '≤'} ${percent(pBreak)}: ` +
          (paysOff ? 'constrained decoding pays off' : 'constrained decoding does not pay off; repairing malformed calls is cheaper'),
      );
    }
  });
}

export async function cost(command: Command, opts: { catalog?: string; turns: number; vs?: string; json: boolean }): Promise<void> {
  await reportingUsage(command, async () => {
    const main = await measureCatalog(opts.catalog, opts.turns, '--catalog');
    const vs = opts.vs === undefined ? undefined : await measureCatalog(opts.vs, opts.turns, '--vs');
    const comparison = vs ? compareCatalogCost(main.cost.perTrajectory, vs.cost.perTrajectory) : undefined;
    const counted = `${ENCODING} (js-tiktoken) over each definition's compact JSON text (JSON.stringify) as published`;
    if (opts.json) {
      console.log(JSON.stringify({ encoding: ENCODING, counted, catalog: main, ...(vs ? { vs, comparison } : {}) }, null, 2));
      return;
    }
    console.log(`tokens: ${counted}`);
    for (const m of vs ? [main, vs] : [main]) {
      console.log(`\n${printable(m.source)}`);
      const names = m.tools.map((t) => printable(t.name));
      const width = Math.max(...names.map((n) => n.length), 4);
      for (const [i, t] of m.tools.entries()) console.log(`  ${names[i]!.padEnd(width)}  ${String(t.tokens).padStart(6)}`);
      console.log(`  K = ${m.cost.tools} tools, mean S = ${formatNumber(m.cost.meanTokens, 2)} tokens`);
      console.log(`  per turn: K · S = ${formatNumber(m.cost.perTurn)} tokens`);
      console.log(
        `  per trajectory: N · K · S = ${m.cost.turns} × ${m.cost.tools} × ${formatNumber(m.cost.meanTokens, 2)} = ${formatNumber(m.cost.perTrajectory)} tokens`,
      );
    }
    if (vs && comparison) {
      const { difference, fractionLess } = comparison;
      console.log(
        `\n${main.source} vs ${vs.source}: ${formatNumber(Math.abs(difference))} tokens per trajectory ` +
          (difference >= 0 ? `fewer (${percent(fractionLess)} less)` : `more (${percent(-fractionLess)} more)`),
      );
    }
  });
}

interface MeasuredCatalog {
  source: string;
  tools: { name: string; tokens: number }[];
  cost: CatalogCost;
}

async function measureCatalog(file: string | undefined, turns: number, flag: string): Promise<MeasuredCatalog> {
  let definitions;
  let source: string;
  if (file === undefined) {
    const { publishedCatalog } = await import('../core/tools/catalog');
    definitions = extractDefinitions(publishedCatalog());
    source = "settle's own catalog";
  } else {
    source = `${flag} ${file === '-' ? 'stdin' : file}`;
    const document = await readJson(file, flag);
    definitions = withSource(source, () => extractDefinitions(document));
  }
  const countTokens = await tokenCounter();
  const tools = definitions.map((d) => ({ name: d.name, tokens: countTokens(definitionText(d.published)) }));
  return {
    source,
    tools,
    cost: catalogCost(
      tools.map((t) => t.tokens),
      turns,
    ),
  };
}

/** Runs a command body; an InputError becomes commander's one-line error with exit code 2. */
async function reportingUsage(command: Command, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (err) {
    // A message may quote a document's names or a server's stderr: escaped (terminal-text.ts).
    if (err instanceof InputError) command.error(`settle: ${printable(err.message)}`, { exitCode: 2, code: 'settle.usage' });
    throw err;
  }
}

/** Re-labels an InputError from inside a document with where the document came from. */
function withSource<T>(source: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof InputError) throw new InputError(`${source}: ${err.field}`, err.rule);
    throw err;
  }
}

async function readJson(file: string, flag = 'FILE'): Promise<unknown> {
  const label = file === '-' ? 'stdin' : `${flag} ${file}`;
  let text: string;
  try {
    text = (await readFileOrStdin(file)).toString('utf8');
  } catch (err) {
    throw new InputError(label, `be a readable file (${(err as Error).message})`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new InputError(label, `be valid JSON (${(err as Error).message})`);
  }
}

async function withCallStats<T>(fn: (stats: CallStats) => Promise<T>): Promise<T> {
  const { withStore } = await import('./connections');
  return withStore((store) => fn(new CallStats(store.db)));
}

function windowText(since: Since | undefined): string {
  return since === undefined ? 'all time' : `last ${since.text}`;
}

function percent(fraction: number): string {
  return `${(fraction * 100).toFixed(2)} %`;
}

function fraction(x: number): string {
  return x
    .toPrecision(4)
    .replace(/(\.\d*?)0+$/, '$1')
    .replace(/\.$/, '');
}

function formatNumber(n: number, decimals = 0): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: decimals });
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
