/**
 * Which lane a tool's calls run in: its definition's declared duration, the operator's override,
 * never anything a spec or a model sends (core/tools/lanes.ts, activities/tools/registry.ts).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { laneFor, LOCAL_LANE_MAX_MS, parseLaneOverrides } from '../../core/tools/lanes';
import { ToolRegistry } from '../../activities/tools/registry';
import { defineTool } from '../../activities/tools/team-tool';
import { loadWorkerPolicy } from '../../activities/worker-policy';

const quick = defineTool({
  name: 'stamp_ticket',
  description: 'Stamps one ticket.',
  args: z.strictObject({ id: z.string().min(1).max(32).describe('The ticket') }),
  level: 'A2',
  maxDurationMs: 500,
  execute: async () => ({ stamped: true }),
  probe: async () => ({ verdict: 'not_applied', detail: 'no stamp' }),
});

const slow = defineTool({
  name: 'deploy_service',
  description: 'Deploys one service.',
  args: z.strictObject({ service: z.string().min(1).max(32).describe('The service') }),
  level: 'A2',
  execute: async () => ({ deployed: true }),
  probe: async () => ({ verdict: 'not_applied', detail: 'not deployed' }),
});

describe('lanes', () => {
  it('puts a tool that declares a short duration in the local lane, bounded by it, and others in the activity lane', () => {
    expect(laneFor(500, undefined)).toEqual({ lane: 'local', boundMs: 500 });
    expect(laneFor(LOCAL_LANE_MAX_MS + 1, undefined)).toEqual({ lane: 'activity' });
    expect(laneFor(undefined, undefined)).toEqual({ lane: 'activity' });
    // The operator's word wins either way; a local override never exceeds the local bound.
    expect(laneFor(500, 'activity')).toEqual({ lane: 'activity' });
    expect(laneFor(undefined, 'local')).toEqual({ lane: 'local', boundMs: LOCAL_LANE_MAX_MS });
    expect(laneFor(60_000, 'local')).toEqual({ lane: 'local', boundMs: LOCAL_LANE_MAX_MS });
  });

  it('gives the built-ins and team tools their lanes in the registry, the operator overriding', () => {
    const lanes = new ToolRegistry([quick, slow]).lanes();
    expect(lanes).toMatchObject({
      file_view: { lane: 'activity' },
      grep_search: { lane: 'activity' },
      file_edit: { lane: 'local', boundMs: 1_000 },
      bash_execute: { lane: 'activity' },
      http_request: { lane: 'activity' },
      stamp_ticket: { lane: 'local', boundMs: 500 },
      deploy_service: { lane: 'activity' },
    });
    // spawn_subagent runs as a child workflow: it has no lane.
    expect(lanes).not.toHaveProperty('spawn_subagent');
    const overridden = new ToolRegistry([quick, slow], { lanes: { file_edit: 'activity', deploy_service: 'local' } }).lanes();
    expect(overridden.file_edit).toEqual({ lane: 'activity' });
    expect(overridden.deploy_service).toEqual({ lane: 'local', boundMs: LOCAL_LANE_MAX_MS });
  });

  it('refuses an override of a tool the worker does not run as an activity, naming it', () => {
    expect(() => new ToolRegistry([], { lanes: { send_invoice: 'local' } })).toThrow(
      'SettlePlugin lanes: send_invoice is not a tool an activity of this worker runs',
    );
    expect(() => new ToolRegistry([], { lanes: { spawn_subagent: 'local' } })).toThrow(/spawn_subagent is not a tool/);
  });

  it('reads SETTLE_LANES, and refuses a malformed entry in one line naming it', () => {
    expect(parseLaneOverrides(' file_edit=activity, stamp_ticket=local ')).toEqual({ file_edit: 'activity', stamp_ticket: 'local' });
    expect(parseLaneOverrides(undefined)).toEqual({});
    expect(() => parseLaneOverrides('file_edit=fast')).toThrow(
      'SETTLE_LANES[0] must be <tool>=local or <tool>=activity (got "file_edit=fast")',
    );
    expect(() => parseLaneOverrides('file_edit=local,file_edit=activity')).toThrow('SETTLE_LANES[1] must name each tool once');
    expect(loadWorkerPolicy({ SETTLE_WORKSPACE_ROOT: '/tmp', SETTLE_LANES: 'grep_search=activity' }).lanes).toEqual({
      grep_search: 'activity',
    });
  });

  it('refuses a maxDurationMs that is not a positive whole number', () => {
    expect(() => defineTool({ ...slow, maxDurationMs: 0 })).toThrow(
      'defineTool("deploy_service"): maxDurationMs must be a positive whole number of milliseconds',
    );
  });
});
