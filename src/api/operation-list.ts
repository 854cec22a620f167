/**
 * `GET /v1/operations`: the tenant's operations from the store, newest first, one indexed query
 * per page (docs/architecture.md, "Consistency between Temporal and the store").
 */
import { InvalidPageTokenError } from '../store/index.js';
import type { AppDeps } from './deps.js';
import { ApiError } from './errors.js';
import { operationOfRecord, type Operation } from './operation-read.js';
import type { OperationListQuery } from './validation.js';

/** A page of operations; `nextPageToken` is null on the last page. */
export interface OperationPage {
  operations: Operation[];
  nextPageToken: string | null;
}

/**
 * Lists the tenant's operations, newest first (created_at, then id).
 * @throws ApiError `invalid_request` when `page_token` is not one this route issued
 * @throws the store's error when the database fails
 */
export async function listOperations(
  deps: Pick<AppDeps, 'store' | 'config'>,
  tenant: string,
  query: OperationListQuery,
): Promise<OperationPage> {
  try {
    const page = await deps.store.listOperations(tenant, {
      statuses: query.status,
      types: query.type,
      sandboxId: query.sandbox_id,
      createdAfter: query.create_time_after,
      createdBefore: query.create_time_before,
      limit: query.limit,
      pageToken: query.page_token,
    });
    return {
      operations: page.operations.map((record) => operationOfRecord(deps, record)),
      nextPageToken: page.nextPageToken ?? null,
    };
  } catch (err) {
    if (err instanceof InvalidPageTokenError) throw new ApiError('invalid_request', err.message);
    throw err;
  }
}
