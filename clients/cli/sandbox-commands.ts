/**
 * `durable-sandbox get|wait|cancel|delete|extend` (docs/cli.md): one sandbox or operation by id.
 */
import { Command } from 'commander';
import { DurableSandboxError } from '../typescript/src/index.js';
import { formatOperation, formatSandbox } from './format.js';
import { RUN, UsageError, type Action } from './session.js';
import { expectId } from './arguments.js';

/** Adds `get`, `wait` and `cancel` to `program`. */
export function addOperationCommands(program: Command, action: Action): void {
  program
    .command('get')
    .description('show a sandbox (sbx_…) or an operation (op_…)')
    .argument('<id>', 'sandbox or operation id')
    .action(
      action(async (s, id: string) => {
        if (id.startsWith('sbx_')) {
          s.show(await s.client.getSandbox(id), formatSandbox);
          return 0;
        }
        if (id.startsWith('op_')) {
          s.show(await s.client.getOperation(id), formatOperation);
          return 0;
        }
        throw new UsageError(
          `get expects a sandbox id (sbx_…) or an operation id (op_…), got "${id}"`,
        );
      }),
    );

  program
    .command('wait')
    .description('wait until an operation finishes, showing its phase')
    .argument('<operation-id>')
    .action(
      action(async (s, id: string) => {
        expectId(id, 'op', 'wait');
        return s.wait(id);
      }),
    );

  program
    .command('cancel')
    .description('cancel a running create: it deletes its pod and ends cancelled')
    .argument('<operation-id>')
    .option('--wait', 'wait until the create has ended', false)
    .action(
      action(async (s, id: string, options: { wait: boolean }) => {
        expectId(id, 'op', 'cancel');
        const operation = await s.client.cancelOperation(id);
        if (!s.json) {
          s.out(`${id}: cancel requested (the create deletes its pod, then ends cancelled)\n`);
        }
        if (options.wait) return s.wait(operation, 'cancelled');
        if (s.json) s.show(operation, formatOperation);
        s.hint(`follow it: ${RUN} wait ${id}`);
        return 0;
      }),
    );
}

/** Adds `delete` and `extend` to `program`. */
export function addSandboxCommands(program: Command, action: Action): void {
  program
    .command('delete')
    .description('delete a sandbox: its pod is deleted and it ends deleted (202 + operation)')
    .argument('<sandbox-id>')
    .option('--wait', 'wait until the delete finishes', false)
    .action(
      action(async (s, id: string, options: { wait: boolean }) => {
        expectId(id, 'sbx', 'delete');
        let operation;
        try {
          operation = await s.client.deleteSandbox(id);
        } catch (err) {
          // A delete is idempotent for a cleanup script: the sandbox is gone either way.
          if (!(err instanceof DurableSandboxError) || err.code !== 'already_done') throw err;
          if (s.json) s.show({ sandbox_id: id, state: 'deleted', already_deleted: true }, String);
          else s.hint(`${id} is already deleted: nothing to do`);
          return 0;
        }
        return s.accepted(operation, options.wait);
      }),
    );

  program
    .command('extend')
    .description("set a running sandbox's lifetime: --ttl from now, or --expire-time")
    .argument('<sandbox-id>')
    .option('--ttl <duration>', 'new lifetime from now, e.g. 3600s')
    .option('--expire-time <time>', 'new expiry, RFC 3339 (e.g. 2026-12-03T18:00:00Z)')
    .action(
      action(async (s, id: string, options: { ttl?: string; expireTime?: string }) => {
        expectId(id, 'sbx', 'extend');
        if ((options.ttl === undefined) === (options.expireTime === undefined)) {
          throw new UsageError('extend needs exactly one of --ttl and --expire-time');
        }
        const sandbox = await s.client.extendSandbox(
          id,
          options.ttl !== undefined ? { ttl: options.ttl } : { expire_time: options.expireTime },
        );
        if (s.json) s.show(sandbox, formatSandbox);
        else s.out(`${id}: expires at ${sandbox.expire_time}\n`);
        return 0;
      }),
    );
}
