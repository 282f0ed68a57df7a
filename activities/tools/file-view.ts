/** `file_view` (A0): a window of numbered lines, the total line count, and a marker when cut. */
import { failed, type Observation } from '../../core/observation';
import type { FileViewArgs } from '../../core/tools/file-view';
import { FILE_VIEW } from '../../core/tools/file-view';
import { resolveForTool } from '../workspace';
import type { ReadOnlyTool } from './read-only-tool';
import { readTextFile, splitLines } from './text-files';

const MAX_LINE_CHARS = 2000;

export const fileView: ReadOnlyTool<FileViewArgs> = {
  name: FILE_VIEW,
  async run(args, env): Promise<Observation> {
    const resolved = await resolveForTool(env.workspace, args.path);
    if ('refusal' in resolved) return resolved.refusal;
    const real = resolved.path;
    const file = await readTextFile(real);
    switch (file.kind) {
      case 'missing':
        return failed(`${args.path}: no such file`);
      case 'not_a_file':
        return failed(`${args.path}: not a regular file (file_view reads regular files only)`);
      case 'changed':
        return failed(`refused: ${args.path}: ${file.reason}`);
      case 'binary':
        return failed(`${args.path}: binary file (contains NUL bytes); file_view shows text only`);
      case 'too_large':
        return failed(`${args.path}: ${file.bytes} bytes, over the 5 MiB limit of file_view`);
      case 'text':
        break;
    }
    const lines = splitLines(file.text);
    const total = lines.length;
    if (args.offset > Math.max(total, 1)) {
      return failed(`offset ${args.offset} is past the end of ${args.path} (${total} lines)`);
    }
    const window = lines.slice(args.offset - 1, args.offset - 1 + args.limit);
    const last = args.offset - 1 + window.length;
    const width = String(last).length;
    let cutLines = false;
    const body = window.map((line, i) => {
      let text = line;
      if (text.length > MAX_LINE_CHARS) {
        text = `${text.slice(0, MAX_LINE_CHARS)} [… line cut at ${MAX_LINE_CHARS} characters]`;
        cutLines = true;
      }
      return `${String(args.offset + i).padStart(width)}\t${text}`;
    });
    const more = last < total;
    const footer = more
      ? `[lines ${args.offset}-${last} of ${total}; ${total - last} more — continue with offset ${last + 1}]`
      : `[lines ${window.length ? `${args.offset}-${last}` : 'none'} of ${total}; end of file]`;
    return { output: [...body, footer].join('\n'), error: null, exit_status: 0, truncated: more || cutLines };
  },
};
