/** Implementations of the catalog's tools: every catalog entry has exactly one. */
import type { Observation } from '../../core/observation';
import type { ToolName } from '../../core/tools/catalog';
import type { SettledTool } from '../settled/settled-tool';
import type { ReadOnlyTool } from './read-only-tool';
import { bashExecute } from './bash-execute';
import { fileEdit } from './file-edit';
import { fileView } from './file-view';
import { grepSearch } from './grep-search';
import { httpRequest } from './http-request';
import { settledToolOf } from './team-tool';

/* eslint-disable @typescript-eslint/no-explicit-any -- a heterogeneous registry: each tool validates its own argument type */
export type ToolImplementation =
  /** A0: runs directly, no endpoint record. */
  | { kind: 'read-only'; tool: ReadOnlyTool<any> }
  /** A1–A3: runs through endpoint records, with intent and probe. */
  | { kind: 'settled'; tool: SettledTool<any, any, Observation> };
/* eslint-enable @typescript-eslint/no-explicit-any */

export const TOOL_IMPLEMENTATIONS = {
  bash_execute: { kind: 'settled', tool: bashExecute },
  file_edit: { kind: 'settled', tool: fileEdit },
  file_view: { kind: 'read-only', tool: fileView },
  grep_search: { kind: 'read-only', tool: grepSearch },
  // Defined through defineTool, as a team's tool is (docs/http-request.md).
  http_request: { kind: 'settled', tool: settledToolOf(httpRequest) },
} as const satisfies Record<ToolName, ToolImplementation>;
