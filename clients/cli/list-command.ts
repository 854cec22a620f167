/** `durable-sandbox list` (docs/cli.md): sandboxes by filter, or failed operations, a page at a time. */
import { Command, Option } from 'commander';
import { SANDBOX_STATES } from '../../contract/index.js';
import { formatOperationList, formatSandboxList } from './format.js';
import type { SandboxState } from './types.js';
import { RUN, UsageError, type Action } from './session.js';
import { positiveInteger } from './arguments.js';

/** The options of `list`, as commander parses them. */
interface ListOptions {
  failed: boolean;
  state?: string;
  selector?: string;
  template?: string;
  createdAfter?: string;
  createdBefore?: string;
  showLabels: boolean;
  limit: number;
  pageToken?: string;
}

/** Adds `list` to `program`. */
export function addListCommand(program: Command, action: Action): void {
  program
    .command('list')
    .description(
      'list sandboxes (by --state, --template, -l selector, creation time), or failed operations (--failed)',
    )
    .option('--failed', 'list failed operations, newest first', false)
    .addOption(
      new Option('--state <state>', 'only sandboxes in this state').choices(SANDBOX_STATES),
    )
    .option('-l, --selector <selector>', 'a label selector, e.g. "team=a,env in (prod,dev)"')
    .option('--template <name>', 'only sandboxes of this template')
    .option('--created-after <time>', 'only those created at or after this RFC 3339 time')
    .option('--created-before <time>', 'only those created before this RFC 3339 time')
    .option('--show-labels', 'add a LABELS column', false)
    .option('--limit <n>', 'page size (1-200)', positiveInteger, 50)
    .option('--page-token <token>', 'the next page, as the previous page printed it')
    .action(
      action(async (s, options: ListOptions) => {
        const query = {
          limit: options.limit,
          pageToken: options.pageToken || undefined,
          createTimeAfter: options.createdAfter,
          createTimeBefore: options.createdBefore,
        };
        let page: { next_page_token: string | null };
        if (options.failed) {
          if (options.selector !== undefined || options.template !== undefined) {
            throw new UsageError('--failed lists operations: -l and --template filter sandboxes');
          }
          const body = await s.client.listOperations({ ...query, status: 'failed' });
          s.show(body, () => formatOperationList(body.operations, s.table()));
          page = body;
        } else {
          // commander has checked the state against SANDBOX_STATES (.choices).
          const state = options.state as SandboxState | undefined;
          const body = await s.client.listSandboxes({
            ...query,
            state,
            template: options.template,
            labelSelector: options.selector,
          });
          const table = { ...s.table(), showLabels: options.showLabels };
          s.show(body, () => formatSandboxList(body.sandboxes, table));
          page = body;
        }
        if (page.next_page_token) {
          s.hint(`More results: ${RUN} ${nextPageArgs(options, page.next_page_token).join(' ')}`);
        }
        return 0;
      }),
    );
}

/** The arguments of the `list` that prints the next page: the same filters and `--page-token`. */
function nextPageArgs(options: ListOptions, nextPageToken: string): string[] {
  const quote = (text: string) => (/^[\w.:=,/-]+$/.test(text) ? text : `'${text}'`);
  const args = [
    'list',
    ...(options.failed ? ['--failed'] : []),
    ...(options.state ? ['--state', options.state] : []),
    ...(options.selector !== undefined ? ['-l', quote(options.selector)] : []),
    ...(options.template ? ['--template', options.template] : []),
    ...(options.createdAfter ? ['--created-after', options.createdAfter] : []),
    ...(options.createdBefore ? ['--created-before', options.createdBefore] : []),
    ...(options.showLabels ? ['--show-labels'] : []),
    '--limit',
    String(options.limit),
    '--page-token',
    nextPageToken,
  ];
  return args;
}
