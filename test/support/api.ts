/**
 * The API over a test stack: `createApp` wired to the stack's Temporal client, store and task
 * queue, with two tenants of their own (unique per suite, so operation lists of suites sharing
 * the dev server never mix) and small deadlines.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import request from 'supertest';
import { expect } from 'vitest';
import { createApp, type AppDeps } from '../../src/api/app.js';
import { loadConfig, type Config } from '../../src/config/index.js';
import { startTestStack, type TestStack, type TestStackOptions } from './stack.js';
import { ROOMY_TENANT_LIMITS } from './tenant-limits.js';
import { waitUntil } from '../../tools/wait-until.js';

/** A tenant and its bearer token. */
export interface TestTenant {
  id: string;
  token: string;
}

/** Options of {@link startApiStack}. */
export interface ApiStackOptions {
  stack?: TestStackOptions;
  /** Extra environment for `loadConfig` (e.g. `CREATE_DEADLINE_MS`). */
  env?: Record<string, string>;
}

/** What an API suite gets. */
export interface ApiStack {
  stack: TestStack;
  config: Config;
  deps: AppDeps;
  app: Express;
  tenantA: TestTenant;
  tenantB: TestTenant;
  /** Builds another app over the same stack with extra environment (e.g. a short deadline). */
  appWith(env: Record<string, string>, overrides?: Partial<AppDeps>): Express;
  /** Listens on a free port of 127.0.0.1; returns the base URL and a close function. */
  listen(app?: Express): Promise<{ url: string; close: () => Promise<void> }>;
  stop(): Promise<void>;
}

function tenant(prefix: string): TestTenant {
  const suffix = randomUUID().replace(/-/g, '').slice(0, 12);
  return { id: `${prefix}-${suffix}`, token: `token-${prefix}-${randomUUID()}` };
}

/** Starts a stack and the API over it. Call `stop()` in afterAll. */
export async function startApiStack(options: ApiStackOptions = {}): Promise<ApiStack> {
  // The worker gets the API's catalog, as a deployment gives both the same SANDBOX_TEMPLATES.
  const templates = loadConfig({ SANDBOX_TEMPLATES: options.env?.SANDBOX_TEMPLATES }).templates;
  const stack = await startTestStack({ templates, ...options.stack });
  const tenantA = tenant('a');
  const tenantB = tenant('b');
  const baseEnv = {
    API_TOKENS: `${tenantA.id}:${tenantA.token},${tenantB.id}:${tenantB.token}`,
    TEMPORAL_TASK_QUEUE: stack.taskQueue,
    CREATE_DEADLINE_MS: '60000',
    SYNC_READINESS_BUDGET_MS: '60000',
    // The API checks a webhook URL at registration with the workers' allow-list, as a
    // deployment gives both the same WEBHOOK_ALLOWED_CIDRS.
    WEBHOOK_ALLOWED_CIDRS: (options.stack?.webhooks?.allowedCidrs ?? []).join(','),
    // Limits for suites about something else; a suite's own TENANT_LIMITS replaces them.
    TENANT_LIMITS: ROOMY_TENANT_LIMITS,
    ...options.env,
  };
  const configOf = (env: Record<string, string>) => loadConfig({ ...baseEnv, ...env });
  const config = configOf({});
  const deps: AppDeps = {
    temporal: stack.temporal.client,
    store: stack.store,
    config,
    logger: stack.logger,
    kubernetes: stack.kubernetes,
  };
  const servers: Server[] = [];
  return {
    stack,
    config,
    deps,
    app: createApp(deps),
    tenantA,
    tenantB,
    appWith(env, overrides = {}) {
      return createApp({ ...deps, config: configOf(env), ...overrides });
    },
    async listen(app = createApp(deps)) {
      const server = await new Promise<Server>((resolve) => {
        const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
      });
      servers.push(server);
      const { port } = server.address() as AddressInfo;
      return {
        url: `http://127.0.0.1:${port}`,
        close: () =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections();
          }),
      };
    },
    async stop() {
      for (const server of servers) {
        server.closeAllConnections();
        server.close();
      }
      await stack.stop();
    },
  };
}

/** `Authorization` header of a tenant. */
export function bearer(who: TestTenant): { Authorization: string } {
  return { Authorization: `Bearer ${who.token}` };
}

/** Operation JSON as the tests read it. */
export interface OperationBody {
  id: string;
  type: string;
  sandbox_id: string;
  status: string;
  done: boolean;
  phase: string;
  error: { code: string; message: string; details: Record<string, unknown> } | null;
  result: { sandbox: Record<string, unknown> } | null;
  created_at: string;
  updated_at: string;
  deadline_at: string | null;
}

/** Polls `GET /v1/operations/{id}` until it is done (or `until` says so). */
export async function awaitOperation(
  app: Express,
  who: TestTenant,
  id: string,
  { timeoutMs = 60_000, until = (op: OperationBody) => op.done } = {},
): Promise<OperationBody> {
  return waitUntil(
    async () => {
      const response = await request(app).get(`/v1/operations/${id}`).set(bearer(who));
      if (response.status !== 200) {
        throw new Error(`GET /v1/operations/${id} answered ${response.status}: ${response.text}`);
      }
      const operation = response.body as OperationBody;
      return until(operation) ? operation : undefined;
    },
    { timeoutMs, what: `operation ${id}` },
  );
}

/**
 * POST /v1/sandboxes through `app` as `who` (its bearer token) with `body` and any extra
 * `headers` (e.g. `Idempotency-Key`); fails the test unless the API answers 202 (vitest's
 * `expect`, the answer's text as its message); returns the operation of the answer's body.
 * Throws that assertion error on any other status.
 */
export async function acceptedCreate(
  app: Express,
  who: TestTenant,
  body: object,
  headers: Record<string, string> = {},
): Promise<OperationBody> {
  const response = await request(app)
    .post('/v1/sandboxes')
    .set(bearer(who))
    .set(headers)
    .send(body);
  expect(response.status, response.text).toBe(202);
  return response.body as OperationBody;
}

/**
 * {@link acceptedCreate} of `body` as `who`, then {@link awaitOperation} of its operation on the
 * same `app` (default timeout, until done); returns the operation once done, whatever its status.
 * Throws as acceptedCreate does, or when the operation is not done within 60 s.
 */
export async function finishedCreate(
  app: Express,
  who: TestTenant,
  body: object,
): Promise<OperationBody> {
  return awaitOperation(app, who, (await acceptedCreate(app, who, body)).id);
}

/** A create body. */
export function createBody(diskMib: number, extra: Record<string, unknown> = {}) {
  return { template: 'base', resources: { cpu: 1, memory_mib: 256, disk_mib: diskMib }, ...extra };
}
