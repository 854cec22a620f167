/**
 * A sandbox's labels (docs/api.md, "Labels and filters"): a caller's own key/value tags, with
 * Kubernetes' rules, and the label selectors that find sandboxes by them. Pure functions, no
 * Node imports (the workflow bundle may import the contract).
 *
 * The rules are Kubernetes' own, so a selector that works with `kubectl get -l` works here:
 * - keys: `IsQualifiedName`, values: `IsValidLabelValue` (k8s.io/apimachinery
 *   pkg/util/validation/validation.go);
 * - selectors: the lexer and parser of k8s.io/apimachinery pkg/labels/selector.go (`Parse`),
 *   and `Requirement.Matches` for what a requirement selects.
 * Messages are Kubernetes' messages; a malformed selector's also says where (a 1-based
 * character position), which Kubernetes' do not.
 */

/** A sandbox's labels: key -> value. */
export type Labels = Readonly<Record<string, string>>;

/** The most labels one sandbox may carry. */
export const MAX_LABELS = 64;

/** The longest name part of a key, and the longest value (validation.go, 63). */
export const LABEL_NAME_MAX = 63;
/** The longest key prefix: a DNS-1123 subdomain (validation.go, DNS1123SubdomainMaxLength). */
export const LABEL_PREFIX_MAX = 253;

/** `qualifiedNameFmt` of validation.go: the name part of a key, and a non-empty value. */
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
/** `dns1123SubdomainFmt` of validation.go: a key's prefix. */
const DNS_1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const QUALIFIED_NAME_RULE =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " +
  "alphanumeric character (e.g. 'MyName', or 'my.name', or '123-abc')";
const SUBDOMAIN_RULE =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or " +
  "'.', and must start and end with an alphanumeric character (e.g. 'example.com')";
const LABEL_VALUE_RULE =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or " +
  "'.', and must start and end with an alphanumeric character (e.g. 'MyValue', or 'my_value', " +
  "or '12345')";

/** Length in bytes of UTF-8, as Go's `len` counts a string. */
function byteLength(text: string): number {
  let bytes = 0;
  for (const ch of text) {
    const code = ch.codePointAt(0) ?? 0;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return bytes;
}

/**
 * What is wrong with `key` as a label key: Kubernetes' `IsQualifiedName` (validation.go), an
 * optional DNS-1123 subdomain prefix of at most 253 characters and `/`, then a name of at most
 * 63 characters of [A-Za-z0-9-_.] starting and ending with an alphanumeric.
 * @returns Kubernetes' messages, in its order; empty when the key is valid
 */
export function labelKeyErrors(key: string): string[] {
  const errors: string[] = [];
  const parts = key.split('/');
  let name: string;
  if (parts.length === 1) {
    name = key;
  } else if (parts.length === 2) {
    const prefix = parts[0] as string;
    name = parts[1] as string;
    if (prefix.length === 0) {
      errors.push('prefix part must be non-empty');
    } else {
      if (byteLength(prefix) > LABEL_PREFIX_MAX) {
        errors.push(`prefix part must be no more than ${LABEL_PREFIX_MAX} characters`);
      }
      if (!DNS_1123_SUBDOMAIN.test(prefix)) errors.push(`prefix part ${SUBDOMAIN_RULE}`);
    }
  } else {
    return [
      `a qualified name ${QUALIFIED_NAME_RULE} with an optional DNS subdomain prefix and '/' ` +
        "(e.g. 'example.com/MyName')",
    ];
  }
  if (name.length === 0) {
    errors.push('name part must be non-empty');
  } else if (byteLength(name) > LABEL_NAME_MAX) {
    errors.push(`name part must be no more than ${LABEL_NAME_MAX} characters`);
  }
  if (!QUALIFIED_NAME.test(name)) errors.push(`name part ${QUALIFIED_NAME_RULE}`);
  return errors;
}

/**
 * What is wrong with `value` as a label value: Kubernetes' `IsValidLabelValue` (validation.go),
 * empty, or at most 63 characters of [A-Za-z0-9-_.] starting and ending with an alphanumeric.
 * @returns Kubernetes' messages; empty when the value is valid
 */
export function labelValueErrors(value: string): string[] {
  const errors: string[] = [];
  if (byteLength(value) > LABEL_NAME_MAX) {
    errors.push(`must be no more than ${LABEL_NAME_MAX} characters`);
  }
  if (value !== '' && !QUALIFIED_NAME.test(value)) errors.push(LABEL_VALUE_RULE);
  return errors;
}

/** Whether `key` is a Kubernetes label key (a qualified name, `[prefix/]name`). */
export function isQualifiedName(key: string): boolean {
  return labelKeyErrors(key).length === 0;
}

/** Whether `value` is a Kubernetes label value (empty, or at most 63 of [A-Za-z0-9-_.]). */
export function isLabelValue(value: string): boolean {
  return labelValueErrors(value).length === 0;
}

/** One problem of a label map, naming the label (`labels["team"]`) and the rule it breaks. */
export interface LabelProblem {
  /** `labels["<key>"]`, or `labels` for the map itself (its type, its count). */
  field: string;
  message: string;
}

/** The field that names one label of the map at `root`: `labels["team"]`. */
export function labelField(key: string, root = 'labels'): string {
  return `${root}[${JSON.stringify(key)}]`;
}

/**
 * Checks a label map as a request sent it: a JSON object of at most {@link MAX_LABELS} entries
 * whose keys are label keys and whose values are label value strings.
 * @param root the field the map is at, for the problems' names (`labels`)
 * @returns the labels, or every problem found (a key's, then its value's, in the map's order)
 */
export function parseLabels(
  value: unknown,
  root = 'labels',
): { labels: Record<string, string> } | { problems: LabelProblem[] } {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return {
      problems: [{ field: root, message: 'must be a JSON object of label keys to string values' }],
    };
  }
  const problems: LabelProblem[] = [];
  const labels: Record<string, string> = {};
  const entries = Object.entries(value as Record<string, unknown>);
  for (const [key, entry] of entries) {
    const field = labelField(key, root);
    for (const error of labelKeyErrors(key)) {
      problems.push({ field, message: `key is not a valid label key: ${error}` });
    }
    if (typeof entry !== 'string') {
      problems.push({ field, message: 'value must be a string (use "" for an empty value)' });
      continue;
    }
    for (const error of labelValueErrors(entry)) {
      problems.push({ field, message: `value ${JSON.stringify(entry)} is invalid: ${error}` });
    }
    labels[key] = entry;
  }
  if (entries.length > MAX_LABELS) {
    problems.push({ field: root, message: countProblem(entries.length) });
  }
  return problems.length > 0 ? { problems } : { labels };
}

