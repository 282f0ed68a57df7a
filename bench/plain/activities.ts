/**
 * The baseline's one activity: the same atomic edit as settle's `file_edit` (the same plan —
 * resolve inside the workspace, exactly one match — and the same execute: temporary file, fsync,
 * rename), with no endpoint record around it.
 */
import { fileEdit } from '../../activities/tools/file-edit';
import type { PlainEdit } from './workflows';

export const plainActivities = {
  async plainFileEdit(input: { workspace: string; edit: PlainEdit }): Promise<string> {
    const env = { workspace: input.workspace };
    const args = { ...input.edit, allow_multiple: false };
    const plan = await fileEdit.plan(args, env);
    if (plan.kind === 'answer') return plan.result.error ?? plan.result.output;
    const result = await fileEdit.execute(args, plan.intent, env, { key: 'plain', generation: 1, assertLeaseHeld: () => {} });
    return result.output;
  },
};

export type PlainActivities = typeof plainActivities;
