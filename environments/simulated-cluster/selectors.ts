/**
 * Label and field selectors as the apiserver parses them (k8s.io/apimachinery `labels` and
 * `fields`): comma-separated terms that must all hold (AND).
 */
import { badRequest } from './status.js';
import type { KubeObject, WatchedResource } from './store.js';

/** A parsed selector; `matches` is true when every term holds for the object. */
export interface Selector {
  matches(object: KubeObject): boolean;
}

/** Matches every object (an empty selector). */
export const EVERYTHING: Selector = { matches: () => true };

/**
 * Field labels each resource supports, as on the real apiserver (pods: registry/core/pod
 * `ToSelectableFields`; events: registry/core/event). Any other label is a 400.
 * `source` on events is the apiserver's alias for `source.component`.
 */
const FIELD_LABELS: Readonly<Record<WatchedResource, Readonly<Record<string, string>>>> = {
  pods: {
    'metadata.name': 'metadata.name',
    'metadata.namespace': 'metadata.namespace',
    'spec.nodeName': 'spec.nodeName',
    'spec.restartPolicy': 'spec.restartPolicy',
    'spec.schedulerName': 'spec.schedulerName',
    'spec.serviceAccountName': 'spec.serviceAccountName',
    'status.phase': 'status.phase',
    'status.podIP': 'status.podIP',
    'status.nominatedNodeName': 'status.nominatedNodeName',
  },
  events: {
    'metadata.name': 'metadata.name',
    'metadata.namespace': 'metadata.namespace',
    'involvedObject.kind': 'involvedObject.kind',
    'involvedObject.namespace': 'involvedObject.namespace',
    'involvedObject.name': 'involvedObject.name',
    'involvedObject.uid': 'involvedObject.uid',
    'involvedObject.apiVersion': 'involvedObject.apiVersion',
    'involvedObject.resourceVersion': 'involvedObject.resourceVersion',
    'involvedObject.fieldPath': 'involvedObject.fieldPath',
    reason: 'reason',
    reportingComponent: 'reportingComponent',
    source: 'source.component',
    type: 'type',
  },
};

type Term = (object: KubeObject) => boolean;

function conjunction(terms: Term[]): Selector {
  if (terms.length === 0) return EVERYTHING;
  return { matches: (object) => terms.every((term) => term(object)) };
}

/** Reads a dotted path as a string; a missing value reads as "" (as on the apiserver). */
function fieldValue(object: KubeObject, path: string): string {
  let current: unknown = object;
  for (const key of path.split('.')) {
    if (current === null || typeof current !== 'object') return '';
    current = (current as Record<string, unknown>)[key];
  }
  return current === undefined || current === null ? '' : String(current);
}

/** Splits on commas that are not inside parentheses (set-based label terms contain commas). */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(text.slice(start));
  return terms.map((t) => t.trim()).filter((t) => t !== '');
}

/** Splits `key<op>value` on the first of `!=`, `==`, `=`; null when there is no operator. */
function splitOperator(term: string): { key: string; op: '=' | '!='; value: string } | null {
  const match = /^([^!=]+?)\s*(!=|==|=)\s*(.*)$/.exec(term);
  if (!match) return null;
  const [, key = '', op, value = ''] = match;
  return { key: key.trim(), op: op === '!=' ? '!=' : '=', value: value.trim() };
}

/**
 * Parses a field selector such as `involvedObject.uid=u1,reason=FailedCreatePodSandBox` or
 * `metadata.name!=x`. Operators: `=`, `==`, `!=`.
 * @throws ApiError 400 BadRequest for a malformed term or a field label the resource does not support
 */
export function parseFieldSelector(text: string | undefined, resource: WatchedResource): Selector {
  if (!text) return EVERYTHING;
  const labels = FIELD_LABELS[resource];
  const terms = splitTerms(text).map((raw): Term => {
    const parsed = splitOperator(raw);
    if (!parsed) throw badRequest(`invalid selector: '${text}'; can't understand '${raw}'`);
    const path = labels[parsed.key];
    if (!path) throw badRequest(`field label not supported: ${parsed.key}`);
    return parsed.op === '='
      ? (object) => fieldValue(object, path) === parsed.value
      : (object) => fieldValue(object, path) !== parsed.value;
  });
  return conjunction(terms);
}

/**
 * Parses a label selector: `a=b`, `a==b`, `a!=b`, `a` (exists), `!a` (does not exist),
 * `a in (x,y)`, `a notin (x,y)`.
 * @throws ApiError 400 BadRequest for a malformed term
 */
export function parseLabelSelector(text: string | undefined): Selector {
  if (!text) return EVERYTHING;
  const labelsOf = (object: KubeObject): Record<string, string> => object.metadata.labels ?? {};
  const terms = splitTerms(text).map((raw): Term => {
    const set = /^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(raw);
    if (set) {
      const [, key = '', op, list = ''] = set;
      const values = new Set(list.split(',').map((v) => v.trim()));
      return op === 'in'
        ? (object) => values.has(labelsOf(object)[key] ?? '\0absent')
        : (object) => !values.has(labelsOf(object)[key] ?? '\0absent');
    }
    if (/^!\s*[\w./-]+$/.test(raw)) {
      const key = raw.slice(1).trim();
      return (object) => !(key in labelsOf(object));
    }
    if (/^[\w./-]+$/.test(raw)) return (object) => raw in labelsOf(object);
    const parsed = splitOperator(raw);
    if (!parsed || !/^[\w./-]+$/.test(parsed.key)) {
      throw badRequest(`unable to parse requirement: invalid label selector term '${raw}'`);
    }
    const { key, op, value } = parsed;
    return op === '='
      ? (object) => labelsOf(object)[key] === value
      : (object) => labelsOf(object)[key] !== value;
  });
  return conjunction(terms);
}

/** Both selectors of a list or watch request, ANDed. */
export function combine(a: Selector, b: Selector): Selector {
  if (a === EVERYTHING) return b;
  if (b === EVERYTHING) return a;
  return { matches: (object) => a.matches(object) && b.matches(object) };
}