/** The message of a map with `count` labels, over {@link MAX_LABELS}. */
export function countProblem(count: number): string {
  return `has ${count} labels; a sandbox may carry at most ${MAX_LABELS}`;
}

/** Whether two label maps hold the same keys and values. */
export function sameLabels(a: Labels, b: Labels): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => b[key] === a[key]);
}

/** A label selector's operators, named as Kubernetes' `selection.Operator`. */
export type SelectorOperator = 'in' | 'notin' | '=' | '==' | '!=' | 'exists' | '!' | 'gt' | 'lt';

/**
 * One requirement of a selector (Kubernetes' `Requirement`): a key, an operator and its values,
 * sorted and without duplicates as `sets.String.List()` leaves them (`exists` and `!` have
 * none; `=`, `==`, `!=`, `gt` and `lt` exactly one; `in` and `notin` at least one).
 */
export interface LabelRequirement {
  key: string;
  operator: SelectorOperator;
  values: string[];
}

/** A parsed selector: its requirements (all must match), sorted by key as `Parse` sorts them. */
export type LabelSelector = LabelRequirement[];

/**
 * A malformed selector. `position` is the 1-based character where the problem is (the length
 * plus one for a selector that ended too soon); the message is Kubernetes' and says it too.
 */
export class LabelSelectorError extends Error {
  constructor(
    readonly reason: string,
    readonly position: number,
  ) {
    super(`${reason} (at character ${position})`);
    this.name = 'LabelSelectorError';
  }
}

/** The lexer's tokens (selector.go `Token`). */
const TOKEN = {
  endOfString: 'end of string',
  closedPar: ')',
  comma: ',',
  doesNotExist: '!',
  doubleEquals: '==',
  equals: '=',
  greaterThan: '>',
  identifier: 'identifier',
  in: 'in',
  lessThan: '<',
  notEquals: '!=',
  notIn: 'notin',
  openPar: '(',
} as const;
type Token = (typeof TOKEN)[keyof typeof TOKEN];

