/** Side-effecting implementations of the catalog's tools, by name. */
import type { Observation } from '../../core/observation';
import type { ToolName } from '../../core/tools/catalog';
import type { SettledTool } from '../settled/settled-tool';
import { fileEdit } from './file-edit';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const SETTLED_TOOLS: Record<ToolName, SettledTool<any, any, Observation>> = {
  file_edit: fileEdit,
};
