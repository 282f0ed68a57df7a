/** A0 tools: read-only, so no endpoint record; a retry simply reads again (docs/design.md#side-effect-levels). */
import type { Observation } from '../../core/observation';
import type { ToolEnv } from '../settled/settled-tool';

export interface ReadOnlyTool<Args> {
  name: string;
  run(args: Args, env: ToolEnv): Promise<Observation>;
}