/** selector.go `string2token`: the literals that are tokens. */
const STRING_TO_TOKEN: ReadonlyMap<string, Token> = new Map<string, Token>([
  [')', TOKEN.closedPar],
  [',', TOKEN.comma],
  ['!', TOKEN.doesNotExist],
  ['==', TOKEN.doubleEquals],
  ['=', TOKEN.equals],
  ['>', TOKEN.greaterThan],
  ['in', TOKEN.in],
  ['<', TOKEN.lessThan],
  ['!=', TOKEN.notEquals],
  ['notin', TOKEN.notIn],
  ['(', TOKEN.openPar],
]);

/** A scanned token, its literal and where it starts (0-based). */
interface Item {
  token: Token;
  literal: string;
  start: number;
}

const isWhitespace = (ch: string): boolean =>
  ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n';
const isSpecialSymbol = (ch: string): boolean => '=!(),><'.includes(ch) && ch !== '';

/**
 * The lexer of selector.go (`Lexer.Lex`), to the end of the string. As Go's `read`, a NUL
 * character reads as the end of the string ('' here).
 */
function scan(text: string): Item[] {
  let pos = 0;
  const read = (): string => {
    if (pos >= text.length) return '';
    const ch = text[pos++] as string;
    return ch === '\0' ? '' : ch;
  };
  const unread = (): void => {
    pos--;
  };
  const items: Item[] = [];
  for (;;) {
    let ch = read();
    while (isWhitespace(ch)) ch = read();
    if (ch === '') {
      items.push({ token: TOKEN.endOfString, literal: '', start: Math.min(pos, text.length) });
      return items;
    }
    unread();
    const start = pos;
    if (isSpecialSymbol(ch)) {
      // scanSpecialSymbol: the longest run of special symbols that is a token.
      let buffer = '';
      let last: Item | undefined;
      for (;;) {
        const next = read();
        if (next === '') break;
        if (!isSpecialSymbol(next)) {
          unread();
          break;
        }
        buffer += next;
        const token = STRING_TO_TOKEN.get(buffer);
        if (token !== undefined) {
          last = { token, literal: buffer, start };
        } else if (last !== undefined) {
          unread();
          break;
        }
      }
      // Every single special symbol is a token, so `last` is always set.
      items.push(last as Item);
    } else {
      // scanIDOrKeyword: up to whitespace or a special symbol.
      let buffer = '';
      for (;;) {
        const next = read();
        if (next === '') break;
        if (isSpecialSymbol(next) || isWhitespace(next)) {
          unread();
          break;
        }
        buffer += next;
      }
      const keyword = STRING_TO_TOKEN.get(buffer);
      items.push({ token: keyword ?? TOKEN.identifier, literal: buffer, start });
    }
  }
}

/** Go's `strconv.ParseInt(text, 10, 64)`: an optional sign and decimal digits, in int64. */
export function parseInt64(text: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(text)) return undefined;
  const value = BigInt(text);
  return value >= -(2n ** 63n) && value <= 2n ** 63n - 1n ? value : undefined;
}

/** `parseOperator`: the token of each binary operator. */
const BINARY_OPERATOR_OF: Partial<Record<Token, SelectorOperator>> = {
  [TOKEN.in]: 'in',
  [TOKEN.equals]: '=',
  [TOKEN.doubleEquals]: '==',
  [TOKEN.greaterThan]: 'gt',
  [TOKEN.lessThan]: 'lt',
  [TOKEN.notIn]: 'notin',
  [TOKEN.notEquals]: '!=',
};

/** The binary operators as `Parse` lists them in its message (selector.go `binaryOperators`). */
const BINARY_OPERATORS = 'in, notin, =, ==, !=, gt, lt';

/** Parses one selector (selector.go `Parser`), throwing {@link LabelSelectorError}. */
class Parser {
  private position = 0;

  constructor(private readonly items: Item[]) {}

  /** `lookahead`/`consume` in the `Values` context: `in` and `notin` are identifiers there. */
  private peek(values: boolean): Item {
    const item = this.items[this.position] as Item;
    return values && (item.token === TOKEN.in || item.token === TOKEN.notIn)
      ? { ...item, token: TOKEN.identifier }
      : item;
  }

  private next(values: boolean): Item {
    const item = this.peek(values);
    this.position++;
    return item;
  }

