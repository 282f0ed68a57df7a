/**
 * The `settle` command. Invalid input exits 2 with one line naming the argument and the rule.
 *
 * Start-up is per command: the command groups in other files (and heavy dependencies such as
 * Temporal's client, Postgres or the linter) are imported only when their command runs, so
 * `settle key` does not pay for `settle start` (npm run bench measures it).
 */
import fs from 'node:fs';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { canonicalJson } from '../core/jcs';
import { parseIJson } from '../core/json-text';
import { deriveKey } from '../core/key';
import { InputError, errorMessage } from '../core/errors';
import { isRecordState, RECORD_STATES } from '../core/records';
import { UsageError } from './usage-error';
import { assertArgumentsUtf8 } from './argv-bytes';
import { printable, printableValue } from './terminal-text';

/** Rows `settle records` lists at most: a bigger number is a typo, and the database would refuse one past 2^63. */
const MAX_LIST_LIMIT = 1_000_000;

// A reader that stops early (`settle status ID | head -3`) closes the pipe: stop quietly, as
// command-line tools do on SIGPIPE, instead of crashing with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}

const program = new Command();
program
  .name('settle')
  .description('Effect settlement for AI agents’ tool calls on Temporal and Postgres.')
  .showHelpAfterError(false)
  .exitOverride()
  .configureOutput({ writeErr: (s) => process.stderr.write(s) });

program
  .command('demo')
  .description('Start the embedded stack, run a demo trajectory, print a summary, stop everything.')
  .option('--keep', 'leave the stack running afterwards to look at the Web UI (Ctrl-C stops it)', false)
  .action(async (opts: { keep: boolean }) => {
    const { runDemo } = await import('./demo');
    process.exitCode = await runDemo({ keep: opts.keep, log: (l) => console.error(l) });
  });

program
  .command('dev')
  .description('Start Temporal (with Web UI), Postgres and a worker; stay up until Ctrl-C.')
  .option(
    '--workers <n>',
    'run N workers as separate processes (1 to 16), each ending with settle dev; default: one inside this process',
    parsePositiveInt('--workers', 16),
  )
  .action(async (opts: { workers?: number }) => {
    const { runDev } = await import('./dev');
    process.exitCode = await runDev((l) => console.error(l), opts.workers === undefined ? {} : { workers: opts.workers });
  });

program
  .command('console')
  .description(
    'A web page on 127.0.0.1 listing every call that needs a person (IN_DOUBT, lapsed leases, waiting for approval), ' +
      'with actions signed by your operator key (SETTLE_OPERATOR_KEY, or the key of a running settle dev).',
  )
  .option('--port <n>', 'the port on 127.0.0.1 (default: any free one)')
  .option('--ui-url <url>', 'the Temporal Web UI, for links to trajectories (default: the one of a running settle dev)')
  .action(async (opts: { port?: string; uiUrl?: string }) => {
    const { runConsole } = await import('./console/run');
    await runConsole(opts);
  });

program
  .command('migrate')
  .description("Bring the database (DATABASE_URL, or a running `settle dev`) to settle's latest schema; workers do this on start.")
  .action(async () => {
    const { databaseUrl } = await import('./connections');
    const { assertReachable, migrateToLatest, redactUrl } = await import('../activities/store/database');
    const url = databaseUrl();
    await assertReachable(url);
    const applied = await migrateToLatest(url);
    console.log(`settle migrate: ${applied.length ? `applied ${applied.join(', ')}` : 'schema up to date'} (${redactUrl(url)})`);
  });

program
  .command('key')
  .description('Print the idempotency key (docs/design.md#key-derivation) of exactly these components; no defaults are applied to args.')
  .requiredOption('--trajectory <id>', 'trajectory (workflow) id')
  .requiredOption('--turn <n>', 'turn number, an integer ≥ 0', parseTurn)
  .requiredOption('--call-id <id>', 'tool-call id')
  .requiredOption('--tool <name>', 'tool name')
  .option('--args <json>', 'arguments as a JSON object')
  .option(
    '--args-file <file>',
    'read the arguments (UTF-8 JSON) from this file, or - for stdin: for arguments above the OS limit of one argument',
  )
  .option('--secret-env <VAR>', 'keyed mode: HMAC secret read from this environment variable')
  .action(
    (opts: { trajectory: string; turn: number; callId: string; tool: string; args?: string; argsFile?: string; secretEnv?: string }) => {
      // Bytes, strictly decoded: Node reads an invalid byte on the command line as U+FFFD, which
      // would give `caf\xe9` and `caf\xe8` one key (cli/argv-bytes.ts).
      assertArgumentsUtf8();
      // Strict I-JSON (core/json-text.ts): a repeated member or a rounded number would give another call's key.
      const argsFlag = opts.args !== undefined ? '--args' : '--args-file';
      const args = withField(() => parseIJson(argsBytes(opts), { field: 'args' }), { args: argsFlag });
      let secret: Uint8Array | undefined;
      if (opts.secretEnv !== undefined) {
        const value = process.env[opts.secretEnv];
        if (!value) throw new UsageError(`--secret-env: environment variable ${opts.secretEnv} must be set and non-empty`);
        secret = new TextEncoder().encode(value);
      }
      const key = withField(
        () =>
          deriveKey(
            { trajectoryId: opts.trajectory, turn: opts.turn, callId: opts.callId, tool: opts.tool, args: args as Record<string, unknown> },
            secret,
          ),
        { trajectory_id: '--trajectory', turn: '--turn', call_id: '--call-id', tool: '--tool', args: argsFlag },
      );
      console.log(key);
    },
  );

