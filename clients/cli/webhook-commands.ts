/**
 * `durable-sandbox webhooks create|list|delete|rotate-secret|deliveries|recover` (docs/cli.md,
 * docs/webhooks.md): the tenant's webhook endpoints through the typed client.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { WEBHOOK_EVENT_TYPES } from '../../contract/index.js';
import type { DurableSandboxClient } from '../typescript/src/index.js';
import type { WebhookDelivery, WebhookEndpoint } from '../typescript/src/index.js';
import { renderTable, type TableOptions } from './format.js';

/** What the webhook commands use of the CLI's session (clients/cli/session.ts). */
export interface WebhookSession {
  client: DurableSandboxClient;
  show<T>(value: T, human: (value: T) => string): void;
  table(): TableOptions;
  hint(text: string): void;
}

/** Wraps a command's body so its exit code reaches the CLI (clients/cli/program.ts's `action`). */
export type WebhookAction = <A extends unknown[]>(
  fn: (s: WebhookSession, ...args: A) => Promise<number>,
) => (...args: A) => Promise<void>;

/** Endpoints as a table: ID, URL, EVENTS, CREATED. */
export function formatWebhookEndpoints(
  endpoints: WebhookEndpoint[],
  options: TableOptions = {},
): string {
  const rows = endpoints.map((e) => [e.id, e.url, e.event_types.join(','), e.created_at]);
  return renderTable(['ID', 'URL', 'EVENTS', 'CREATED'], rows, options.columns);
}

/** Delivery attempts as a table, newest first. */
export function formatWebhookDeliveries(
  deliveries: WebhookDelivery[],
  options: TableOptions = {},
): string {
  const rows = deliveries.map((d) => [
    d.created_at,
    d.event_type,
    d.sandbox_id,
    String(d.attempt),
    d.status,
    d.http_status === null ? '-' : String(d.http_status),
    d.error ?? '',
  ]);
  return renderTable(
    ['AT', 'EVENT', 'SANDBOX', 'ATTEMPT', 'STATUS', 'HTTP', 'ERROR'],
    rows,
    options.columns,
  );
}

const SINCE_UNITS_MS: Readonly<Record<string, number>> = {
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/**
 * `--since` of `webhooks recover`: a duration back from `nowMs` (`90s`, `30m`, `1h`, `2d`) or an
 * RFC 3339 time (`2026-12-06T10:00:00Z`), as ISO-8601 UTC.
 * @throws InvalidArgumentError (commander: a usage error, exit 2) for anything else
 */
export function parseSince(text: string, nowMs = Date.now()): string {
  const ago = /^(\d{1,9})([smhd])$/.exec(text.trim());
  if (ago) return new Date(nowMs - Number(ago[1]) * SINCE_UNITS_MS[ago[2]!]!).toISOString();
  const rfc3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i;
  if (rfc3339.test(text.trim()) && !Number.isNaN(Date.parse(text))) {
    return new Date(Date.parse(text)).toISOString();
  }
  throw new InvalidArgumentError(
    'expected a duration back from now (90s, 30m, 1h, 2d) or an RFC 3339 time',
  );
}

/** Adds the `webhooks` command and its subcommands to `program`. */
export function addWebhookCommands(program: Command, action: WebhookAction): void {
  const webhooks = program
    .command('webhooks')
    .description('manage webhook endpoints: signed events when sandboxes change state');

  webhooks
    .command('create')
    .description('register an endpoint; prints its signing secret once')
    .argument('<url>', 'an http or https URL')
    .addOption(
      new Option('--events <types...>', 'event types (default: all)').choices([
        ...WEBHOOK_EVENT_TYPES,
      ]),
    )
    .action(
      action(async (s, url: string, options: { events?: string[] }) => {
        const eventTypes = (options.events ?? [
          ...WEBHOOK_EVENT_TYPES,
        ]) as WebhookEndpoint['event_types'];
        const created = await s.client.createWebhookEndpoint({ url, event_types: eventTypes });
        s.show(created, (e) => `${formatWebhookEndpoints([e], s.table())}secret  ${e.secret}\n`);
        s.hint('Store the secret now: it is not shown again (rotate-secret makes a new one).');
        return 0;
      }),
    );

  webhooks
    .command('list')
    .description("list your tenant's endpoints")
    .action(
      action(async (s) => {
        const body = { webhook_endpoints: await s.client.listWebhookEndpoints() };
        s.show(body, () => formatWebhookEndpoints(body.webhook_endpoints, s.table()));
        return 0;
      }),
    );

  webhooks
    .command('delete')
    .description('delete an endpoint; its pending deliveries stop')
    .argument('<endpoint-id>')
    .action(
      action(async (s, id: string) => {
        await s.client.deleteWebhookEndpoint(id);
        s.show({ id, deleted: true }, () => `${id} deleted\n`);
        return 0;
      }),
    );

  webhooks
    .command('rotate-secret')
    .description('make a new signing secret; the old one still signs during the grace period')
    .argument('<endpoint-id>')
    .action(
      action(async (s, id: string) => {
        const rotated = await s.client.rotateWebhookSecret(id);
        s.show(
          rotated,
          (e) =>
            `secret  ${e.secret}\nprevious secret signs until ${e.previous_secret_expires_at}\n`,
        );
        return 0;
      }),
    );

  webhooks
    .command('recover')
    .description(
      "send again an endpoint's refused or given-up events emitted since a time (kept 7 days)",
    )
    .argument('<endpoint-id>')
    .addOption(
      new Option('--since <when>', 'how far back: 1h, 30m, 2d, or an RFC 3339 time')
        .argParser((text: string) => parseSince(text))
        .makeOptionMandatory(),
    )
    .action(
      action(async (s, id: string, options: { since: string }) => {
        const recovery = await s.client.recoverWebhookEvents(id, options.since);
        s.show(
          recovery,
          (r) =>
            `${r.queued} event${r.queued === 1 ? '' : 's'} of ${r.endpoint_id} queued again (emitted since ${r.since})\n`,
        );
        s.hint(`Follow them: npx durable-sandbox webhooks deliveries ${id}`);
        return 0;
      }),
    );

  webhooks
    .command('deliveries')
    .description("an endpoint's latest delivery attempts, newest first")
    .argument('<endpoint-id>')
    .action(
      action(async (s, id: string) => {
        const body = { deliveries: await s.client.listWebhookDeliveries(id) };
        s.show(body, () => formatWebhookDeliveries(body.deliveries, s.table()));
        return 0;
      }),
    );
}
