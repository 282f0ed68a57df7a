/**
 * Anti-pattern: whole-file rewrite. A tool that writes files by taking the full new text
 * (`content: str`) makes the call's output grow with the file, not with the change: long files
 * get cut, unrelated lines change, and every unchanged line costs decoding time on the
 * agent's critical path. A warning, not an error: writing a new file legitimately needs it.
 */
import { appendPointer } from '../pointer';
import { declaredTypes, isObject } from '../walk';
import { finding, nameWords, type ToolRule } from './context';

const WRITE_WORDS = new Set(['write', 'writes', 'save', 'create', 'overwrite', 'put', 'upload', 'store']);
const FILE_WORDS = new Set(['file', 'files', 'document', 'documents', 'doc', 'docs']);
const WRITES_FILES_TEXT = /\b(writes?|overwrites?|creates?|saves?)\b[^.]*\bfiles?\b/i;
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

export const checkWholeFileRewrite: ToolRule = (ctx) => {
  const { tool } = ctx;
  const words = nameWords(tool.name);
  const writesFiles =
    (words.some((w) => WRITE_WORDS.has(w)) && (words.some((w) => FILE_WORDS.has(w)) || words.length === 1)) ||
    WRITES_FILES_TEXT.test(tool.description ?? '');
  if (!writesFiles || !isObject(tool.schema) || !isObject(tool.schema.properties)) return [];
  const out = [];
  for (const [name, sub] of Object.entries(tool.schema.properties)) {
    if (!FULL_TEXT_NAMES.has(name.toLowerCase().replace(/[^a-z]/g, ''))) continue;
    const types = isObject(sub) ? declaredTypes(sub) : [];
    if (types.length > 0 && !types.includes('string')) continue;
    out.push(
      finding(
        ctx,
        'warning',
        'whole-file-rewrite',
        appendPointer(tool.schemaPointer, 'properties', name),
        `${JSON.stringify(name)} carries a whole file's text: the call's output grows with the file, not with the change`,
        'offer an exact-replacement edit (old_str, new_str) for changes, and keep full-text writes for creating new files',
      ),
    );
  }
  return out;
};