  parse(): LabelRequirement[] {
    const requirements: LabelRequirement[] = [];
    for (;;) {
      const item = this.peek(true);
      if (item.token === TOKEN.endOfString) return requirements;
      if (item.token !== TOKEN.identifier && item.token !== TOKEN.doesNotExist) {
        throw found(item, "!, identifier, or 'end of string'");
      }
      requirements.push(this.requirement());
      const after = this.next(true);
      if (after.token === TOKEN.endOfString) return requirements;
      if (after.token !== TOKEN.comma) throw found(after, "',' or 'end of string'");
      const following = this.peek(true);
      if (following.token !== TOKEN.identifier && following.token !== TOKEN.doesNotExist) {
        throw found(following, "identifier after ','");
      }
    }
  }

  /** `parseRequirement`, with `NewRequirement`'s checks. */
  private requirement(): LabelRequirement {
    let first = this.next(true);
    let operator: SelectorOperator | undefined;
    if (first.token === TOKEN.doesNotExist) {
      operator = '!';
      first = this.next(true);
    }
    if (first.token !== TOKEN.identifier) throw found(first, 'identifier');
    const keyErrors = labelKeyErrors(first.literal);
    if (keyErrors.length > 0) {
      throw new LabelSelectorError(
        `key ${JSON.stringify(first.literal)} is invalid: ${keyErrors.join('; ')}`,
        first.start + 1,
      );
    }
    const key = first.literal;
    const lookahead = this.peek(true).token;
    if (lookahead === TOKEN.endOfString || lookahead === TOKEN.comma) operator ??= 'exists';
    if (operator === 'exists' || operator === '!') return { key, operator, values: [] };

    const op = this.next(false);
    operator = BINARY_OPERATOR_OF[op.token];
    if (operator === undefined) throw found(op, BINARY_OPERATORS);
    const values = operator === 'in' || operator === 'notin' ? this.valueSet() : this.exactValue();
    return { key, operator, values: checkedValues(key, operator, values) };
  }

  /** `parseValues`: `(a,b,…)`; `()` is the set of the empty value. */
  private valueSet(): Map<string, number> {
    const open = this.next(true);
    if (open.token !== TOKEN.openPar) throw found(open, "'('", ' ');
    const first = this.peek(true);
    if (first.token === TOKEN.closedPar) {
      this.next(true);
      return new Map([['', first.start]]);
    }
    if (first.token !== TOKEN.identifier && first.token !== TOKEN.comma) {
      throw found(first, "',', ')' or identifier");
    }
    const values = this.identifiers();
    const close = this.next(true);
    // Kubernetes names the list's first token here, not the one it found.
    if (close.token !== TOKEN.closedPar) throw found({ ...first, start: close.start }, "')'");
    return values;
  }

  /** `parseIdentifiersList`: values, where an empty place between commas is the empty value. */
  private identifiers(): Map<string, number> {
    const values = new Map<string, number>();
    const add = (value: string, at: number) => {
      if (!values.has(value)) values.set(value, at);
    };
    for (;;) {
      const item = this.next(true);
      if (item.token === TOKEN.identifier) {
        add(item.literal, item.start);
        const after = this.peek(true);
        if (after.token === TOKEN.comma) continue;
        if (after.token === TOKEN.closedPar) return values;
        throw found(after, "',' or ')'");
      }
      if (item.token === TOKEN.comma) {
        if (values.size === 0) add('', item.start);
        const after = this.peek(true);
        if (after.token === TOKEN.closedPar) {
          add('', after.start);
          return values;
        }
        if (after.token === TOKEN.comma) {
          this.next(true);
          add('', after.start);
        }
        continue;
      }
      throw found(item, "',', or identifier");
    }
  }

  /** `parseExactValue`: one value; none before `,` or the end is the empty value. */
  private exactValue(): Map<string, number> {
    const item = this.peek(true);
    if (item.token === TOKEN.endOfString || item.token === TOKEN.comma) {
      return new Map([['', item.start]]);
    }
    this.next(true);
    if (item.token === TOKEN.identifier) return new Map([[item.literal, item.start]]);
    throw found(item, 'identifier');
  }
}

/** Kubernetes' "found 'x', expected: y", at the token. */
function found(item: Item, expected: string, separator = ', '): LabelSelectorError {
  const what = item.token === TOKEN.endOfString ? "'end of string'" : `'${item.literal}'`;
  return new LabelSelectorError(`found ${what}${separator}expected: ${expected}`, item.start + 1);
}

/**
 * `NewRequirement`'s checks of a requirement's values (they are at 0-based positions): for `gt`
 * and `lt` an int64, then each a label value.
 * @returns the values, sorted (`sets.String.List()`)
 */
