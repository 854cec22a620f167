/**
 * The CLI's argument parsers and checks (clients/cli/program.ts): integers, CPU quantities,
 * labels as kubectl reads them, and ids of the kind a command takes.
 */
import { InvalidArgumentError } from 'commander';
import {
  RESOURCE_LIMITS,
  labelKeyErrors,
  parseCpuQuantity,
  parseLabels,
} from '../../contract/index.js';
import { RUN, UsageError } from './session.js';

/** A positive integer argument (`--disk-mib`, `--limit`). */
export function positiveInteger(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) <= 0) {
    throw new InvalidArgumentError('must be a positive integer');
  }
  return Number(value);
}

/** `--cpu`: a Kubernetes CPU quantity (`0.5`, `2`, `500m`), sent as typed (contract/cpu.ts). */
export function cpuQuantity(value: string): string {
  const parsed = parseCpuQuantity(value, RESOURCE_LIMITS.cpu);
  if ('problem' in parsed) throw new InvalidArgumentError(parsed.problem);
  return value;
}

/** `--label k=v` (repeatable): collects the labels, refusing a pair without `=`. */
export function collectLabel(
  value: string,
  previous: Record<string, string> = {},
): Record<string, string> {
  const at = value.indexOf('=');
  if (at < 0) throw new InvalidArgumentError(`expects key=value (e.g. team=a), got "${value}"`);
  return { ...previous, [value.slice(0, at)]: value.slice(at + 1) };
}

/**
 * Checks labels as the API will (contract/labels.ts), before anything is sent.
 * @throws UsageError naming the label and the rule
 */
export function checkLabels(labels: Record<string, string>): void {
  const parsed = parseLabels(labels);
  if ('problems' in parsed) {
    const [first] = parsed.problems;
    throw new UsageError(`${first?.field} ${first?.message}`);
  }
}

/**
 * The arguments of `label` as kubectl reads them: `key=value` sets, `key-` removes.
 * @throws UsageError for an argument that is neither, or a key given twice
 */
export function parseLabelArguments(args: readonly string[]): {
  set: Record<string, string>;
  remove: string[];
} {
  const set: Record<string, string> = {};
  const remove: string[] = [];
  const seen = new Set<string>();
  for (const arg of args) {
    const at = arg.indexOf('=');
    const key = at >= 0 ? arg.slice(0, at) : arg.endsWith('-') ? arg.slice(0, -1) : undefined;
    if (key === undefined || key === '') {
      throw new UsageError(`label expects key=value or key-, got "${arg}"`);
    }
    if (seen.has(key)) throw new UsageError(`label: key "${key}" is given twice`);
    seen.add(key);
    if (at >= 0) set[key] = arg.slice(at + 1);
    else remove.push(key);
  }
  checkLabels(set);
  for (const key of remove) {
    const errors = labelKeyErrors(key);
    if (errors.length > 0) throw new UsageError(`label key "${key}" is invalid: ${errors[0]}`);
  }
  return { set, remove };
}

/**
 * Checks that `id` is of the kind the command takes.
 * @throws UsageError naming the expected prefix and, for the other kind, the command that takes it
 */
export function expectId(id: string, kind: 'sbx' | 'op', command: string): void {
  if (id.startsWith(`${kind}_`)) return;
  const expected = kind === 'sbx' ? 'a sandbox id (sbx_…)' : 'an operation id (op_…)';
  let hint = '';
  if (kind === 'sbx' && id.startsWith('op_')) {
    hint = `; ${id} is an operation: follow it with \`${RUN} wait ${id}\`, or stop a create with \`${RUN} cancel ${id}\``;
  } else if (kind === 'op' && id.startsWith('sbx_')) {
    hint = `; ${id} is a sandbox: see it with \`${RUN} get ${id}\``;
  }
  throw new UsageError(`${command} expects ${expected}, got "${id}"${hint}`);
}
