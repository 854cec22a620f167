/** `durable-sandbox create` (docs/cli.md): a sandbox, asynchronously, with `--wait`, or `--sync`. */
import { Command, Option } from 'commander';
import { CPU_FORMS } from '../../contract/index.js';
import { DurableSandboxError } from '../typescript/src/index.js';
import { formatSandbox } from './format.js';
import { SYNC_NEVER_READY_HINT, reportApiError, type Action } from './session.js';
import { positiveInteger, cpuQuantity, collectLabel, checkLabels } from './arguments.js';

/** Adds `create` to `program`. */
export function addCreateCommand(program: Command, action: Action): void {
  program
    .command('create')
    .description('create a sandbox (asynchronously unless --sync)')
    .option('--template <name>', 'template of the catalog', 'base')
    .requiredOption('--disk-mib <n>', 'disk size in MiB', positiveInteger)
    .option('--cpu <quantity>', `cores: ${CPU_FORMS}`, cpuQuantity, '1')
    .option('--memory-mib <n>', 'memory in MiB', positiveInteger, 1024)
    .option('--wait', 'wait until the create finishes, showing its phase', false)
    .addOption(
      new Option(
        '--sync',
        'use the synchronous route (answers when the sandbox runs or failed; already waits)',
      )
        .default(false)
        .conflicts('wait'),
    )
    .option('--idempotency-key <key>', 'send Idempotency-Key')
    .option('--ttl <duration>', "lifetime from running, e.g. 3600s (default: the template's)")
    .option(
      '-l, --label <key=value>',
      'a label (repeatable): --label team=a --label env=prod',
      collectLabel,
    )
    .action(
      action(
        async (
          s,
          options: {
            template: string;
            diskMib: number;
            cpu: string;
            memoryMib: number;
            wait: boolean;
            sync: boolean;
            idempotencyKey?: string;
            ttl?: string;
            label?: Record<string, string>;
          },
        ) => {
          if (options.label) checkLabels(options.label);
          const body = {
            template: options.template,
            resources: {
              cpu: options.cpu,
              memory_mib: options.memoryMib,
              disk_mib: options.diskMib,
            },
            ...(options.ttl !== undefined && { ttl: options.ttl }),
            ...(options.label && { labels: options.label }),
          };
          // The API replays the first answer to a repeated key (docs/api.md, `Idempotency-Key`).
          // Without --idempotency-key the client makes one key per create, kept on its retries.
          const create = { idempotencyKey: options.idempotencyKey };
          if (options.sync) {
            const spinner = (await s.spinner('creating sandbox (synchronous)')).start();
            try {
              const sandbox = await s.client.createSandboxSync(body, create);
              s.outcome(spinner, true, `sandbox ${sandbox.id} running`);
              s.show(sandbox, formatSandbox);
              return 0;
            } catch (err) {
              spinner.stop();
              if (!(err instanceof DurableSandboxError)) throw err;
              const operationId = err.details.operation_id;
              if (typeof operationId === 'string') s.hint(`operation: ${operationId}`);
              if (err.code !== 'pod_never_ready') throw err;
              return reportApiError(s.io, err, s.options.apiUrl, SYNC_NEVER_READY_HINT);
            }
          }
          return s.accepted(await s.client.createSandbox(body, create), options.wait);
        },
      ),
    );
}