program
  .command('canonicalize')
  .description('Read one I-JSON value (UTF-8) on stdin; write its RFC 8785 (JCS) form and a newline.')
  .action(() => {
    // Bytes, not a string: invalid UTF-8 is refused rather than read as U+FFFD.
    const value = withField(() => parseIJson(fs.readFileSync(0), { field: 'stdin' }), {});
    process.stdout.write(withField(() => canonicalJson(value, 'stdin'), {}) + '\n');
  });

program
  .command('tools')
  .description('Print the tool catalog exactly as published to models (JSON Schema draft 2020-12).')
  .option('--json', 'the published definitions as one JSON array', false)
  .action(async (opts: { json: boolean }) => {
    const { publishedCatalog } = await import('../core/tools/catalog');
    const tools = publishedCatalog();
    if (opts.json) {
      console.log(JSON.stringify(tools, null, 2));
      return;
    }
    const { spawnSubagentArgs, SPAWN_SUBAGENT } = await import('../core/capability/subagent');
    const { z } = await import('zod');
    // spawn_subagent is the trajectory workflow's own tool (it starts a child workflow): listed, not published to models.
    const spawn = z.toJSONSchema(spawnSubagentArgs(), { io: 'input' }) as Record<string, unknown>;
    const listed = [
      ...tools,
      {
        name: SPAWN_SUBAGENT,
        description: 'Starts a sub-agent: a child trajectory with a capability attenuated from this one (docs/spec.md).',
        parameters: spawn,
        'x-settle-level': 'workflow',
      },
    ];
    for (const t of listed) {
      const props = (t.parameters as { properties: Record<string, { type?: string }>; required?: string[] }).properties;
      const required = new Set((t.parameters as { required?: string[] }).required ?? []);
      const fields = Object.entries(props).map(([k, v]) => `${k}${required.has(k) ? '' : '?'}: ${v.type ?? 'any'}`);
      console.log(`${t.name.padEnd(13)} ${t['x-settle-level']}  (${fields.join(', ')})\n${' '.repeat(18)}${t.description}\n`);
    }
  });

program
  .command('records')
  .description('List endpoint records.')
  .option('--state <state>', `one of ${RECORD_STATES.join(', ')}`, parseState)
  .option('--trajectory <id>', 'only this trajectory')
  .option('--limit <n>', `at most this many rows (1 to ${MAX_LIST_LIMIT})`, parsePositiveInt('--limit', MAX_LIST_LIMIT), 1000)
  .option('--json', 'one JSON array on stdout', false)
  .action(async (opts: { state?: (typeof RECORD_STATES)[number]; trajectory?: string; limit: number; json: boolean }) => {
    const { withStore } = await import('./connections');
    await withStore(async (store) => {
      const records = await store.list({
        ...(opts.state ? { state: opts.state } : {}),
        ...(opts.trajectory ? { trajectoryId: opts.trajectory } : {}),
        limit: opts.limit,
      });
      if (opts.json) {
        console.log(JSON.stringify(records, null, 2));
        return;
      }
      if (records.length === 0) {
        console.log('no records');
        return;
      }
      console.log('key               state         gen  trajectory / turn / call               tool        updated');
      for (const r of records) {
        console.log(
          `${r.key.slice(0, 16)}  ${r.state.padEnd(12)}  ${String(r.generation).padStart(3)}  ${printable(`${r.trajectoryId} / ${r.turn} / ${r.callId}`).padEnd(38)} ${printable(r.tool).padEnd(11)} ${r.updatedAt.toISOString()}`,
        );
      }
    });
  });

