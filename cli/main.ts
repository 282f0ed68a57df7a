/**
 * The `settle` command. Invalid input exits 2 with one line naming the argument and the rule.
 *
 * Start-up is per command: every command and its options are declared here and in the
 * *-commands.ts files (so `settle --help` lists them all), but what a command does, and the heavy
 * dependencies it needs (Temporal's client, Postgres, zod schemas, the linter, the MCP SDK), is
 * imported only inside its action: `settle --help` and `settle key` load little more than
 * commander (npm run bench measures it). Declaration modules import only constants and parsers.
 */
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { errorMessage } from '../core/errors';
import { isRecordState, RECORD_STATES, type RecordState } from '../core/records';
import { UsageError } from './usage-error';
import type { KeyOptions } from './key-actions';
import { registerTrajectoryCommands } from './trajectory-commands';
import { registerCapabilityCommands } from './cap-commands';
import { registerOperatorCommands } from './operator-commands';
import { registerWorkbenchCommands } from './workbench';
import { registerMcpCommands } from './mcp/commands';

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
  .command('doctor')
  .description(
    'Check what settle requires, from this environment: the record store (DATABASE_URL: durability, replicas, pooler, clock, schema, TLS) ' +
      'and Temporal (connection, TLS, namespace, search attributes); one line each with its fix, exit 1 on a failure.',
  )
  .action(async () => {
    const { runDoctor } = await import('./doctor/run');
    process.exitCode = await runDoctor((line) => console.log(line));
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
  .action(async (opts: KeyOptions) => (await import('./key-actions')).printKey(opts));

program
  .command('canonicalize')
  .description('Read one I-JSON value (UTF-8) on stdin; write its RFC 8785 (JCS) form and a newline.')
  .action(async () => (await import('./key-actions')).canonicalize());

program
  .command('tools')
  .description('Print the tool catalog exactly as published to models (JSON Schema draft 2020-12).')
  .option('--json', 'the published definitions as one JSON array', false)
  .action(async (opts: { json: boolean }) => (await import('./tools-action')).printTools(opts));

program
  .command('records')
  .description('List endpoint records.')
  .option('--state <state>', `one of ${RECORD_STATES.join(', ')}`, parseState)
  .option('--trajectory <id>', 'only this trajectory')
  .option('--limit <n>', `at most this many rows (1 to ${MAX_LIST_LIMIT})`, parsePositiveInt('--limit', MAX_LIST_LIMIT), 1000)
  .option('--json', 'one JSON array on stdout', false)
  .action(async (opts: { state?: RecordState; trajectory?: string; limit: number; json: boolean }) =>
    (await import('./record-actions')).listRecords(opts),
  );

program
  .command('show')
  .description('Show one endpoint record and its event history.')
  .argument('<key>', 'the 64-hex-digit idempotency key, or a unique prefix of at least 8 hex digits')
  .option('--json', 'JSON on stdout', false)
  .action(async (keyArg: string, opts: { json: boolean }) => (await import('./record-actions')).showRecord(keyArg, opts));

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

registerTrajectoryCommands(program);
registerCapabilityCommands(program);
registerOperatorCommands(program);
registerWorkbenchCommands(program);
registerMcpCommands(program);

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
