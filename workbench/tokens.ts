/**
 * Token counts with a real tokenizer: js-tiktoken's bundled `o200k_base` ranks (the encoding of
 * OpenAI's GPT-4o and later models), loaded from node_modules — nothing is downloaded. Other
 * vendors tokenize differently; the counts are a measurement with one named encoding, not a
 * universal truth. js-tiktoken is an optional peer dependency: the counter is loaded on first use
 * by cli/token-counter.ts (this layer imports no side effects).
 */
export const ENCODING = 'o200k_base';

/**
 * The text whose tokens are counted for a definition: its compact JSON (`JSON.stringify`) exactly
 * as published — every key it carries, in its order, without indentation, as an API request
 * body carries it.
 */
export function definitionText(definition: unknown): string {
  return JSON.stringify(definition);
}
