/**
 * `GET /v1/operations`: the tenant's operations from Temporal visibility, newest first. Paging
 * uses the raw ListWorkflowExecutions call so its page token can be handed to the caller
 * (wrapped, see operation-page-token.ts). Visibility is eventually consistent: a just-started operation may appear a
 * moment later.
 */
import type { AppDeps } from './deps.js';
import { decodeOperationPageToken, encodeOperationPageToken } from './operation-page-token.js';
import {
  OPERATION_TYPES,
  STATUS_QUERY,
  describeOperation,
  operationOf,
  type Operation,
} from './operations.js';
import type { OperationListQuery } from './validation.js';

/** A page of operations; `nextPageToken` is null on the last page. */
export interface OperationPage {
  operations: Operation[];
  nextPageToken: string | null;
}

/** How many operations of a page are read from Temporal at once. */
const READ_CONCURRENCY = 8;

function quoted(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** The visibility query selecting a tenant's operations, optionally of one status. */
export function operationsQuery(tenant: string, status?: OperationListQuery['status']): string {
  const workflowTypes = Object.values(OPERATION_TYPES).map(quoted).join(', ');
  return [
    `TenantId = ${quoted(tenant)}`,
    `WorkflowType IN (${workflowTypes})`,
    ...(status ? [STATUS_QUERY[status]] : []),
  ].join(' AND ');
}

async function mapConcurrently<T, R>(
  items: T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  async function lane(): Promise<void> {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T);
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

/**
 * Lists the tenant's operations, newest first (by start time within a page, as Temporal
 * returns pages newest first).
 * @throws ApiError `invalid_request` when `page_token` is not one this route issued
 * @throws the client's or the store's error when either cannot be reached
 */
export async function listOperations(
  deps: Pick<AppDeps, 'temporal' | 'store' | 'config'>,
  tenant: string,
  query: OperationListQuery,
): Promise<OperationPage> {
  const visibilityQuery = operationsQuery(tenant, query.status);
  const response = await deps.temporal.workflowService.listWorkflowExecutions({
    namespace: deps.temporal.options.namespace,
    pageSize: query.limit,
    nextPageToken: query.page_token
      ? decodeOperationPageToken(query.page_token, visibilityQuery)
      : undefined,
    query: visibilityQuery,
  });
  const ids = (response.executions ?? [])
    .map((execution) => execution.execution?.workflowId)
    .filter((id): id is string => typeof id === 'string');
  const views = await mapConcurrently(ids, READ_CONCURRENCY, async (id) => {
    const described = await describeOperation(deps, tenant, id);
    return described && operationOf(deps, tenant, described);
  });
  const operations = views
    .filter((view): view is Operation => view !== undefined)
    .sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
  const token = response.nextPageToken;
  return {
    operations,
    nextPageToken:
      token && token.length > 0 ? encodeOperationPageToken(token, visibilityQuery) : null,
  };
}
