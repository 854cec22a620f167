/**
 * `durable-sandbox events [-f] [--type …] [--sandbox …]` (docs/cli.md, docs/webhooks.md, "The event feed"): the
 * tenant's events (the ones webhooks carry) read from a cursor; `-f` follows them with the feed's
 * long-poll until Ctrl-C, then says how to resume from where it stopped.
 */
import { Command, Option } from 'commander';
import { WEBHOOK_EVENT_TYPES } from '../../contract/index.js';
import {
  RequestAbortedError,
  type DurableSandboxClient,
  type Event,
  type WebhookEventType,
} from '../typescript/src/index.js';

/** What the events command uses of the CLI's session (clients/cli/session.ts). */
export interface EventSession {
  client: DurableSandboxClient;
  /** `-o json`: one event per line as the API's JSON (NDJSON). */
  json: boolean;
  out(text: string): void;
  hint(text: string): void;
  /** A line on stderr, also with `-o json`. */
  note(text: string): void;
  /** Aborts on Ctrl-C or SIGTERM. */
  signal?: AbortSignal;
  /** The exit code after the signal aborted the command (130, or 143 for SIGTERM). */
  interruptedExitCode(): number;
}

/** Wraps a command's body so its exit code reaches the CLI (clients/cli/program.ts's `action`). */
export type EventAction = <A extends unknown[]>(
  fn: (s: EventSession, ...args: A) => Promise<number>,
) => (...args: A) => Promise<void>;

/** How long each long-poll of `events -f` waits, in seconds. */
export const FOLLOW_WAIT_S = 30;

/**
 * One event as a line: `TIMESTAMP  TYPE  SANDBOX  STATE`, then the failure code of a
 * `sandbox.failed` or `sandbox.lost` event, or the cause of a `sandbox.deleted` one.
 */
export function formatEventLine(event: Event): string {
  const data = event.data as { id: string; state: string; failure?: { code: string } | null };
  const why =
    event.type === 'sandbox.deleted'
      ? `cause=${event.data.delete_cause ?? 'requested'}`
      : data.failure
        ? `code=${data.failure.code}`
        : '';
  return `${[event.timestamp, event.type.padEnd(15), data.id, data.state, why].join('  ').trimEnd()}\n`;
}

/** The command line that reads on from `cursor` with the same filter. */
function resumeCommand(
  options: { follow: boolean; type?: string[]; sandbox?: string },
  cursor: string,
): string {
  return [
    'npx durable-sandbox events',
    ...(options.follow ? ['-f'] : []),
    ...(options.type?.length ? ['--type', ...options.type] : []),
    ...(options.sandbox ? ['--sandbox', options.sandbox] : []),
    '--after',
    cursor,
  ].join(' ');
}

/** Adds `events` to the program. */
export function addEventCommands(program: Command, action: EventAction): void {
  program
    .command('events')
    .description('list your events (what webhooks carry) from a cursor; -f follows them')
    .option('-f, --follow', 'keep waiting for new events (long-poll) until Ctrl-C', false)
    .addOption(
      new Option('--type <types...>', 'only these event types').choices([...WEBHOOK_EVENT_TYPES]),
    )
    .option('--sandbox <id>', "only this sandbox's events")
    .option('--after <cursor>', 'start after this cursor (as a previous run printed it)')
    .action(
      action(
        async (
          s,
          options: { follow: boolean; type?: string[]; sandbox?: string; after?: string },
        ) => {
          const query = {
            types: options.type as WebhookEventType[] | undefined,
            sandbox: options.sandbox,
          };
          const print = (event: Event) =>
            s.out(s.json ? `${JSON.stringify(event)}\n` : formatEventLine(event));
          let cursor = options.after;
          if (!options.follow) {
            const page = await s.client.listEvents({ ...query, after: cursor });
            page.events.forEach(print);
            s.hint(`Read on: ${resumeCommand(options, page.next_cursor)}`);
            return 0;
          }
          try {
            for (;;) {
              const page = await s.client.listEvents(
                { ...query, after: cursor },
                { waitS: FOLLOW_WAIT_S },
              );
              page.events.forEach(print);
              cursor = page.next_cursor;
            }
          } catch (err) {
            if (!(err instanceof RequestAbortedError)) throw err;
            s.note(
              cursor === undefined
                ? 'Stopped following.'
                : `Stopped following. Resume: ${resumeCommand(options, cursor)}`,
            );
            return s.interruptedExitCode();
          }
        },
      ),
    );
}
