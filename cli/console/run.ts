/** `settle console [--port N]`: the inbox for calls that need a person, until Ctrl-C. */
import type { SettleClient } from '../../client/index';
import { errorMessage } from '../../core/errors';
import { withClient, withStore } from '../connections';
import { readDevSettings } from '../dev-settings';
import { operatorSigner, verifyingKeys } from '../operator-key';
import { UsageError } from '../usage-error';
import { startConsole } from './server';

export async function runConsole(opts: { port?: string; uiUrl?: string }): Promise<void> {
  const port = opts.port === undefined ? 0 : Number(opts.port);
  if (!(/^[0-9]{1,5}$/.test(opts.port ?? '0') && port <= 65535)) {
    throw new UsageError(`--port: must be a port number 0–65535 (got ${JSON.stringify(opts.port)})`);
  }
  if (opts.uiUrl !== undefined && !/^https?:\/\/[^\s]+$/.test(opts.uiUrl)) {
    throw new UsageError(`--ui-url: must be an http(s) URL (got ${JSON.stringify(opts.uiUrl)})`);
  }
  // The operator's own key signs every action: found before anything is served.
  const signer = operatorSigner();
  const uiUrl = opts.uiUrl ?? readDevSettings()?.uiUrl ?? null;
  await withStore((store) =>
    withClient(
      async (client) => {
        const running = await startConsole({
          client,
          store,
          signer,
          keys: verifyingKeys(signer),
          uiUrl,
          namespace: client.client.options.namespace,
          port,
        }).catch((err: Error) => {
          throw err.message.startsWith('--port:') ? new UsageError(err.message) : err;
        });
        // To the operator's terminal, which asked for it; `settle dev` leaves it in a file instead.
        console.log(`settle console for operator ${signer.operator}: ${running.url}`);
        console.log(
          '(the URL carries this start’s access token and secret host name: open it yourself, do not share it or log it; Ctrl-C stops)',
        );
        const unreachable = await temporalUnreachable(client);
        if (unreachable) {
          console.log(
            `Temporal is unreachable (${unreachable}): the console shows the records PostgreSQL holds, and what Temporal knows once it answers`,
          );
        }
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        await running.close();
      },
      { lazy: true },
    ),
  );
}

/** Why Temporal does not answer now (first line), or null when it does. */
async function temporalUnreachable(client: SettleClient): Promise<string | null> {
  const connection = client.client.connection;
  try {
    await connection.withDeadline(Date.now() + 3_000, () => connection.workflowService.getSystemInfo({}));
    return null;
  } catch (err) {
    return errorMessage(err).split('\n')[0]!;
  }
}
