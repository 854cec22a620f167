/**
 * Compares what a doc example shows with what its command printed, as doctests do
 * (docs/testing.md, "Docs that run"): line by line, with `…` as the wildcard.
 *
 * - Blank lines are ignored; runs of spaces count as one space (table columns move with the
 *   width of an id); `\r` and terminal colours are dropped from the output.
 * - `…` inside a line matches any text (also none); a line that is only `…` matches any number
 *   of lines (also none). Without a trailing `…` line, the output must end where the page does.
 * - JSON (a line starting with `{` or `[`, through the line that closes it, on either side) is
 *   compared by the fields the page shows: an object may have more fields than shown; a value
 *   or an array element written `…` matches anything; an array with a `…` element may be longer;
 *   a string with `…` in it is matched with the wildcard.
 * Pure functions.
 */

/** A value that stands for anything (the page wrote `…` where a value or element goes). */
const ELIDED = '\u0000elided';

/** One unit of comparison: a text line, a JSON value, or a `…` line. */
type Item =
  { kind: 'text'; text: string } | { kind: 'json'; value: unknown; text: string } | { kind: 'any' };

/** Whitespace runs to one space, trimmed. */
function normalize(line: string): string {
  return line.replace(/\s+/g, ' ').trim();
}

/** `text` with `…` as "any text" (anchored, whole string). */
export function ellipsisPattern(text: string): RegExp {
  const parts = text.split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${parts.join('[\\s\\S]*?')}$`);
}

/** Whether `actual` matches the page's `expected` line (wildcards, whitespace runs). */
export function lineMatches(expected: string, actual: string): boolean {
  return ellipsisPattern(normalize(expected)).test(normalize(actual));
}

/** Bracket depth change of a line of JSON, strings skipped. */
function depthChange(line: string): number {
  let depth = 0;
  let inString = false;
  for (let k = 0; k < line.length; k++) {
    const c = line[k];
    if (inString) {
      if (c === '\\') k++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
  }
  return depth;
}

/**
 * The page's JSON with its `…` made parseable: in an array or as a value, the {@link ELIDED}
 * string; as an object member (`{…}`, `{"a": 1, …}`), nothing.
 * @returns undefined when it still is not JSON
 */
export function parseShownJson(text: string): unknown {
  let out = '';
  const stack: Array<'{' | '['> = [];
  let inString = false;
  let afterColon = false;
  for (let k = 0; k < text.length; k++) {
    const c = text[k]!;
    if (inString) {
      out += c;
      if (c === '\\') out += text[++k] ?? '';
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') {
      inString = true;
      afterColon = false;
    } else if (c === '{' || c === '[') {
      stack.push(c);
      afterColon = false;
    } else if (c === '}' || c === ']') stack.pop();
    else if (c === ':') afterColon = true;
    else if (c === ',') afterColon = false;
    if (c !== '…') {
      out += c;
      continue;
    }
    if (stack.at(-1) === '[' || afterColon) {
      out += JSON.stringify(ELIDED);
      afterColon = false;
    } else {
      // An elided member: drop it and one comma next to it.
      out = out.replace(/,\s*$/, '');
      while (text[k + 1] === ' ' || text[k + 1] === ',') k++;
    }
  }
  try {
    return JSON.parse(out);
  } catch {
    return undefined;
  }
}

/**
 * Where `actual` differs from the JSON value the page shows, as `path: what`; undefined when it
 * matches (see the module's rules).
 */
export function jsonMismatch(expected: unknown, actual: unknown, path = '$'): string | undefined {
  if (expected === ELIDED) return undefined;
  if (typeof expected === 'string' && expected.includes('…')) {
    return typeof actual === 'string' && ellipsisPattern(expected).test(actual)
      ? undefined
      : `${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${path}: expected an array, got ${JSON.stringify(actual)}`;
    const shown = expected.filter((element) => element !== ELIDED);
    const open = shown.length !== expected.length;
    if (open ? actual.length < shown.length : actual.length !== shown.length) {
      return `${path}: expected ${open ? 'at least ' : ''}${shown.length} elements, got ${actual.length}`;
    }
    for (let k = 0; k < shown.length; k++) {
      const mismatch = jsonMismatch(shown[k], actual[k], `${path}[${k}]`);
      if (mismatch) return mismatch;
    }
    return undefined;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) {
      return `${path}: expected an object, got ${JSON.stringify(actual)}`;
    }
    for (const [key, value] of Object.entries(expected)) {
      if (!Object.hasOwn(actual, key)) return `${path}.${key}: missing`;
      const mismatch = jsonMismatch(
        value,
        (actual as Record<string, unknown>)[key],
        `${path}.${key}`,
      );
      if (mismatch) return mismatch;
    }
    return undefined;
  }
  return Object.is(expected, actual)
    ? undefined
    : `${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
}

/**
 * Groups lines into items: blank lines dropped, a `…` line a wildcard, a JSON value over the
 * lines it spans (when it parses), any other line a text line.
 * @param shown true for the page's lines (`…` allowed in JSON), false for a command's output
 */
function itemsOf(lines: readonly string[], shown: boolean): Item[] {
  const items: Item[] = [];
  const kept = lines.map((line) => line.trimEnd()).filter((line) => line.trim() !== '');
  for (let k = 0; k < kept.length; k++) {
    const line = kept[k]!;
    if (shown && line.trim() === '…') {
      items.push({ kind: 'any' });
      continue;
    }
    if (/^\s*[{[]/.test(line)) {
      let end = k;
      let depth = depthChange(line);
      while (depth > 0 && end + 1 < kept.length) depth += depthChange(kept[++end]!);
      const text = kept
        .slice(k, end + 1)
        .map((l) => l.trim())
        .join(shown ? '' : '\n');
      const value = shown ? parseShownJson(text) : parseJson(text);
      if (value !== undefined) {
        items.push({ kind: 'json', value, text });
        k = end;
        continue;
      }
    }
    items.push({ kind: 'text', text: line });
  }
  return items;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Why `actual` does not match the shown item; undefined when it does. */
function itemMismatch(expected: Item, actual: Item): string | undefined {
  if (expected.kind === 'json') {
    if (actual.kind !== 'json') return `expected JSON, got the line "${textOf(actual)}"`;
    return jsonMismatch(expected.value, actual.value);
  }
  if (expected.kind === 'text') {
    return lineMatches(expected.text, textOf(actual))
      ? undefined
      : `expected the line "${normalize(expected.text)}", got "${normalize(textOf(actual))}"`;
  }
  return undefined;
}

function textOf(item: Item): string {
  return item.kind === 'any' ? '…' : item.text;
}

/** Drops `\r` and terminal colour codes (SGR) from a command's output. */
export function cleanOutput(output: string): string {
  // eslint-disable-next-line no-control-regex
  return output.replace(/\r/g, '').replace(/\u001b\[[0-9;]*m/g, '');
}

/**
 * Compares a command's output with what the page shows for it.
 * @param expected the page's lines after the command
 * @param actual what the command printed (stdout and stderr as a terminal shows them)
 * @returns undefined when they match; else what differs first, for a test's failure message
 */
export function outputMismatch(expected: readonly string[], actual: string): string | undefined {
  const want = itemsOf(expected, true);
  const got = itemsOf(cleanOutput(actual).split('\n'), false);
  // The furthest the match got, to name what was missing (a glob match with backtracking).
  let furthest = { at: 0, why: '' };
  const memo = new Set<string>();
  const match = (w: number, g: number): boolean => {
    const key = `${w}:${g}`;
    if (memo.has(key)) return false;
    memo.add(key);
    if (w === want.length) {
      if (g === got.length) return true;
      if (w >= furthest.at) {
        furthest = { at: w, why: `more output than the page shows, from "${textOf(got[g]!)}"` };
      }
      return false;
    }
    const item = want[w]!;
    if (item.kind === 'any') return match(w + 1, g) || (g < got.length && match(w, g + 1));
    if (g === got.length) {
      if (w >= furthest.at) furthest = { at: w, why: 'the output ended first' };
      return false;
    }
    const why = itemMismatch(item, got[g]!);
    if (why === undefined) return match(w + 1, g + 1);
    if (w >= furthest.at) furthest = { at: w, why };
    return false;
  };
  if (match(0, 0)) return undefined;
  const shown = want[furthest.at];
  return `at the page's line "${shown ? textOf(shown) : '(end)'}": ${furthest.why}`;
}
