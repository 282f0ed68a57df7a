/**
 * What each tool call asks of a capability: the right, the target and the cost (docs/design.md#checks-at-every-access).
 * file_view and grep_search read; file_edit writes; bash_execute executes in the workspace; the
 * sandbox gets the network only with the `connect` right; http_request connects to its URL's host and port.
 */
import type { Right } from './token';
import type { Target } from './rules';
import { httpTarget } from '../tools/http-request';

/** Cost units charged per tool call against the capability's budget and per-call ceiling. */
export const COST_PER_CALL = 1;

export interface Access {
  op: Right;
  target: Target;
  cost: number;
}

export function accessFor(tool: string, args: Record<string, unknown>, workspace: string): Access {
  switch (tool) {
    case 'file_view':
    case 'grep_search':
      return { op: 'read', target: { kind: 'path', path: String(args.path) }, cost: COST_PER_CALL };
    case 'file_edit':
      return { op: 'write', target: { kind: 'path', path: String(args.path) }, cost: COST_PER_CALL };
    case 'bash_execute':
      return { op: 'exec', target: { kind: 'path', path: workspace }, cost: COST_PER_CALL };
    case 'http_request': {
      const { host, port } = httpTarget(String(args.url));
      return { op: 'connect', target: { kind: 'host', host, port }, cost: COST_PER_CALL };
    }
    default:
      throw new Error(`no capability mapping for tool ${tool}`);
  }
}
