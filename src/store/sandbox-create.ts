/**
 * The store's create of a sandbox (Store.createSandbox): admission, the idempotency key, the
 * create rate and the held limits, then the sandbox, its first execution and its operation, in
 * one transaction that rolls back whole when the create does not fit.
 */
import { insertExecution } from './executions.js';
import { claimIdempotencyKey, findIdempotencyKey } from './idempotency.js';
import { insertOperation } from './operations.js';
import { insertSandbox } from './sandboxes.js';
import {
  createsOutstanding,
  exceededLimit,
  type CreateRateRefusal,
  type HeldLimitRefusal,
} from '../../contract/index.js';
import { takeCreateTokenIn } from './create-rate.js';
import { lockTenantAdmission, selectTenantUsage } from './tenant-usage.js';
import type { NewSandboxInput, NewSandboxOutcome, Store } from './types.js';
import type { StoreContext } from './store-context.js';

/** Thrown inside the create's transaction to roll it back when the create does not fit. */
class AdmissionRefused extends Error {
  constructor(
    readonly outcome:
      | { kind: 'refused'; refusal: HeldLimitRefusal }
      | { kind: 'rate_limited'; refusal: CreateRateRefusal },
  ) {
    super(
      `tenant limit ${outcome.kind === 'refused' ? outcome.refusal.limit : 'creates_per_second'} reached`,
    );
    this.name = 'AdmissionRefused';
  }
}

/** The create of {@link Store}, over the store's shared context. */
export function sandboxCreate(ctx: StoreContext): Pick<Store, 'createSandbox'> {
  return {
    async createSandbox(input) {
      try {
        return await createSandboxIn(ctx, input);
      } catch (err) {
        // Rolled back: no row, no execution, no operation, no token, and the key is not claimed.
        if (err instanceof AdmissionRefused) return err.outcome;
        throw err;
      }
    },
  };
}

/**
 * The create's transaction: the tenant's admission lock, the idempotency key, a token of the
 * create rate (src/store/create-rate.ts), the held limits check (src/store/tenant-usage.ts), then the
 * sandbox, its first execution and its operation. A replay takes no token.
 * @throws AdmissionRefused when the create does not fit (the transaction rolls back)
 */
function createSandboxIn(ctx: StoreContext, input: NewSandboxInput): Promise<NewSandboxOutcome> {
  const { db, dialect, now } = ctx;
  return db.transaction().execute(async (trx): Promise<NewSandboxOutcome> => {
    const createdAt = now();
    await lockTenantAdmission(trx, dialect, input.tenant);
    if (input.idempotency !== undefined) {
      const { key, requestHash } = input.idempotency;
      const claimed = await claimIdempotencyKey(trx, {
        tenant: input.tenant,
        key,
        requestHash,
        operationId: input.operationId,
        sandboxId: input.id,
        createdAt,
      });
      if (!claimed) {
        const earlier = await findIdempotencyKey(trx, input.tenant, key);
        if (earlier === undefined) {
          throw new Error(`idempotency key of tenant ${input.tenant} vanished while read`);
        }
        return earlier.requestHash === requestHash
          ? { kind: 'replay', operationId: earlier.operationId, sandboxId: earlier.sandboxId }
          : { kind: 'conflict', operationId: earlier.operationId };
      }
    }
    if (input.createRate !== undefined) {
      const rate = input.createRate;
      const take = await takeCreateTokenIn(trx, input.tenant, rate, Date.parse(createdAt));
      if (!take.admitted) {
        throw new AdmissionRefused({
          kind: 'rate_limited',
          refusal: {
            usage: createsOutstanding(take.millitokens, rate),
            limitValue: rate.perSecond,
            burst: rate.burst,
            retryAfterMs: take.retryAfterMs,
          },
        });
      }
    }
    if (input.limits !== undefined) {
      const usage = await selectTenantUsage(trx, input.tenant);
      const refusal = exceededLimit(usage, input.resources, input.limits);
      if (refusal) throw new AdmissionRefused({ kind: 'refused', refusal });
    }
    const sandbox = await insertSandbox(trx, input, createdAt);
    await insertExecution(trx, { sandboxId: input.id, generation: 1, attempt: 1 }, createdAt);
    await insertOperation(
      trx,
      {
        id: input.operationId,
        type: 'sandbox.create',
        tenant: input.tenant,
        sandboxId: input.id,
        phase: 'creating_pod',
        deadlineAt:
          input.deadlineMs === undefined
            ? null
            : new Date(Date.parse(createdAt) + input.deadlineMs).toISOString(),
        traceId: input.traceId,
      },
      createdAt,
    );
    return { kind: 'created', sandbox };
  });
}
