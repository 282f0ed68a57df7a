/**
 * The tool-interface workbench: `settle lint`, `settle stats`, `settle breakeven`, `settle cost`.
 *
 * Bad input exits 2 with one line naming the argument and the rule: option values through
 * commander's InvalidArgumentError, everything else through `Command.error` with exit code 2
 * (main.ts maps every non-zero CommanderError to 2; commander has printed the line).
 *
 * Declared here for `settle --help`; what they do (the linter, the tokenizer, Postgres) is in
 * cli/workbench-actions.ts, imported when one of them runs.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { InputError } from '../core/errors';
import { parseDurationMs } from '../core/duration';
import type { Since } from './workbench-actions';

export function registerWorkbenchCommands(program: Command): void {
  program
    .command('lint')
    .description('Check tool definitions against the five schema rules and the anti-patterns; exit 1 if any error is found.')
    .argument('[file]', 'JSON: an array of definitions, {"tools": [...]} (an MCP tools/list result) or one definition; - for stdin')
    .option('--mcp <command>', 'instead of a file: start this MCP server over stdio and lint the tools it lists')
    .option(
      '--timeout-ms <ms>',
      'with --mcp: milliseconds allowed for the server to start and for each request',
      parseIntegerFlag('--timeout-ms', 100, 600_000),
      30_000,
    )
    .option(
      '--env <name>',
      'with --mcp: pass this environment variable to the server (repeatable); it gets only these and HOME, LOGNAME, PATH, SHELL, TERM, USER',
      (name: string, names: string[]) => [...names, name],
      [] as string[],
    )
    .option('--json', 'print the findings as one JSON array', false)
    .action(async function (
      this: Command,
      file: string | undefined,
      opts: { mcp?: string; env: string[]; timeoutMs: number; json: boolean },
    ) {
      await (await import('./workbench-actions')).lint(this, file, opts);
    });

  program
    .command('stats')
    .description('Per tool: proposed calls, malformed calls and the malformed rate (from settle_tool_calls).')
    .option('--since <duration>', 'only calls recorded within this long before now, e.g. 30m, 24h, 7d', parseSince)
    .option('--json', 'one JSON array on stdout', false)
    .action(async function (this: Command, opts: { since?: Since; json: boolean }) {
      await (await import('./workbench-actions')).stats(this, opts);
    });

  program
    .command('breakeven')
    .description('Break-even malformed-call rate for constrained decoding: p_break = L_gen · t_mask / T_repair (source formula 1).')
    .requiredOption(
      '--gen-tokens <n>',
      'L_gen: output tokens in one tool call, an integer ≥ 1',
      parseIntegerFlag('--gen-tokens', 1, 1_000_000_000),
    )
    .requiredOption(
      '--mask-ms <ms>',
      't_mask: milliseconds the grammar mask adds per token, a number ≥ 0',
      parseNumberFlag('--mask-ms', false),
    )
    .requiredOption('--repair-ms <ms>', 'T_repair: milliseconds one repair round costs, a number > 0', parseNumberFlag('--repair-ms', true))
    .option('--tool <name>', "compare with this tool's measured malformed rate (settle stats)")
    .option('--since <duration>', 'with --tool: measure over this window only, e.g. 7d', parseSince)
    .option('--json', 'JSON on stdout', false)
    .action(async function (
      this: Command,
      opts: { genTokens: number; maskMs: number; repairMs: number; tool?: string; since?: Since; json: boolean },
    ) {
      await (await import('./workbench-actions')).breakeven(this, opts);
    });

  program
    .command('cost')
    .description("A catalog's context cost: each definition's tokens, K, mean S, and T = N · K · S per trajectory (source formula 2).")
    .option('--catalog <file>', 'tool definitions as for lint (default: our own catalog, as `settle tools --json` prints it)')
    .requiredOption('--turns <n>', 'N: turns in a trajectory, an integer ≥ 1', parseIntegerFlag('--turns', 1, 1_000_000))
    .option('--vs <file>', 'compare with this catalog')
    .option('--json', 'JSON on stdout', false)
    .action(async function (this: Command, opts: { catalog?: string; turns: number; vs?: string; json: boolean }) {
      await (await import('./workbench-actions')).cost(this, opts);
    });
}

function parseIntegerFlag(flag: string, min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max) throw new InvalidArgumentError(`${flag} must be an integer from ${min} to ${max}`);
    return n;
  };
}

function parseNumberFlag(flag: string, positive: boolean) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+(\.\d+)?$/.test(value) || !Number.isFinite(n) || (positive && n <= 0)) {
      throw new InvalidArgumentError(`${flag} must be a decimal number ${positive ? '> 0' : '≥ 0'} (e.g. 0.5)`);
    }
    return n;
  };
}

function parseSince(value: string): Since {
  try {
    return { ms: parseDurationMs(value, '--since'), text: value };
  } catch (err) {
    if (err instanceof InputError) throw new InvalidArgumentError(err.message);
    throw err;
  }
}
