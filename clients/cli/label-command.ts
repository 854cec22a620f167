/** `durable-sandbox label` (docs/cli.md): set or remove a sandbox's labels, as kubectl label does. */
import { Command } from 'commander';
import { formatLabels, formatSandbox } from './format.js';
import { UsageError, type Action } from './session.js';
import { parseLabelArguments, expectId } from './arguments.js';

/** Adds `label` to `program`. */
export function addLabelCommand(program: Command, action: Action): void {
  program
    .command('label')
    .description(
      "set (key=value) or remove (key-) a sandbox's labels, as kubectl label does; any state",
    )
    .argument('<sandbox-id>')
    .argument('[labels...]', 'key=value to set, key- to remove')
    .option('--overwrite', 'allow changing the value of a label the sandbox already has', false)
    .option('--list', "print the sandbox's labels, one key=value a line", false)
    .action(
      action(
        async (s, id: string, args: string[], options: { overwrite: boolean; list: boolean }) => {
          expectId(id, 'sbx', 'label');
          if (options.list) {
            if (args.length > 0) throw new UsageError('label --list takes no key=value or key-');
            const sandbox = await s.client.getSandbox(id);
            s.show(sandbox.labels, (labels) =>
              Object.keys(labels)
                .sort()
                .map((key) => `${key}=${labels[key]}\n`)
                .join(''),
            );
            return 0;
          }
          if (args.length === 0) throw new UsageError('label needs at least one key=value or key-');
          const { set, remove } = parseLabelArguments(args);
          // kubectl's rule: a label that has another value changes only with --overwrite.
          const current = (await s.client.getSandbox(id)).labels;
          if (!options.overwrite) {
            const changed = Object.keys(set).find(
              (key) => Object.hasOwn(current, key) && current[key] !== set[key],
            );
            if (changed !== undefined) {
              throw new UsageError(
                `'${changed}' already has a value (${current[changed]}), and --overwrite is false`,
              );
            }
          }
          for (const key of remove.filter((key) => !Object.hasOwn(current, key))) {
            s.hint(`label "${key}" not found.`);
          }
          // Only the named keys change (update_mask labels.<key>): a concurrent change of
          // another key is kept.
          const sandbox = await s.client.updateSandboxLabels(id, set, {
            keys: [...Object.keys(set), ...remove],
          });
          if (s.json) s.show(sandbox, formatSandbox);
          else s.out(`${id} labeled: ${formatLabels(sandbox.labels)}\n`);
          return 0;
        },
      ),
    );
}
