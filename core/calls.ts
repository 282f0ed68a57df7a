/** A tool call as a model or orchestrator proposes it, before validation. */
export interface ProposedCall {
  /** The model's tool-call id (unique within the turn). */
  call_id: string;
  tool: string;
  args: Record<string, unknown>;
}
