/**
 * Every `ApplicationFailure` type settle raises, in one place: orchestrators and alerts match on
 * these strings (they show as the failure type in the Temporal Web UI), so they are API.
 * Plain data: workflow code and activities import it alike.
 */
export const FAILURE = {
  /** The trajectory input broke the input contract (core/trajectory-input.ts); nothing ran. */
  InvalidInput: 'SettleInvalidInput',
  /** `finish(…, 'failed')`: compensators ran; details carry the TrajectoryResult. */
  TrajectoryFailed: 'SettleTrajectoryFailed',
  /** An activity that needs a workflow context ran outside one. */
  NoWorkflow: 'SettleNoWorkflow',
  /** The activity re-derived a different key than the workflow sent: refused, nothing claimed. */
  KeyMismatch: 'SettleKeyMismatch',
  /** A probe or operator settlement named a key with no endpoint record. */
  NoRecord: 'SettleNoRecord',
  UnknownTool: 'SettleUnknownTool',
  /** A read-only tool reached the settled path or the reverse. */
  WrongLevel: 'SettleWrongLevel',
  /** Arguments that passed the workflow's validation failed the activity's (version skew). */
  InvalidArgs: 'SettleInvalidArgs',
  /** keyMode 'hmac' on a worker without a usable SETTLE_KEY_SECRET. */
  KeySecret: 'SettleKeySecret',
  /**
   * A settled attempt ended IN_DOUBT: its effect may have happened. Raised (non-retryable) instead
   * of a normal return when the workflow asks for it, so the Web UI shows the attempt failed, never
   * green; details carry the attempt's outcome, and the workflow goes on to probe or wait as before.
   */
  InDoubt: 'SettleInDoubt',
  /**
   * A probe answered unknown: the call stays IN_DOUBT. Raised (non-retryable, benign) instead of a
   * normal return when the workflow asks for it, so the Web UI shows the probe failed, never a green
   * "Completed"; details carry the probe's report, and the workflow probes again or waits as before.
   */
  ProbeUnknown: 'SettleProbeUnknown',
  /**
   * An operator verdict or approval without a valid operator credential (docs/security.md#operator-authority):
   * refused before anything changed.
   */
  OperatorAuthority: 'SettleOperatorAuthority',
  /**
   * A team workflow called a tool that needs a capability (http_request: its reach is the
   * capability's host: objects) without passing one to settled({ capability }): nothing ran.
   */
  CapabilityRequired: 'SettleCapabilityRequired',
  /**
   * A workspace call reached a worker on another host than its workspace's (core/hosts.ts): refused
   * before anything was claimed or touched. Retryable: a retry may reach the right host; a routed
   * call (its host's own queue) never meets it.
   */
  WrongHost: 'SettleWrongHost',
  /** The model driver's configuration cannot work on this worker (e.g. its API key variable). */
  ModelConfig: 'SettleModelConfig',
  /** The model server refused the request for good (4xx other than rate limits). */
  ModelRejected: 'SettleModelRejected',
} as const;

export type FailureType = (typeof FAILURE)[keyof typeof FAILURE];
