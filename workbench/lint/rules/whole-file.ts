/**
 * Anti-pattern: whole-file rewrite. A tool that writes files by taking the full new text
 * (`content: str`) makes the call's output grow with the file, not with the change: long files
 * get cut, unrelated lines change, and every unchanged line costs decoding time on the
 * agent's critical path. A warning, not an error: writing a new file legitimately needs it.
 */
import { appendPointer } from '../pointer';
import { declaredTypes, isObject } from '../walk';
import { finding, nameWords, type ToolRule } from './context';

const WRITE_WORDS = new Set(['write', 'writes', 'save', 'create', 'overwrite', 'put', 'upload', 'store', 'update', 'push', 'commit']);
const FILE_WORDS = new Set(['file', 'files', 'document', 'documents', 'doc', 'docs', 'gist', 'gists']);
const WRITES_FILES_TEXT = /\b(writes?|overwrites?|creates?|saves?|push(es)?|commits?)\b[^.]*\bfiles?\b/i;
const FULL_TEXT_NAMES = new Set([
  'content',
  'contents',
  'text',
  'filecontent',
  'filecontents',
  'filetext',
  'fulltext',
  'newcontent',
  'newcontents',
  'newtext',
  'body',
  'data',
  'source',
  'code',
]);
/** Fields of an exact-replacement edit: a tool that has them already offers the rule's fix. */
const EDIT_NAMES = new Set(['oldstr', 'oldstring', 'oldtext', 'search', 'find', 'diff', 'patch', 'edits', 'replacements']);
/** How deep to look for nested content (`files[].content`); tool schemas nest far less. */
const MAX_NESTING = 8;

const normalise = (name: string) => name.toLowerCase().replace(/[^a-z]/g, '');

export const checkWholeFileRewrite: ToolRule = (ctx) => {
  const { tool } = ctx;
  const words = nameWords(tool.name);
  // A tool that only creates (`kubectl_create`, `create_gist`) has no change to express as an edit.
  const writeWords = words.filter((w) => WRITE_WORDS.has(w));
  const createsOnly =
    writeWords.length > 0 && writeWords.every((w) => w === 'create') && !/\boverwrit|\breplac|\bupdat/i.test(tool.description ?? '');
  const writesFiles =
    !createsOnly &&
    ((writeWords.length > 0 && (words.some((w) => FILE_WORDS.has(w)) || words.length === 1)) ||
      WRITES_FILES_TEXT.test(tool.description ?? ''));
  if (!writesFiles || !isObject(tool.schema) || !isObject(tool.schema.properties)) return [];
  const fields = textFields(tool.schema, tool.schemaPointer, 0);
  // `str_replace_editor`: `file_text` for `create`, `old_str`/`new_str` for changes — the fix is there.
  if (fields.some((f) => EDIT_NAMES.has(normalise(f.name)))) return [];
  return fields
    .filter((f) => FULL_TEXT_NAMES.has(normalise(f.name)))
    .map((f) =>
      finding(
        ctx,
        'warning',
        'whole-file-rewrite',
        f.pointer,
        `${JSON.stringify(f.name)} carries a whole file's text: the call's output grows with the file, not with the change`,
        'offer an exact-replacement edit (old_str, new_str) for changes, and keep full-text writes for creating new files',
      ),
    );
};

/** Every named field that may hold text, through nested objects and array items (`files[].content`). */
function textFields(schema: Record<string, unknown>, pointer: string, depth: number): { name: string; pointer: string }[] {
  const out: { name: string; pointer: string }[] = [];
  if (depth > MAX_NESTING || !isObject(schema.properties)) return out;
  for (const [name, sub] of Object.entries(schema.properties)) {
    const at = appendPointer(pointer, 'properties', name);
    const types = isObject(sub) ? declaredTypes(sub) : [];
    // Text, or untyped; not a union that also offers a list of edit operations (write_pdf's content).
    const composed = isObject(sub) && ['anyOf', 'oneOf'].some((k) => k in sub);
    if (types.includes('string') || (types.length === 0 && !composed)) out.push({ name, pointer: at });
    if (!isObject(sub)) continue;
    if (isObject(sub.properties)) out.push(...textFields(sub, at, depth + 1));
    if (isObject(sub.items)) out.push(...textFields(sub.items, appendPointer(at, 'items'), depth + 1));
  }
  return out;
}
