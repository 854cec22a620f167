/**
 * An operation's result: what it produced when it ended, not its sandbox as it is now (Google
 * AIP-151: a long-running operation's response is set when it is done). A create that
 * succeeded shows its sandbox `running` with its pod and IP, whatever became of the sandbox
 * later; a delete shows it `deleted`. Stored with the outcome as `operations.result_sandbox`
 * (migration 0010), the JSON of the `sandboxes` row at that moment.
 *
 * A succeeded row without it (it ended before migration 0010 while its sandbox had already
 * moved on, or a process of the release before wrote it during a rolling upgrade) is rebuilt
 * from the sandbox row as it is now ({@link sandboxAsCreated}): a create's sandbox as the create
 * left it (`running`, no failure, its pod's name and uid, `updated_at` the operation's end), its
 * IP only while the sandbox still has one (a delete or a loss clears it); a delete's sandbox as
 * it is (`deleted` is final).
 */
import type { Selectable } from 'kysely';
import type { OperationStatus, OperationType } from '../../contract/index.js';
import type { SandboxesTable } from './schema.js';
import { toRecord } from './sandboxes.js';
import type { SandboxPod } from '../../contract/index.js';
import type { SandboxRecord } from './types.js';

/** The `result_sandbox` column of a sandbox row. */
export function resultColumn(row: Selectable<SandboxesTable>): string {
  return JSON.stringify(row);
}

/**
 * A create's sandbox as the create left it when it succeeded, from the sandbox as it is now:
 * `running`, no failure, updated at `endedAt`; its pod as recorded, with `pod` (the workflow's
 * result) instead when given. Unchanged when the sandbox still runs.
 * @param endedAt ISO-8601, when the create ended
 */
export function sandboxAsCreated(
  now: SandboxRecord,
  endedAt: string,
  pod?: SandboxPod,
): SandboxRecord {
  if (now.state === 'running' && !pod) return now;
  return {
    ...now,
    state: 'running',
    failure: null,
    pod: pod ? { ...pod } : { ...now.pod },
    updatedAt: endedAt,
  };
}

/**
 * The result of an operation row: null unless it succeeded; its stored `result_sandbox`, else
 * (no usable column) rebuilt from the sandbox as it is now (`sandboxNow`; null when that row is
 * gone).
 * @param operation `updatedAt` ISO-8601: for a finished operation, when it ended (a finished
 *   row is never written again)
 */
export function operationResult(
  operation: {
    type: OperationType;
    status: OperationStatus;
    updatedAt: string;
    resultSandbox: string | null;
  },
  sandboxNow: SandboxRecord | null,
): { sandbox: SandboxRecord } | null {
  if (operation.status !== 'succeeded') return null;
  const stored = parseRow(operation.resultSandbox);
  if (stored) return { sandbox: toRecord(stored) };
  if (!sandboxNow) return null;
  return {
    sandbox:
      operation.type === 'sandbox.create'
        ? sandboxAsCreated(sandboxNow, operation.updatedAt)
        : sandboxNow,
  };
}

/** The stored row, or undefined for none or anything unreadable. */
function parseRow(raw: string | null): Selectable<SandboxesTable> | undefined {
  if (raw === null) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed &&
      typeof parsed === 'object' &&
      typeof (parsed as { id?: unknown }).id === 'string'
      ? (parsed as Selectable<SandboxesTable>)
      : undefined;
  } catch {
    return undefined;
  }
}
