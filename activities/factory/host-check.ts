/**
 * The host rule at the activities (docs/deploying.md#workers-on-several-hosts): a workspace call
 * runs, and is probed, only on the host whose disk holds its workspace and evidence. The worker
 * that would touch the disk checks it; the workflow's routing only makes it the usual case.
 */
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../../core/failures';
import type { EndpointRecord } from '../store/endpoint-store';
import type { ActivityContext } from './context';

/** Whether a tool's effect and evidence live in a workspace on one host's disk (the file and shell tools). */
export function hostBound(ctx: ActivityContext, tool: string): boolean {
  return ctx.registry.get(tool)?.needsWorkspace === true;
}

/**
 * Refuses (retryable: another attempt may reach the right worker) a workspace call the workflow
 * sent to `host` when this worker is on another one.
 */
export function requireHost(ctx: ActivityContext, tool: string, host: string | undefined): void {
  if (host === undefined || !hostBound(ctx, tool) || host === ctx.host) return;
  throw wrongHost(tool, host, ctx.host);
}

export function wrongHost(tool: string, wanted: string, here: string): ApplicationFailure {
  return ApplicationFailure.retryable(
    `${tool}: its workspace is on host ${wanted}, this worker is on host ${here}: not run here (its host's queue runs it)`,
    FAILURE.WrongHost,
  );
}

/**
 * Why this worker cannot see an in-doubt record's evidence, or null when it can: the record's
 * executor ran on another host, or on an unknown one (claimed before hosts were recorded).
 * `final`: no probe anywhere can tell (only an operator can).
 */
export function evidenceElsewhere(ctx: ActivityContext, record: EndpointRecord): { detail: string; final: boolean } | null {
  if (!hostBound(ctx, record.tool)) return null;
  if (record.host === ctx.host) return null;
  if (record.host === null) {
    return {
      detail: `generation ${record.generation} was claimed before settle recorded hosts: which host's disk holds its evidence is unknown`,
      final: true,
    };
  }
  return {
    detail: `its evidence is on host ${record.host}'s disk; this worker is on host ${ctx.host} and cannot see it`,
    final: false,
  };
}
