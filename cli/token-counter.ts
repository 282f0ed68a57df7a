/**
 * The workbench's token counter (workbench/tokens.ts): js-tiktoken's `o200k_base`, imported on
 * first use, since js-tiktoken is an optional peer dependency (activities/optional-package.ts).
 */
import { importOptional, JS_TIKTOKEN } from '../activities/optional-package';

let counter: Promise<(text: string) => number> | undefined;

/** The token counter; building its encoder parses ~2 MB of ranks, so it is made once. */
export function tokenCounter(): Promise<(text: string) => number> {
  counter ??= importOptional(JS_TIKTOKEN, async () => {
    const [{ Tiktoken }, ranks] = await Promise.all([import('js-tiktoken/lite'), import('js-tiktoken/ranks/o200k_base')]);
    const encoder = new Tiktoken(ranks.default);
    return (text: string) => encoder.encode(text).length;
  });
  return counter;
}
