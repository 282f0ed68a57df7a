/**
 * Rule 2: every required field in `required`. A description that calls a field required is
 * advice to the model; only the `required` array is enforced by the validator, so the two
 * must agree. And `required` may only name declared properties.
 */
import { appendPointer } from '../pointer';
import { isObject, isObjectSchema } from '../walk';
import { finding, type NodeRule } from './context';

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
