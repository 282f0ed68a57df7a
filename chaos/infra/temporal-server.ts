/**
 * A Temporal dev server the chaos suite may restart: same port, same SQLite file, so workers and
 * clients keep their address and every workflow survives the restart.
 */
import path from 'node:path';
import { startTemporal, type TemporalHandle } from '../../stack/temporal';
import { isListening } from '../../stack/ports';

export class TemporalServer {
  private handle: TemporalHandle | null;

  private constructor(
    handle: TemporalHandle,
    readonly dbFile: string,
    readonly port: number,
  ) {
    this.handle = handle;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  static async start(dir: string): Promise<TemporalServer> {
    const dbFile = path.join(dir, 'temporal.db');
    const handle = await startTemporal({ dbFile });
    return new TemporalServer(handle, dbFile, Number(handle.address.split(':').at(-1)));
  }

  /** Stops the server (SIGTERM to its process group, SIGKILL after 10 s). */
  async stop(): Promise<void> {
    const handle = this.handle;
    this.handle = null;
    await handle?.stop();
  }

  /** Stops the server for good (its SQLite file stays in the scenario's directory). */
  destroy(): Promise<void> {
    return this.stop();
  }

  /** Starts it again on the same port and SQLite file. */
  async start(): Promise<void> {
    if (this.handle) return;
    for (let i = 0; i < 50 && (await isListening(this.port)); i++) await new Promise((r) => setTimeout(r, 100));
    const handle = await startTemporal({ dbFile: this.dbFile, port: this.port });
    if (handle.address !== this.address) {
      await handle.stop();
      throw new Error(`temporal: port ${this.port} was taken while the server restarted`);
    }
    this.handle = handle;
  }
}
