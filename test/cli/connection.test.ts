/**
 * Workers, the client and the CLI find Temporal the standard way (@temporalio/envconfig): a
 * profile in a TOML file or TEMPORAL_* variables, TLS and API keys included.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { describeTarget, loadTemporalTarget } from '../../client/connection';
import { SETTLE_BIN } from '../support/cli';
import { startTestWorker, tempWorkspace, uniqueId, type RunningWorker } from '../support/env';

function profileFile(dir: string, body: string): string {
  const file = path.join(dir, 'temporal.toml');
  fs.writeFileSync(file, body);
  return file;
}

describe('Temporal connection from envconfig', () => {
  it('reads a profile file, lets TEMPORAL_* variables override it, and applies explicit overrides last', () => {
    const dir = tempWorkspace('envconfig');
    const file = profileFile(
      dir,
      [
        '[profile.default]',
        'address = "default.example:7233"',
        '',
        '[profile.cloud]',
        'address = "acme.tmprl.cloud:7233"',
        'namespace = "acme.prod"',
        'api_key = "secret-key"',
      ].join('\n'),
    );
    const cloud = loadTemporalTarget({}, { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'cloud' });
    expect(cloud).toMatchObject({ namespace: 'acme.prod', taskQueue: 'settle', addressConfigured: true });
    expect(cloud.connectionOptions).toMatchObject({ address: 'acme.tmprl.cloud:7233', apiKey: 'secret-key' });
    // An API key implies TLS in the SDK's envconfig rules.
    expect(cloud.connectionOptions.tls).toBeTruthy();
    expect(describeTarget(cloud)).toBe('acme.tmprl.cloud:7233 namespace=acme.prod queue=settle (api key)');
    expect(describeTarget(cloud)).not.toContain('secret-key');

    const env = loadTemporalTarget({}, { TEMPORAL_CONFIG_FILE: file, TEMPORAL_ADDRESS: 'env.example:7233', TEMPORAL_TASK_QUEUE: 'q2' });
    expect(env).toMatchObject({ connectionOptions: { address: 'env.example:7233' }, namespace: 'default', taskQueue: 'q2' });
    expect(loadTemporalTarget({ address: 'override:1', taskQueue: 'q3' }, { TEMPORAL_ADDRESS: 'env.example:7233' })).toMatchObject({
      connectionOptions: { address: 'override:1' },
      taskQueue: 'q3',
    });
    const none = loadTemporalTarget({}, { TEMPORAL_CONFIG_FILE: path.join(dir, 'missing.toml') });
    expect(none).toMatchObject({ connectionOptions: { address: '127.0.0.1:7233' }, addressConfigured: false });
  });

  describe('against the running server', () => {
    let worker: RunningWorker;
    beforeAll(async () => {
      worker = await startTestWorker();
    });
    afterAll(() => worker?.stop());

    it('the CLI reaches the server through a profile file alone', async () => {
      const dir = tempWorkspace('envconfig');
      const file = profileFile(dir, `[profile.local]\naddress = "${inject('temporalAddress')}"\nnamespace = "default"\n`);
      const id = uniqueId('profile');
      fs.writeFileSync(path.join(dir, 'a.txt'), 'x\n');
      await worker.client.workflow.start('trajectoryWorkflow', {
        taskQueue: worker.taskQueue,
        workflowId: id,
        args: [
          {
            workspace: dir,
            turns: [{ turn: 0, calls: [{ call_id: 'v', tool: 'file_view', args: { path: `${dir}/a.txt`, offset: 1, limit: 1 } }] }],
          },
        ],
      });
      await worker.client.workflow.getHandle(id).result();
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        TEMPORAL_CONFIG_FILE: file,
        TEMPORAL_PROFILE: 'local',
        TEMPORAL_TASK_QUEUE: worker.taskQueue,
      };
      delete env.TEMPORAL_ADDRESS;
      const { stdout } = await promisify(execFile)(process.execPath, [SETTLE_BIN, 'status', id, '--json'], { env });
      expect(JSON.parse(stdout)).toMatchObject({ trajectoryId: id, runStatus: 'COMPLETED', status: 'completed' });
    });
  });
});