function checkedValues(
  key: string,
  operator: SelectorOperator,
  values: Map<string, number>,
): string[] {
  const sorted = [...values.keys()].sort(compareStrings);
  for (const value of sorted) {
    const at = (values.get(value) as number) + 1;
    if ((operator === 'gt' || operator === 'lt') && parseInt64(value) === undefined) {
      throw new LabelSelectorError(
        `for 'Gt', 'Lt' operators, the value must be an integer (${JSON.stringify(value)})`,
        at,
      );
    }
  }
  for (const value of sorted) {
    const errors = labelValueErrors(value);
    if (errors.length > 0) {
      throw new LabelSelectorError(
        `value ${JSON.stringify(value)} of key ${JSON.stringify(key)} is invalid: ${errors.join('; ')}`,
        (values.get(value) as number) + 1,
      );
    }
  }
  return sorted;
}

/** Go's string order (bytes; UTF-16 code units agree for the ASCII that labels allow). */
function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Parses a label selector in Kubernetes' syntax (k8s.io/apimachinery pkg/labels/selector.go,
 * `Parse`): requirements separated by commas (AND), each `key`, `!key`, `key=value`,
 * `key==value`, `key!=value`, `key in (v1,v2)`, `key notin (v1,v2)`, `key>n` or `key<n`.
 * The empty selector selects everything.
 * @returns the requirements, sorted by key (for equal keys, by their text)
 * @throws LabelSelectorError naming the problem and its 1-based character position
 */
export function parseLabelSelector(text: string): LabelSelector {
  const requirements = new Parser(scan(text)).parse();
  return requirements.sort(
    (a, b) =>
      compareStrings(a.key, b.key) || compareStrings(formatRequirement(a), formatRequirement(b)),
  );
}

/** A requirement as Kubernetes' `Requirement.String()` writes it. */
export function formatRequirement(requirement: LabelRequirement): string {
  const { key, operator, values } = requirement;
  switch (operator) {
    case 'exists':
      return key;
    case '!':
      return `!${key}`;
    case 'in':
    case 'notin':
      return `${key} ${operator} (${values.join(',')})`;
    case 'gt':
      return `${key}>${values[0]}`;
    case 'lt':
      return `${key}<${values[0]}`;
    default:
      return `${key}${operator}${values[0]}`;
  }
}

/** A selector as Kubernetes' `Selector.String()` writes it: its requirements, comma separated. */
export function formatLabelSelector(selector: LabelSelector): string {
  return selector.map(formatRequirement).join(',');
}

/**
 * Whether one requirement selects `labels` (selector.go `Requirement.Matches`): `in`, `=` and
 * `==` need the key with one of the values; `notin` and `!=` match when the key is absent or
 * has another value; `exists` and `!` test the key; `gt` and `lt` need the key with an int64
 * value above (below) the requirement's.
 */
export function requirementMatches(requirement: LabelRequirement, labels: Labels): boolean {
  const has = Object.hasOwn(labels, requirement.key);
  const value = has ? (labels[requirement.key] as string) : undefined;
  switch (requirement.operator) {
    case 'in':
    case '=':
    case '==':
      return value !== undefined && requirement.values.includes(value);
    case 'notin':
    case '!=':
      return value === undefined || !requirement.values.includes(value);
    case 'exists':
      return has;
    case '!':
      return !has;
    case 'gt':
    case 'lt': {
      const actual = value === undefined ? undefined : parseInt64(value);
      const bound = parseInt64(requirement.values[0] ?? '');
      if (actual === undefined || bound === undefined) return false;
      return requirement.operator === 'gt' ? actual > bound : actual < bound;
    }
  }
}

/** Whether every requirement of `selector` selects `labels` (the empty selector: always). */
export function selectorMatches(selector: LabelSelector, labels: Labels): boolean {
  return selector.every((requirement) => requirementMatches(requirement, labels));
}

/** Width of {@link numericLabelKey}: int64's largest value has 19 digits. */
const NUMERIC_KEY_DIGITS = 19;

/**
 * A label value that Kubernetes reads as an integer for `gt`/`lt` (`strconv.ParseInt`; a valid
 * label value cannot carry a sign, so it is digits within int64), as 19 zero-padded digits, so
 * text order is numeric order; undefined for any other value.
 */
export function numericLabelKey(value: string): string | undefined {
  const parsed = parseInt64(value);
  if (parsed === undefined || parsed < 0n) return undefined;
  return parsed.toString().padStart(NUMERIC_KEY_DIGITS, '0');
}
