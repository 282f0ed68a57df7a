/** The activities a settle worker registers, one group per concern. */
import { registerToolNames } from '../observability/tool-names';
import { capabilityActivities } from './capability';
import { activityContext, type ActivityDeps } from './context';
import { hostActivities } from './hosts';
import { modelActivities } from './model';
import { operatorActivities } from './operator';
import { readOnlyActivities } from './read-only';
import { settledCallActivities } from './settled-calls';
import { statsActivities } from './stats';
import { teamCallActivities } from './team-calls';

export function createActivities(deps: ActivityDeps) {
  const ctx = activityContext(deps);
  // Metrics label calls of these tools by name; every other name is `other` (bounded series).
  registerToolNames(ctx.registry.names());
  return {
    ...capabilityActivities(ctx),
    ...teamCallActivities(ctx),
    ...statsActivities(ctx),
    ...settledCallActivities(ctx),
    ...modelActivities(ctx),
    ...readOnlyActivities(ctx),
    ...operatorActivities(ctx),
    ...hostActivities(ctx),
  };
}

export type SettleActivities = ReturnType<typeof createActivities>;
