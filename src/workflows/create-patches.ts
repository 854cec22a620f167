/**
 * The patches of the `createSandbox` workflow (src/workflows/create-sandbox.ts), each named by its
 * id as Temporal records it in a history's `core_patch` marker. Every one is deprecated
 * (`deprecatePatch`, the second step of Temporal's patching): the workflow always takes the
 * branch the patch brought and records the marker as deprecated, since the release before
 * (RELEASE_BEFORE) already records each of them wherever its code passes it. Each call goes
 * (the third step) once every history a worker may meet was recorded by a release that
 * deprecates it: docs/testing.md, "Patch exit plan".
 *
 * Deterministic: constants only.
 */

/**
 * "What the worker trusts" (docs/security.md): the worker admits the create against the store
 * (src/activities/admission.ts) before any step, so a workflow started by anyone but the API makes no
 * pod and writes nothing. Passed first, in the first workflow task of every create.
 */
export const WORKER_ADMISSION_PATCH = 'worker-admission';

/**
 * "Re-placement" (docs/architecture.md): a create whose input carries a placement policy (its
 * template names `replace_on`) runs the placement loop. Passed only by such creates.
 */
export const RE_PLACEMENT_PATCH = 're-placement';

/**
 * "Warm pools" (docs/architecture.md): a create whose input says its template has a matching
 * pool first claims a ready pod of it. Passed only by such creates.
 */
export const WARM_POOL_PATCH = 'warm-pool-claim';

/**
 * "The outcome at the decision" (docs/architecture.md): each readiness wait asks whoever decides
 * it to record the create's outcome on the operation first (src/verdict/outcome-at-decision.ts), and
 * the workflow's own outcome write adopts an outcome recorded before it. Passed when the first
 * readiness wait is scheduled.
 */
export const OUTCOME_AT_DECISION_PATCH = 'outcome-at-decision';

/**
 * "Waiting costs nothing" (docs/architecture.md): the readiness wait completes asynchronously
 * and holds no watch, so it has no heartbeat timeout and is cancelled with TRY_CANCEL. Passed
 * when a readiness wait is scheduled.
 */
export const ASYNC_READINESS_WAIT_PATCH = 'async-readiness-wait';

/**
 * "One record: Temporal's" (docs/architecture.md, "Waiting costs nothing"): the readiness wait
 * runs under the activity id of its pod (contract/readiness-wait.ts), so any worker completes it
 * by workflow id and activity id. Passed with {@link ASYNC_READINESS_WAIT_PATCH}.
 */
export const READINESS_WAIT_BY_ID_PATCH = 'readiness-wait-by-id';

/**
 * "A compensation the service account may not do" (docs/reliability.md): the compensation's pod
 * delete stops at a refusal of the service's account that has lasted its bound and leaves the pod
 * to the orphan sweeper, so the create still ends. Passed when compensation deletes a pod.
 */
export const DELETE_LEFT_TO_SWEEPER_PATCH = 'compensation-delete-left-to-sweeper';

/**
 * "The create's labels and lifetime in its result" (docs/nexus.md): a create whose input carries
 * `labels` or `ttl` repeats them in its result. Passed only by such creates, when they succeed.
 */
export const CREATE_RESULT_FIELDS_PATCH = 'create-result-labels-ttl';
