/** Sub-agents' capabilities: a child's signed from its parent's, and its unspent budget returned. */
import { Context } from '@temporalio/activity';
import { attenuate, type Attenuation } from '../capability/attenuate';
import type { ChildRequest } from '../../core/capability/rules';
import { NO_KEYS } from './access';
import type { ActivityContext } from './context';

export function capabilityActivities({ keyRing, budgets }: ActivityContext) {
  return {
    /** Signs a child's capability, attenuated from the parent's, and reserves its budget. */
    async attenuateCapability(input: { parent: unknown; child: ChildRequest }): Promise<Attenuation> {
      if (!keyRing) return { ok: false, component: 'kid', reason: NO_KEYS };
      return attenuate(input.parent, input.child, Context.current().info.workflowExecution?.workflowId ?? '', { ring: keyRing, budgets });
    },

    /** A sub-agent ended: its unspent budget returns to the parent. */
    async closeChildBudget(input: { digest: string }): Promise<void> {
      await budgets.closeChild(input.digest);
    },
  };
}
