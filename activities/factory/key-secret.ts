/** Keyed mode's secret: only in the worker's environment, never in workflow code or history. */
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../../core/failures';

export const KEY_SECRET_VARIABLE = 'SETTLE_KEY_SECRET';

export function keySecret(): Uint8Array {
  const secret = process.env[KEY_SECRET_VARIABLE];
  if (!secret || secret.length < 16) {
    throw ApplicationFailure.nonRetryable(
      `${KEY_SECRET_VARIABLE} must be set on the worker (at least 16 characters) for keyMode "hmac"`,
      FAILURE.KeySecret,
    );
  }
  return new TextEncoder().encode(secret);
}
