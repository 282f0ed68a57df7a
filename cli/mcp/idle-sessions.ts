/**
 * The idle timeout of the HTTP gateway's sessions (docs/mcp.md#when-the-session-ends): a client
 * that vanished without ending its session (no DELETE) must not hold it forever. A session is
 * idle while none of its requests is open (an SSE stream or a pending call keeps it busy);
 * `onIdle` ends it once it stayed idle for `idleMs`.
 */
import { InputError } from '../../core/errors';
import { parseDurationMs } from '../../core/duration';
import { UsageError } from '../usage-error';

const DEFAULT_IDLE_TIMEOUT_MS = 30 * 60_000;
const MAX_IDLE_TIMEOUT_MS = 30 * 24 * 3600_000;

/** `--idle-timeout`: 1 s to 30 days, default 30 minutes; only with --http. */
export function idleTimeoutMs(text: string | undefined, http: boolean): number {
  if (text === undefined) return DEFAULT_IDLE_TIMEOUT_MS;
  if (!http) throw new UsageError('--idle-timeout: only with --http (a stdio session ends with its pipe)');
  let ms: number;
  try {
    ms = parseDurationMs(text, '--idle-timeout');
  } catch (err) {
    throw new UsageError(`--idle-timeout: must ${(err as InputError).rule}`);
  }
  if (ms > MAX_IDLE_TIMEOUT_MS) throw new UsageError(`--idle-timeout: must be at most 30d (got ${text})`);
  return ms;
}

export class IdleSessions {
  private readonly open = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly idleMs: number,
    private readonly onIdle: (sessionId: string) => void,
  ) {}

  /** A request of the session began. */
  begin(sessionId: string): void {
    this.open.set(sessionId, (this.open.get(sessionId) ?? 0) + 1);
    clearTimeout(this.timers.get(sessionId));
    this.timers.delete(sessionId);
  }

  /** A request of the session ended (its response closed): the clock starts when none is open. */
  end(sessionId: string): void {
    const open = (this.open.get(sessionId) ?? 1) - 1;
    this.open.set(sessionId, open);
    if (open > 0) return;
    const timer = setTimeout(() => {
      this.forget(sessionId);
      this.onIdle(sessionId);
    }, this.idleMs);
    timer.unref();
    this.timers.set(sessionId, timer);
  }

  /** The session ended some other way. */
  forget(sessionId: string): void {
    clearTimeout(this.timers.get(sessionId));
    this.timers.delete(sessionId);
    this.open.delete(sessionId);
  }
}
