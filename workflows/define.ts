/**
 * Query, update and signal definitions without the workflow library: the same plain objects
 * `defineQuery`, `defineUpdate` and `defineSignal` of `@temporalio/workflow` return (`{ type,
 * name }`, typed by `@temporalio/common`). The definitions modules are imported by the client
 * and the CLI too, where loading `@temporalio/workflow` for three one-line functions would cost
 * about a quarter of a second at every start (docs/performance.md). Handlers are matched by
 * `name` alone, so workflows registering these behave exactly as with the library's.
 */
import type { QueryDefinition, SignalDefinition, UpdateDefinition } from '@temporalio/common';

export function defineQuery<Ret, Args extends unknown[] = []>(name: string): QueryDefinition<Ret, Args> {
  return { type: 'query', name } as QueryDefinition<Ret, Args>;
}

export function defineUpdate<Ret, Args extends unknown[] = []>(name: string): UpdateDefinition<Ret, Args> {
  return { type: 'update', name } as UpdateDefinition<Ret, Args>;
}

export function defineSignal<Args extends unknown[] = []>(name: string): SignalDefinition<Args> {
  return { type: 'signal', name } as SignalDefinition<Args>;
}
