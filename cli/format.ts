/** Human-readable output of sandboxes and operations (the `--json` flag prints raw JSON instead). */
import type { Operation, Sandbox } from './types.js';

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
  lines.push(`created    ${sandbox.created_at}`);
  return `${lines.join('\n')}\n`;
}

/** One line per field of an operation, and its sandbox when it succeeded. */
export function formatOperation(operation: Operation): string {
  const lines = [
    `operation  ${operation.id} (${operation.type})`,
    `status     ${operation.status}${operation.done ? '' : `, ${operation.phase}`}`,
    `sandbox    ${operation.sandbox_id}`,
  ];
  if (operation.error) lines.push(`error      ${operation.error.code}: ${operation.error.message}`);
  lines.push(`created    ${operation.created_at}`);
  if (operation.deadline_at && !operation.done) lines.push(`deadline   ${operation.deadline_at}`);
  const text = `${lines.join('\n')}\n`;
  return operation.result ? `${text}\n${formatSandbox(operation.result.sandbox)}` : text;
}

/** A table of sandboxes, one per line. */
export function formatSandboxList(sandboxes: Sandbox[]): string {
  if (sandboxes.length === 0) return 'no sandboxes\n';
  return sandboxes
    .map((s) =>
      [
        s.id,
        s.state.padEnd(8),
        s.template,
        s.pod.ip ?? '-',
        s.failure ? `${s.failure.code}: ${s.failure.message}` : '',
      ]
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

/** A table of operations, one per line. */
export function formatOperationList(operations: Operation[]): string {
  if (operations.length === 0) return 'no operations\n';
  return operations
    .map((op) =>
      [
        op.id,
        op.type,
        op.status.padEnd(9),
        op.sandbox_id,
        op.created_at,
        op.error ? `${op.error.code}: ${op.error.message}` : '',
      ]
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}
