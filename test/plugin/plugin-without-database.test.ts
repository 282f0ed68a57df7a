/**
 * A team pre-builds its workflow bundle with the plugin (`bundleWorkflowCode({ plugins: [new
 * SettlePlugin(…)] })`) on a build machine that has no DATABASE_URL: making the plugin and
 * configuring the bundler need none; configuring a worker refuses, in one line.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BundleOptions } from '@temporalio/worker';
import { SettlePlugin } from '../../api/worker';
import { teamTools } from './fixtures/tools';

let saved: string | undefined;
beforeEach(() => {
  saved = process.env.DATABASE_URL;
  delete process.env.DATABASE_URL;
});
afterEach(() => {
  if (saved !== undefined) process.env.DATABASE_URL = saved;
});

describe('SettlePlugin without a database', () => {
  it('configures a bundler (the AI SDK globals too), and refuses to configure a worker, naming the option', () => {
    const plugin = new SettlePlugin({ tools: [...teamTools], models: {} as never });
    const bundle: BundleOptions = { workflowsPath: '/team/workflows.js' };
    const configured = plugin.configureBundler(bundle);
    expect(configured.workflowsPath).toBe('/team/workflows.js');
    expect(configured.webpackConfigHook?.({ entry: ['/team/workflows.js'] }).entry).toEqual([
      expect.stringMatching(/ai-sdk-globals\.(ts|js)$/),
      '/team/workflows.js',
    ]);
    expect(plugin.registry.get('append_line')).toBeDefined();
    expect(() => plugin.configureWorker({ taskQueue: 'team' })).toThrow(
      /^SettlePlugin databaseUrl: must be set \(or DATABASE_URL\) to the Postgres URL that holds the endpoint records$/,
    );
  });
});
