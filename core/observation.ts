/**
 * The one shape every tool call's result takes, whatever the tool: what a model reads back.
 * A tool-level failure (e.g. "old_str matched 0 blocks") is an observation with `error` set and
 * a non-zero `exit_status`, not an exception.
 */
export interface Observation {
  output: string;
  error: string | null;
  /** 0 = success. Shell tools report the process status; other tools 0 or 1. */
  exit_status: number;
  /** True when `output` (or `error`) was cut; the text then ends with a marker. */
  truncated: boolean;
  /** Set when an operator settled the call as having taken effect in part only (never run again). */
  partial?: true;
  /** A shell call's totals, from its cgroup (absent where the worker has none: docs/sandbox.md). */
  resources?: ResourceUsage;
}

/** What one shell call used in total, all its processes together. */
export interface ResourceUsage {
  /** CPU time (user + system), milliseconds. */
  cpu_ms: number;
  /** The most memory held at once (processes and the tmpfs pages it wrote), bytes. */
  peak_memory_bytes: number;
  /** The most processes and threads at once, where the kernel reports it. */
  peak_processes: number | null;
}

export const TRUNCATION_MARKER = '\n[… truncated by settle …]';

export function ok(output: string): Observation {
  return { output, error: null, exit_status: 0, truncated: false };
}

export function failed(error: string, exit_status = 1): Observation {
  return { output: '', error, exit_status, truncated: false };
}

/** Cuts `text` to at most `maxChars`, marking the cut. */
export function truncate(text: string, maxChars: number): { text: string; truncated: boolean } {
  if (text.length <= maxChars) return { text, truncated: false };
  return { text: text.slice(0, Math.max(0, maxChars - TRUNCATION_MARKER.length)) + TRUNCATION_MARKER, truncated: true };
}
