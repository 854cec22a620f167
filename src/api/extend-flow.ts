/**
 * Extending a sandbox's lifetime (`POST /v1/sandboxes/{id}:extend`, docs/api.md, "Lifetimes";
 * AIP-214 and AIP-136): a new `expire_time`, bounded by the template's `max_ttl` counted from
 * when the sandbox first ran, stored, then signalled to the sandbox's lifetime workflow (started
 * if it has none yet: a sandbox that ran without an expiry).
 */
import { lifetimeOf } from '../config/index.js';
import { MAX_TTL_LIMIT_MS, formatDuration } from '../../contract/index.js';
import type { SandboxRecord } from '../store/index.js';
import { startLifetime } from '../temporal/lifetime-workflow.js';
import { tenantPriority } from '../temporal/priority.js';
import type { AppDeps } from './deps.js';
import { ApiError } from './errors.js';
import type { ExtendRequest } from './validation.js';

/**
 * Sets the sandbox's new `expire_time`. Idempotent: the same `expire_time` twice changes
 * nothing the second time (a `ttl` counts from each request's moment).
 * @param nowMs epoch ms, the request's moment
 * @returns the sandbox as stored after it
 * @throws ApiError `not_running` (409) when the sandbox does not run (its lifetime starts when
 *   it runs: give `ttl` to the create instead)
 * @throws ApiError `invalid_request` (400) for a time not in the future or past the template's
 *   `max_ttl` from when it first ran
 * @throws ApiError `unavailable` (503) when the lifetime workflow cannot be told (the store
 *   holds the new time; retry)
 */
export async function extendLifetime(
  deps: AppDeps,
  sandbox: SandboxRecord,
  request: ExtendRequest,
  nowMs: number,
): Promise<SandboxRecord> {
  if (sandbox.state !== 'running') {
    throw new ApiError(
      'not_running',
      `sandbox ${sandbox.id} is ${sandbox.state}: only a running sandbox's lifetime can be extended`,
      { sandbox_id: sandbox.id, state: sandbox.state },
    );
  }
  const expireAtMs = 'ttlMs' in request ? nowMs + request.ttlMs : request.expireTimeMs;
  const field = 'ttlMs' in request ? 'ttl' : 'expire_time';
  if (expireAtMs <= nowMs) {
    throw new ApiError('invalid_request', `${field} must be in the future`, {
      problems: [{ field, message: 'must be in the future' }],
    });
  }
  const template = deps.config.templates[sandbox.template];
  const maxMs = (template && lifetimeOf(template).maxMs) ?? MAX_TTL_LIMIT_MS;
  // Rows of the release before have no running_at: their creation is the earliest it can be.
  const startMs = Date.parse(sandbox.runningAt ?? sandbox.createdAt);
  const latestMs = startMs + maxMs;
  if (expireAtMs > latestMs) {
    const max = template?.max_ttl ?? formatDuration(MAX_TTL_LIMIT_MS);
    const message = `must be at most ${new Date(latestMs).toISOString()} (max_ttl ${max} of template ${sandbox.template}, counted from when the sandbox started running)`;
    throw new ApiError('invalid_request', `${field} ${message}`, {
      problems: [{ field, message }],
      max_ttl: max,
    });
  }
  const stored = await deps.store.setExpireTime(
    sandbox.tenant,
    sandbox.id,
    new Date(expireAtMs).toISOString(),
  );
  if (!stored) {
    throw new ApiError('not_running', `sandbox ${sandbox.id} no longer runs`, {
      sandbox_id: sandbox.id,
    });
  }
  try {
    await startLifetime(
      deps.temporal,
      deps.config.taskQueue,
      stored,
      tenantPriority(deps.config.tenantLimits, stored.tenant),
    );
  } catch (err) {
    deps.logger.error({ err, sandbox_id: sandbox.id }, 'could not signal the lifetime workflow');
    throw new ApiError('unavailable', 'the workflow service is unavailable; try again', {
      sandbox_id: sandbox.id,
    });
  }
  deps.logger.info(
    { sandbox_id: sandbox.id, tenant: sandbox.tenant, expire_time: stored.expireTime },
    'lifetime extended',
  );
  return stored;
}
