/**
 * Rule 2: every required field in `required`. A description that calls a field required is
 * advice to the model; only the `required` array is enforced by the validator, so the two
 * must agree. And `required` may only name declared properties.
 */
import { appendPointer } from '../pointer';
import { isObject, isObjectSchema } from '../walk';
import type { Finding } from '../types';
import { finding, type NodeRule, type RuleContext } from './context';

// "required", "mandatory", "must be given/provided/…": the description says a value is needed.
const SAYS_REQUIRED = /\b(required|mandatory|must be (given|provided|set|specified|supplied|present|included))\b/i;
// …unless it says so conditionally or negates it ("required when …", "not required", "optional"),
// or for one mode of a multi-mode tool ("Required for 'run_workflow' method", "Required
// parameter of `create` command"): making such a field required would break the other modes —
// the discriminated-unions rule reports the missing tagged union instead.
const SAYS_CONDITIONAL = new RegExp(
  [
    String.raw`\b(not|never) (required|mandatory)\b`,
    String.raw`\boptional(ly)?\b`,
    String.raw`\b(required|mandatory|must be \w+) (when|if|only|unless)\b`,
    String.raw`\b(if|when|unless) [^.]*\b(required|mandatory)\b`,
    String.raw`\b(required|mandatory|must be \w+) (for|by|with|in|on) (?!all\b|every\b|each\b|any\b)`,
    String.raw`\b(required|mandatory) (parameter|argument|field|option|input) (of|for)\b`,
    String.raw`\b(only )?(required|mandatory|needed|used) (for|with|by) ['"\`]`,
    String.raw`\b(required|mandatory)\b[^.]*\b(except|other than|apart from|but not)\b`,
  ].join('|'),
  'i',
);

export const checkRequired: NodeRule = (n, ctx) => {
  if (typeof n.node === 'boolean' || !isObjectSchema(n.node)) return [];
  const s = n.node;
  const properties = isObject(s.properties) ? s.properties : {};
  const required = Array.isArray(s.required) ? s.required : [];
  const out = [];
  // With no own properties but branches (`oneOf`, `$ref`, …), the names are declared there.
  const composed = ['$ref', 'anyOf', 'oneOf', 'allOf'].some((k) => k in s);
  for (const [i, name] of (isObject(s.properties) || !composed ? required : []).entries()) {
    if (typeof name === 'string' && !Object.prototype.hasOwnProperty.call(properties, name)) {
      out.push(
        finding(
          ctx,
          'error',
          'required-fields',
          appendPointer(n.pointer, 'required', i),
          `required names ${JSON.stringify(name)}, which is not among the properties`,
          `declare ${JSON.stringify(name)} under properties, or remove it from required`,
        ),
      );
    }
  }
  for (const [name, sub] of Object.entries(properties)) {
    if (required.includes(name) || !isObject(sub) || typeof sub.description !== 'string') continue;
    // "required for cordon, drain, uncordon" naming every mode there is: required after all.
    const forEveryMode = Object.values(properties).some((p) => {
      const values = isObject(p) && Array.isArray(p.enum) ? p.enum.filter((v): v is string => typeof v === 'string') : [];
      return (
        values.length > 1 &&
        values.every((v) => new RegExp(`\\b${v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'i').test(sub.description as string))
      );
    });
    if (SAYS_REQUIRED.test(sub.description) && (!SAYS_CONDITIONAL.test(sub.description) || forEveryMode)) {
      out.push(
        finding(
          ctx,
          'error',
          'required-fields',
          appendPointer(n.pointer, 'properties', name),
          `the description calls ${JSON.stringify(name)} required, but it is not in required`,
          `add ${JSON.stringify(name)} to required (or reword the description if the field is optional)`,
        ),
      );
    }
  }
  return out;
};

// "Either `a` or `b` is required", "one of … is required": a choice, not every named field.
const SAYS_CHOICE = /\b(either|one of|at least one|any of|exactly one|or)\b/i;

/**
 * The same rule for the tool's own description: "Both `user_id` and `new_name` are required"
 * while `required` lists only `user_id`. Sentence by sentence; a field counts as named when it is
 * quoted or back-ticked, or written as a whole word containing `_` or a capital. `prior` is what
 * the node rules found already (a field whose own description said so is not reported twice).
 */
export function checkRequiredInToolDescription(ctx: RuleContext, prior: Finding[]): Finding[] {
  const { tool } = ctx;
  const s = tool.schema;
  if (tool.description === undefined || !isObject(s) || !isObject(s.properties)) return [];
  const required = Array.isArray(s.required) ? s.required : [];
  const out: Finding[] = [];
  const reported = new Set(prior.map((f) => f.pointer));
  for (const sentence of tool.description.split(/(?<=[.!?])\s+|\n+/)) {
    if (!SAYS_REQUIRED.test(sentence) || SAYS_CONDITIONAL.test(sentence) || SAYS_CHOICE.test(sentence)) continue;
    for (const name of Object.keys(s.properties)) {
      const pointer = appendPointer(tool.schemaPointer, 'properties', name);
      if (required.includes(name) || reported.has(pointer) || !namesField(sentence, name)) continue;
      reported.add(pointer);
      out.push(
        finding(
          ctx,
          'error',
          'required-fields',
          pointer,
          `the tool description calls ${JSON.stringify(name)} required ("${sentence.trim().slice(0, 120)}"), but it is not in required`,
          `add ${JSON.stringify(name)} to required (or reword the description if the field is optional)`,
        ),
      );
    }
  }
  return out;
}

function namesField(sentence: string, name: string): boolean {
  const v = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  if (new RegExp(`['"\`]${v}['"\`]`).test(sentence)) return true;
  return /[_A-Z]/.test(name) && new RegExp(`(?<![\\w-])${v}(?![\\w-])`).test(sentence);
}
