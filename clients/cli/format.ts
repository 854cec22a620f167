/**
 * Human-readable output of sandboxes and operations: one line per field for a single object,
 * kubectl-like tables for lists (`-o json` prints the API's JSON instead).
 */
import type { Operation, Quota, Sandbox, Template } from './types.js';

/** Table width: the terminal's columns, or unbounded when stdout is not a terminal. */
export interface TableOptions {
  /** Adds the columns of `-o wide`. */
  wide?: boolean;
  /** Cut the last column so a row fits; undefined: never cut. */
  columns?: number;
  /** The clock AGE is computed from, in epoch ms (default now). */
  nowMs?: number;
  /** Adds a LABELS column (`list --show-labels`, as kubectl's). */
  showLabels?: boolean;
}

/** Labels as kubectl prints them: `k=v` by key, comma separated; `<none>` for none. */
export function formatLabels(labels: Record<string, string> | undefined): string {
  const keys = Object.keys(labels ?? {}).sort();
  return keys.length === 0 ? '<none>' : keys.map((key) => `${key}=${labels?.[key]}`).join(',');
}

/**
 * A duration as kubectl prints AGE (`45s`, `5m30s`, `3h`, `2d4h`, `40d`), after
 * `HumanDuration` in k8s.io/apimachinery/pkg/util/duration.
 * @param ms elapsed milliseconds; negative counts as 0
 */
