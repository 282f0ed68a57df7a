/**
 * Rule 1, closed property sets, and the untyped-parameter-bag anti-pattern.
 *
 * One finding per object: an object that accepts arbitrary keys on purpose (no properties, or
 * `additionalProperties: true`/a schema) is a bag; one that declares its properties but leaves
 * the set open is merely not closed. Either way a model can send `dry_run` or `verbose` and
 * the validator passes it through instead of refusing it.
 */
import { appendPointer } from '../pointer';
import { declaredTypes, isObject, isObjectSchema } from '../walk';
import { finding, type NodeRule, type ToolRule } from './context';

const CLOSE_HINT = 'add "additionalProperties": false';

export const checkObjects: NodeRule = (n, ctx) => {
  if (typeof n.node === 'boolean') {
    return n.node && n.role === 'root'
      ? [
          finding(
            ctx,
            'error',
            'untyped-bag',
            n.pointer,
            'the argument schema is `true`: any arguments pass',
            'publish an object schema with typed properties and "additionalProperties": false',
          ),
        ]
      : [];
  }
  const s = n.node;
  const hasProperties = isObject(s.properties) && Object.keys(s.properties).length > 0;
  if (n.role === 'root' && declaredTypes(s).length === 0 && !hasProperties && !hasComposition(s)) {
    return [
      finding(
        ctx,
        'error',
        'untyped-bag',
        n.pointer,
        'the argument schema declares neither a type nor properties: any arguments pass',
        'declare "type": "object", the properties, and "additionalProperties": false',
      ),
    ];
  }
  if (!isObjectSchema(s)) return [];
  const extra = s.additionalProperties;
  if (extra === true || isObject(extra)) {
    return [
      finding(
        ctx,
        'error',
        'untyped-bag',
        appendPointer(n.pointer, 'additionalProperties'),
        `object accepts any extra key (additionalProperties is ${extra === true ? 'true' : 'a schema'}): a model invents keys the validator cannot check`,
        'declare each key as a typed property and set "additionalProperties": false (a real map is better an array of bounded {name, value} objects)',
      ),
    ];
  }
  if (extra === false || s.unevaluatedProperties === false) return [];
  // `{"type": "object", "oneOf": [...]}`: the branches declare (and close) the properties.
  if (!hasProperties && hasComposition(s)) return [];
  if (!hasProperties) {
    return [
      finding(
        ctx,
        'error',
        'untyped-bag',
        n.pointer,
        'object declares no properties and is not closed: any keys pass',
        'declare its fields as typed properties and ' +
          CLOSE_HINT +
          ' (a tool without arguments: "properties": {}, "additionalProperties": false)',
      ),
    ];
  }
  return [
    finding(ctx, 'error', 'closed-objects', n.pointer, 'object is not closed: keys outside its properties pass validation', CLOSE_HINT),
  ];
};

/** A definition without any argument schema: nothing checks what a model sends. */
export const checkSchemaPresent: ToolRule = (ctx) =>
  ctx.tool.schema === undefined
    ? [
        finding(
          ctx,
          'error',
          'untyped-bag',
          ctx.tool.schemaPointer,
          'the definition has no argument schema (parameters, inputSchema or input_schema): its arguments are not checked',
          'add an object schema with typed properties and "additionalProperties": false',
        ),
      ]
    : [];

function hasComposition(s: Record<string, unknown>): boolean {
  return ['$ref', 'anyOf', 'oneOf', 'allOf', 'enum', 'const'].some((k) => k in s);
}