program
  .command('show')
  .description('Show one endpoint record and its event history.')
  .argument('<key>', 'the 64-hex-digit idempotency key, or a unique prefix of at least 8 hex digits')
  .option('--json', 'JSON on stdout', false)
  .action(async (keyArg: string, opts: { json: boolean }) => {
    const { fullKey, keyArgument } = await import('./key-prefix');
    keyArgument(keyArg);
    const { withStore } = await import('./connections');
    await withStore(async (store) => {
      const key = await fullKey(store, keyArg);
      const record = await store.get(key);
      if (!record) throw new UsageError(`KEY: no endpoint record for ${key}`);
      const events = await store.events(key);
      if (opts.json) {
        console.log(JSON.stringify({ record, events }, null, 2));
        return;
      }
      const { args, intent, result, ...rest } = record;
      for (const [k, v] of Object.entries(rest)) console.log(`${k.padEnd(13)} ${printableValue(v)}`);
      console.log(`${'args'.padEnd(13)} ${printable(JSON.stringify(args))}`);
      console.log(`${'intent'.padEnd(13)} ${printable(JSON.stringify(intent))}`);
      console.log(`${'result'.padEnd(13)} ${printable(JSON.stringify(result))}`);
      console.log('\nevents:');
      for (const e of events) {
        console.log(
          `  ${e.at.toISOString()}  gen ${e.generation}  ${e.fromState} → ${e.toState}  by ${printable(e.actor)}  ${printable(JSON.stringify(e.detail))}`,
        );
      }
    });
  });

/**
 * The bytes of `--args` or of the file `--args-file` names (exactly one of them). `--args` is
 * lossless UTF-8 once assertArgumentsUtf8 has passed, so encoding it again gives the bytes the
 * shell passed: both then meet the byte rules of canonicalize (a leading BOM is dropped).
 */
function argsBytes(opts: { args?: string; argsFile?: string }): Uint8Array {
  if ((opts.args === undefined) === (opts.argsFile === undefined)) throw new UsageError('--args or --args-file: give exactly one of them');
  if (opts.args !== undefined) return new TextEncoder().encode(opts.args);
  const file = opts.argsFile!;
  try {
    return fs.readFileSync(file === '-' ? 0 : file);
  } catch (err) {
    throw new UsageError(`--args-file: cannot read ${file === '-' ? 'stdin' : file} (${(err as Error).message})`);
  }
}

function parseTurn(value: string): number {
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) throw new InvalidArgumentError('must be an integer ≥ 0');
  return Number(value);
}

function parsePositiveInt(flag: string, max: number) {
  return (value: string): number => {
    if (!/^[1-9]\d*$/.test(value) || Number(value) > max) throw new InvalidArgumentError(`${flag} must be an integer from 1 to ${max}`);
    return Number(value);
  };
}

function parseState(value: string) {
  if (!isRecordState(value)) throw new InvalidArgumentError(`must be one of ${RECORD_STATES.join(', ')}`);
  return value;
}

/** Re-labels an InputError's field with the CLI flag that carried it. */
function withField<T>(fn: () => T, flags: Record<string, string>): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof InputError) {
      const [head, ...rest] = err.field.split(/(?=[.[ ])/);
      const flag = flags[head ?? ''];
      throw new UsageError(`${flag ? flag + (rest.length ? ` (${head}${rest.join('')})` : '') : err.field} must ${err.rule}`);
    }
    throw err;
  }
}

/** Commands defined in other files, by the module that defines them. */
const COMMAND_GROUPS: { commands: string[]; register: () => Promise<(program: Command) => void> }[] = [
  {
    commands: ['start', 'status', 'approve', 'resolve'],
    register: async () => (await import('./trajectory-commands')).registerTrajectoryCommands,
  },
  { commands: ['cap'], register: async () => (await import('./cap-commands')).registerCapabilityCommands },
  { commands: ['operator'], register: async () => (await import('./operator-commands')).registerOperatorCommands },
  { commands: ['lint', 'stats', 'breakeven', 'cost'], register: async () => (await import('./workbench')).registerWorkbenchCommands },
];

/** The command named on the command line (the first argument that is not an option), if any. */
const named = process.argv.slice(2).find((a) => !a.startsWith('-'));
const isOwnCommand = program.commands.some((c) => c.name() === named);
for (const group of COMMAND_GROUPS) {
  // Help, an unknown command or one of this group's: register the group. Otherwise skip its imports.
  if (!isOwnCommand && (named === undefined || group.commands.includes(named) || !COMMAND_GROUPS.some((g) => g.commands.includes(named)))) {
    (await group.register())(program);
  }
}

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // Help and version are not errors; everything else commander reports is bad usage.
    process.exit(err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0 ? 0 : 2);
  }
  if (err instanceof UsageError) {
    console.error(`settle: ${err.message}`);
    process.exit(2);
  }
  console.error(`settle: ${errorMessage(err)}`);
  process.exit(1);
}
