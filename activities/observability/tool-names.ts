/**
 * The values a metric's `tool` label may take: the tools this process's workers registered, and
 * `other`. A call's tool name comes from the model (a malformed call may name anything: `rm_rf`,
 * `deploy_prod`) or a spec author; as a label it would make one series per invented name.
 * Logs keep the real name; only metrics are bounded.
 */
import { SPAWN_SUBAGENT } from '../../core/capability/subagent';
import { CATALOG } from '../../core/tools/catalog';

/** What every name outside the registered tools is counted as. */
export const OTHER_TOOL = 'other';

const registered = new Set<string>([...Object.keys(CATALOG), SPAWN_SUBAGENT]);

/** Adds a worker's tool names (createActivities calls it with its registry's). */
export function registerToolNames(names: Iterable<string>): void {
  for (const name of names) registered.add(name);
}

/** The name itself when a worker of this process registered it, else `other`. */
export function toolLabel(name: string): string {
  return registered.has(name) ? name : OTHER_TOOL;
}

/** Every value the `tool` label can take now: the registered tools and `other`. */
export function toolLabels(): string[] {
  return [...registered, OTHER_TOOL];
}
