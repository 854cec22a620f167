/**
 * `durable-sandbox trace`: one trace's spans (as `GET /debug/traces/{trace_id}` answers them)
 * printed as a tree, each span with its start relative to the first span and its duration.
 */

import type { TraceSpan as DebugRouteSpan } from '../typescript/src/index.js';

/** One span as the debug route answers it (the client's `TraceSpan`), its trace id not needed. */
export type TraceSpan = Omit<DebugRouteSpan, 'trace_id'>;

/**
 * A span's label: its name; an HTTP span's method, path, response status and kind (`client`: a
 * call the service made, an apiserver's; `server`: a request a server in the process answered,
 * the API's or the simulated apiserver's). Attributes as the HTTP and undici instrumentations
 * set them.
 */
function labelOf(span: TraceSpan): string {
  const a = span.attributes;
  const url = a['url.full'];
  if (span.kind === 'client' && typeof url === 'string') {
    const status = a['http.response.status_code'];
    return `${a['http.request.method'] ?? span.name} ${new URL(url).pathname}${status ? ` -> ${status}` : ''} [client]`;
  }
  if (span.kind === 'server' && typeof a['http.target'] === 'string') {
    const status = a['http.status_code'];
    const path = a['http.target'].split('?')[0];
    return `${a['http.method'] ?? span.name} ${path}${status ? ` -> ${status}` : ''} [server]`;
  }
  return span.name;
}

function ms(value: number): string {
  return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${value.toFixed(1)} ms`;
}

/**
 * The tree, one span a line: `├─ RunActivity:createPod  +12.3 ms  4.5 ms`, then ` ERROR: …`
 * for a failed span. A span whose parent is not in `spans` (the caller's, from a traceparent)
 * is a root.
 * @param spans the trace's spans, any order
 */
export function formatTraceTree(spans: TraceSpan[]): string {
  const ids = new Set(spans.map((span) => span.span_id));
  const children = new Map<string | null, TraceSpan[]>();
  for (const span of spans) {
    const parent = span.parent_span_id && ids.has(span.parent_span_id) ? span.parent_span_id : null;
    children.set(parent, [...(children.get(parent) ?? []), span]);
  }
  for (const list of children.values()) list.sort((a, b) => a.start_ms - b.start_ms);
  const origin = Math.min(...spans.map((span) => span.start_ms));
  const lines: string[] = [];
  const walk = (span: TraceSpan, prefix: string, branch: string, last: boolean) => {
    const failed =
      span.status.code === 'error'
        ? `  ERROR${span.status.message ? `: ${span.status.message}` : ''}`
        : '';
    lines.push(
      `${prefix}${branch}${labelOf(span)}  +${ms(span.start_ms - origin)}  ${ms(span.end_ms - span.start_ms)}${failed}`,
    );
    const below = children.get(span.span_id) ?? [];
    const nextPrefix = branch === '' ? prefix : `${prefix}${last ? '   ' : '│  '}`;
    below.forEach((child, i) =>
      walk(child, nextPrefix, i === below.length - 1 ? '└─ ' : '├─ ', i === below.length - 1),
    );
  };
  for (const root of children.get(null) ?? []) walk(root, '', '', true);
  return `${lines.join('\n')}\n`;
}
