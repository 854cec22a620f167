/**
 * The shell examples of a Markdown page (docs/testing.md, "Docs that run"): every code block,
 * indented or fenced, whose first line is a `$ ` command. Each command runs on to the lines that
 * end in `\`; the lines after it, up to the next `$ `, are what the page says it prints.
 *
 * A block the runner cannot run here is marked right before it (only blank lines between) with
 * an HTML comment that says why: `<!-- doctest: skip (needs a real cluster) -->`. A marker without
 * a reason, an unknown marker, or a marker that no example follows is an error, so a typo never
 * skips or runs a block silently. Pure functions: no file or process is touched.
 */

/** One `$ ` command of an example and the output the page shows for it. */
export interface DocCommand {
  /** The command as bash reads it: continuation lines (`\` at the end) included, `$ ` dropped. */
  command: string;
  /** The lines the page shows after it, as written (the block's indentation removed). */
  expected: string[];
  /** 1-based line of the `$ ` in the page. */
  line: number;
}

/** One code block of `$ ` commands. */
export interface DocExample {
  file: string;
  /** 1-based line of the block's first command. */
  line: number;
  commands: DocCommand[];
  /** Why it does not run here, when a `doctest: skip (…)` marker precedes it. */
  skip?: string;
}

const MARKER = /^ {0,3}<!--\s*doctest:(.*?)-->\s*$/;
const SKIP = /^\s*skip\s*\((.+)\)\s*$/;
const FENCE = /^(\s*)(```|~~~)/;

/** Leading spaces of a line. */
function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

/**
 * The examples of one page, in page order.
 * @param markdown the page's text
 * @param file the page's path, for line references and errors
 * @throws Error naming `file:line` for a malformed or unknown `doctest:` marker, or one that no
 *   example block follows
 */
export function extractExamples(markdown: string, file: string): DocExample[] {
  const lines = markdown.split('\n');
  const examples: DocExample[] = [];
  const markers = new Map<number, string>(); // line index -> skip reason
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    const marker = MARKER.exec(line);
    if (marker) {
      const skip = SKIP.exec(marker[1]!);
      if (!skip) {
        throw new Error(
          `${file}:${i + 1}: unknown doctest marker "${line.trim()}"; the one marker is ` +
            '<!-- doctest: skip (the reason it cannot run here) -->',
        );
      }
      markers.set(i, skip[1]!.trim());
      i++;
      continue;
    }
    const fence = FENCE.exec(line);
    let block: { start: number; end: number; body: string[] } | undefined;
    if (fence) {
      let end = i + 1;
      while (end < lines.length && !lines[end]!.trimStart().startsWith(fence[2]!)) end++;
      const dedent = fence[1]!.length;
      block = { start: i + 1, end, body: lines.slice(i + 1, end).map((l) => l.slice(dedent)) };
      i = end + 1;
    } else if (
      indentOf(line) >= 4 &&
      line.trimStart().startsWith('$ ') &&
      (i === 0 || lines[i - 1]!.trim() === '')
    ) {
      const indent = indentOf(line);
      let end = i + 1;
      while (end < lines.length && (lines[end]!.trim() === '' || indentOf(lines[end]!) >= indent)) {
        end++;
      }
      while (end > i && lines[end - 1]!.trim() === '') end--;
      block = { start: i, end, body: lines.slice(i, end).map((l) => l.slice(indent)) };
      i = end;
    } else if (
      indentOf(line) >= 4 &&
      line.trim() !== '' &&
      (i === 0 || lines[i - 1]!.trim() === '')
    ) {
      // Another indented block (no `$ `): skip it whole, so its lines start nothing.
      const indent = indentOf(line);
      while (i < lines.length && (lines[i]!.trim() === '' || indentOf(lines[i]!) >= indent)) i++;
      continue;
    } else {
      i++;
      continue;
    }
    const first = block.body.findIndex((l) => l.trim() !== '');
    if (first === -1 || !block.body[first]!.startsWith('$ ')) continue;
    const example: DocExample = {
      file,
      line: block.start + first + 1,
      commands: commandsOf(block.body, block.start),
    };
    let before = (fence ? block.start - 1 : block.start) - 1;
    while (before >= 0 && lines[before]!.trim() === '') before--;
    const reason = markers.get(before);
    if (reason !== undefined) {
      example.skip = reason;
      markers.delete(before);
    }
    examples.push(example);
  }
  const [orphan] = markers.keys();
  if (orphan !== undefined) {
    throw new Error(
      `${file}:${orphan + 1}: a doctest marker with no $ example block right after it`,
    );
  }
  return examples;
}

/** Splits a block's lines into commands and their shown output. */
function commandsOf(body: string[], startIndex: number): DocCommand[] {
  const commands: DocCommand[] = [];
  for (let k = 0; k < body.length; k++) {
    const text = body[k]!;
    if (text.startsWith('$ ')) {
      const line = startIndex + k + 1;
      let command = text.slice(2);
      while (command.endsWith('\\') && k + 1 < body.length) command += `\n${body[++k]!}`;
      commands.push({ command, expected: [], line });
    } else if (commands.length > 0) {
      commands[commands.length - 1]!.expected.push(text);
    }
  }
  return commands;
}
