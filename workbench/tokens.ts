/**
 * Token counts with a real tokenizer: js-tiktoken's bundled `o200k_base` ranks (the encoding of
 * OpenAI's GPT-4o and later models), loaded from node_modules — nothing is downloaded. Other
 * vendors tokenize differently; the counts are a measurement with one named encoding, not a
 * universal truth.
 */
import { Tiktoken } from 'js-tiktoken/lite';
import o200kBase from 'js-tiktoken/ranks/o200k_base';

export const ENCODING = 'o200k_base';

let encoder: Tiktoken | undefined;

export function countTokens(text: string): number {
  // Building the encoder parses ~2 MB of ranks; do it once, on first use.
  encoder ??= new Tiktoken(o200kBase);
  return encoder.encode(text).length;
}

/**
 * The text whose tokens are counted for a definition: its compact JSON (`JSON.stringify`) exactly
 * as published — every key it carries, in its order, without indentation, as an API request
 * body carries it.
 */
export function definitionText(definition: unknown): string {
  return JSON.stringify(definition);
}
