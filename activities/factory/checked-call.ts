/** A call's tool and arguments as the worker's registry checks them before anything runs. */
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../../core/failures';
import type { Observation } from '../../core/observation';
import { parseArgs } from '../../core/validation';
import { InputError } from '../../core/errors';
import type { ToolRegistry } from '../tools/registry';
import type { ReadOnlyTool } from '../tools/read-only-tool';
import type { SettledTool } from '../settled/settled-tool';

/* eslint-disable @typescript-eslint/no-explicit-any -- the registry is heterogeneous; args were validated against the tool's own schema */
export function checkedCall<K extends 'read-only' | 'settled'>(
  registry: ToolRegistry,
  toolName: string,
  rawArgs: unknown,
  kind: K,
): { tool: K extends 'read-only' ? ReadOnlyTool<any> : SettledTool<any, any, Observation>; args: Record<string, unknown> } {
  const registered = registry.get(toolName);
  const runnable = registry.runnable(toolName);
  if (!registered || !runnable) throw ApplicationFailure.nonRetryable(`unknown tool ${toolName}`, FAILURE.UnknownTool);
  if (registered.runsIn === 'workflow') {
    throw ApplicationFailure.nonRetryable(`${toolName} runs in its workflow (a child workflow), not in an activity`, FAILURE.WrongLevel);
  }
  if (runnable.kind !== kind) {
    throw ApplicationFailure.nonRetryable(`${toolName} is a ${runnable.kind} tool, not ${kind}`, FAILURE.WrongLevel);
  }
  let args: Record<string, unknown>;
  try {
    args = parseArgs(registered.definition.args, rawArgs) as Record<string, unknown>;
  } catch (err) {
    // The broken rule as details too: an AI SDK agent counts it for `settle stats` (workflows/ai-sdk.ts).
    const issue = err instanceof InputError ? [{ field: err.field, rule: err.rule }] : [];
    throw ApplicationFailure.nonRetryable(`invalid arguments for ${toolName}: ${(err as Error).message}`, FAILURE.InvalidArgs, ...issue);
  }
  return { tool: runnable.tool as never, args };
}
/* eslint-enable @typescript-eslint/no-explicit-any */
