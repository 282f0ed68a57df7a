/**
 * Web globals the AI SDK (`ai`) uses that Temporal's workflow sandbox lacks (measured: docs/ai-sdk.md).
 * `ai` extends `TransformStream` when its module is evaluated, so SettlePlugin({ models }) puts
 * this module first in the workflow bundle, before any workflow code. Installs only what is missing.
 */
import { Headers } from 'headers-polyfill';
import { ReadableStream, TransformStream, WritableStream } from 'web-streams-polyfill';

const globals = globalThis as Record<string, unknown>;
for (const [name, value] of Object.entries({ Headers, ReadableStream, TransformStream, WritableStream })) {
  if (globals[name] === undefined) globals[name] = value;
}
