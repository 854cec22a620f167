/** `durable-sandbox trace|templates|quota` (docs/cli.md): an operation's trace, the catalog, the tenant's limits. */
import { Command } from 'commander';
import { DurableSandboxError } from '../typescript/src/index.js';
import { formatQuota, formatTemplateList } from './format.js';
import { formatTraceTree } from './trace-tree.js';
import { missingTraceMessage } from './trace-missing.js';
import { FAILED, type Action } from './session.js';
import { expectId } from './arguments.js';

/** Adds `trace`, `templates` and `quota` to `program`. */
export function addInfoCommands(program: Command, action: Action): void {
  program
    .command('trace')
    .description("print an operation's trace as a tree (spans kept by npm start)")
    .argument('<operation-id>')
    .action(
      action(async (s, id: string) => {
        expectId(id, 'op', 'trace');
        const operation = await s.client.getOperation(id);
        if (!operation.trace_id) {
          s.error('no_trace', `${id} has no trace: traces were off when it was created`);
          s.hint('Turn them on as docs/observability.md says.');
          return FAILED;
        }
        let spans;
        try {
          spans = await s.client.getTrace(operation.trace_id);
        } catch (err) {
          if (!(err instanceof DurableSandboxError) || err.status !== 404) throw err;
          s.error('no_spans', missingTraceMessage(operation.trace_id, err.message));
          return FAILED;
        }
        s.show({ trace_id: operation.trace_id, spans }, () => formatTraceTree(spans));
        return 0;
      }),
    );

  program
    .command('templates')
    .argument('[name]', 'one template')
    .description('list the templates: image and rootfs floor (declared, learned or unknown)')
    .action(
      action(async (s, name?: string) => {
        if (name) {
          const body = await s.client.getTemplate(name);
          s.show(body, () => formatTemplateList([body], s.table()));
          return 0;
        }
        const body = { templates: await s.client.listTemplates() };
        s.show(body, () => formatTemplateList(body.templates, s.table()));
        return 0;
      }),
    );

  program
    .command('quota')
    .description("show your tenant's limits and what it uses of them")
    .action(
      action(async (s) => {
        const body = await s.client.getQuota();
        s.show(body, () => formatQuota(body, s.table()));
        return 0;
      }),
    );
}