export function humanDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const minutes = Math.floor(seconds / 60);
  const hours = Math.floor(minutes / 60);
  const days = Math.floor(hours / 24);
  const years = Math.floor(days / 365);
  if (seconds < 120) return `${seconds}s`;
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`;
  if (days < 365 * 2) return `${days}d`;
  if (years < 8) return days % 365 === 0 ? `${years}y` : `${years}y${days % 365}d`;
  return `${years}y`;
}

/**
 * Renders rows under a header, columns separated by three spaces as kubectl does; the last
 * column is cut with `…` when a row would be wider than `columns`.
 */
export function renderTable(header: string[], rows: string[][], columns?: number): string {
  const widths = header.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => (row[i] ?? '').length)),
  );
  return [header, ...rows]
    .map((row) => {
      const line = row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join('   ')
        .trimEnd();
      return `${fit(line, columns)}\n`;
    })
    .join('');
}

function fit(line: string, columns: number | undefined): string {
  if (columns === undefined || columns <= 0 || line.length <= columns) return line;
  return `${line.slice(0, Math.max(0, columns - 1))}…`;
}

/** What a person reads for a phase of the API (`waiting_for_ip` -> "waiting for the pod's IP"). */
export const PHASE_TEXT: Record<string, string> = {
  creating_pod: 'creating the pod',
  waiting_for_ip: "waiting for the pod's IP",
  compensating: 'compensating: deleting the pod',
  deleting: 'deleting the sandbox',
  finished: 'finishing',
};

/** `HH:MM` of an ISO-8601 instant in the local time zone (`HH:MM:SS` when `seconds`). */
export function clockTime(iso: string, seconds = false): string {
  const date = new Date(iso);
  const parts = [date.getHours(), date.getMinutes(), ...(seconds ? [date.getSeconds()] : [])];
  return parts.map((n) => String(n).padStart(2, '0')).join(':');
}

/**
 * The line a wait shows: "op_…: waiting for the pod's IP, 3 s, deadline 10:12" (the deadline
 * only while the create creates its pod or waits for its IP; not while compensating).
 * @param elapsedMs time the operation has been in its phase (since its `updated_at`)
 */
export function progressText(operation: Operation, elapsedMs: number): string {
  const phase = PHASE_TEXT[operation.phase] ?? operation.phase.replaceAll('_', ' ');
  // The deadline matters only while the create can still wait for its IP.
  const waitsForIp =
    !operation.done && ['creating_pod', 'waiting_for_ip'].includes(operation.phase);
  const deadline =
    operation.deadline_at && waitsForIp ? `, deadline ${clockTime(operation.deadline_at)}` : '';
  return `${operation.id}: ${phase}, ${Math.round(elapsedMs / 1000)} s${deadline}`;
}

/** One line per field of a sandbox. */
export function formatSandbox(sandbox: Sandbox): string {
  const { cpu, memory_mib: memory, disk_mib: disk } = sandbox.resources;
  const lines = [
    `sandbox    ${sandbox.id}`,
    `state      ${sandbox.state}`,
    `template   ${sandbox.template}`,
    `resources  cpu=${cpu} memory=${memory}MiB disk=${disk}MiB`,
    `pod        ${sandbox.pod.name ?? '-'} uid=${sandbox.pod.uid ?? '-'} ip=${sandbox.pod.ip ?? '-'}`,
  ];
  if (sandbox.failure) lines.push(`failure    ${sandbox.failure.code}: ${sandbox.failure.message}`);
  if (Object.keys(sandbox.labels ?? {}).length > 0) {
    lines.push(`labels     ${formatLabels(sandbox.labels)}`);
  }
  lines.push(`created    ${sandbox.created_at}`);
  if (sandbox.expire_time) lines.push(`expires    ${sandbox.expire_time}`);
  return `${lines.join('\n')}\n`;
}

/**
 * One line per field of an operation, and its sandbox when it succeeded.
 * @param options.withError false leaves the error out (the caller prints it on stderr)
 */
export function formatOperation(
  operation: Operation,
  options: { withError?: boolean } = {},
): string {
  const phase = PHASE_TEXT[operation.phase] ?? operation.phase;
  const lines = [
    `operation  ${operation.id} (${operation.type}${operation.cause === 'expired' ? ', expired' : ''})`,
    `status     ${operation.status}${operation.done ? '' : `, ${phase}`}`,
    `sandbox    ${operation.sandbox_id}`,
  ];
  if (operation.error && options.withError !== false) {
    lines.push(`error      ${operation.error.code}: ${operation.error.message}`);
  }
  lines.push(`created    ${operation.created_at}`);
  if (operation.deadline_at && !operation.done) lines.push(`deadline   ${operation.deadline_at}`);
  if (operation.temporal_ui_url) lines.push(`temporal   ${operation.temporal_ui_url}`);
  const text = `${lines.join('\n')}\n`;
  return operation.result ? `${text}\n${formatSandbox(operation.result.sandbox)}` : text;
}

/**
 * Sandboxes as a table: ID, STATE, TEMPLATE, AGE, REASON; wide adds CPU, MEMORY, DISK, POD and IP
 * before AGE, and `showLabels` LABELS before REASON (REASON stays last, so a row cut to the
 * terminal's width loses the reason's end first).
 */
export function formatSandboxList(sandboxes: Sandbox[], options: TableOptions = {}): string {
  if (sandboxes.length === 0) return 'No sandboxes found.\n';
  const now = options.nowMs ?? Date.now();
  const wide = options.wide === true;
  const labels = options.showLabels === true;
  // Each column, and whether this table shows it (unset: always).
  const columns: Array<{ header: string; cell: (s: Sandbox) => string; shown?: boolean }> = [
    { header: 'ID', cell: (s) => s.id },
    { header: 'STATE', cell: (s) => s.state },
    { header: 'TEMPLATE', cell: (s) => s.template },
    { header: 'CPU', cell: (s) => String(s.resources.cpu), shown: wide },
    { header: 'MEMORY', cell: (s) => `${s.resources.memory_mib}Mi`, shown: wide },
    { header: 'DISK', cell: (s) => `${s.resources.disk_mib}Mi`, shown: wide },
    { header: 'POD', cell: (s) => s.pod.name ?? '-', shown: wide },
    { header: 'IP', cell: (s) => s.pod.ip ?? '-', shown: wide },
    { header: 'AGE', cell: (s) => humanDuration(now - Date.parse(s.created_at)) },
    { header: 'LABELS', cell: (s) => formatLabels(s.labels), shown: labels },
    { header: 'REASON', cell: (s) => (s.failure ? `${s.failure.code}: ${s.failure.message}` : '') },
  ];
  const shown = columns.filter((column) => column.shown ?? true);
  return renderTable(
    shown.map((column) => column.header),
    sandboxes.map((s) => shown.map((column) => column.cell(s))),
    options.columns,
  );
}

/** Operations as a table: ID, TYPE, STATUS, SANDBOX, AGE, ERROR (wide: PHASE and CREATED too). */
export function formatOperationList(operations: Operation[], options: TableOptions = {}): string {
  if (operations.length === 0) return 'No operations found.\n';
  const now = options.nowMs ?? Date.now();
  const error = (op: Operation) => (op.error ? `${op.error.code}: ${op.error.message}` : '');
  const age = (op: Operation) => humanDuration(now - Date.parse(op.created_at));
  if (options.wide) {
    return renderTable(
      ['ID', 'TYPE', 'STATUS', 'PHASE', 'SANDBOX', 'CREATED', 'AGE', 'ERROR'],
      operations.map((op) => [
        op.id,
        op.type,
        op.status,
        op.phase,
        op.sandbox_id,
        op.created_at,
        age(op),
        error(op),
      ]),
      options.columns,
    );
  }
  return renderTable(
    ['ID', 'TYPE', 'STATUS', 'SANDBOX', 'AGE', 'ERROR'],
    operations.map((op) => [op.id, op.type, op.status, op.sandbox_id, age(op), error(op)]),
    options.columns,
  );
}

/**
 * Templates as a table: NAME, IMAGE, FLOOR (the rootfs floor, `451Mi`, or `<unknown>` as
 * kubectl prints a missing value), SOURCE (`declared`, `learned` or `-`), AGE (since a learned
 * floor's refusal; `-` otherwise). Wide adds NODE and REASON of a learned floor.
 */
export function formatTemplateList(templates: Template[], options: TableOptions = {}): string {
  if (templates.length === 0) return 'No templates found.\n';
  const now = options.nowMs ?? Date.now();
  const row = ({ name, image, rootfs_floor: floor }: Template) => [
    name,
    image,
    floor.rootfs_mib === null ? '<unknown>' : `${floor.rootfs_mib}Mi`,
    floor.source === 'unknown' ? '-' : floor.source,
    floor.learned_at ? humanDuration(now - Date.parse(floor.learned_at)) : '-',
  ];
  if (options.wide) {
    return renderTable(
      ['NAME', 'IMAGE', 'FLOOR', 'SOURCE', 'AGE', 'NODE', 'REASON'],
      templates.map((t) => [
        ...row(t),
        t.rootfs_floor.node_name ?? '-',
        t.rootfs_floor.reason ?? '',
      ]),
      options.columns,
    );
  }
  return renderTable(
    ['NAME', 'IMAGE', 'FLOOR', 'SOURCE', 'AGE'],
    templates.map(row),
    options.columns,
  );
}

/**
 * The tenant's limits and usage (`GET /v1/quota`) as a table: LIMIT, USED, OF (the limit's
 * value), SCOPE (`all replicas`: the held limits and the create rate, checked in the store;
 * `this replica`: the waits, held per API process; docs/api.md, "Tenant limits").
 */
export function formatQuota(quota: Quota, options: TableOptions = {}): string {
  const { limits, usage } = quota;
  const rows = [
    ['sandboxes', String(usage.sandboxes), String(limits.sandboxes), 'all replicas'],
    ['cpu', String(usage.cpu), String(limits.cpu), 'all replicas'],
    ['memory_mib', String(usage.memory_mib), String(limits.memory_mib), 'all replicas'],
    ['disk_mib', String(usage.disk_mib), String(limits.disk_mib), 'all replicas'],
    [
      'creates_per_second',
      '-',
      `${limits.creates_per_second} (burst ${limits.create_burst})`,
      'all replicas',
    ],
    ['waits', String(usage.waits), String(limits.waits), 'this replica'],
  ];
  return `tenant  ${quota.tenant}\n${renderTable(['LIMIT', 'USED', 'OF', 'SCOPE'], rows, options.columns)}`;
}
