/**
 * The contract every layer imports (api, worker, workflows, activities, kubernetes, store):
 * one name and one shape per concept. Types, constants and pure functions only; no Node
 * imports, so the deterministic workflow bundle may import it.
 */
export * from './sandbox.js';
export * from './sandbox-json.js';
export * from './cpu.js';
export * from './operation.js';
export * from './create-workflow.js';
export * from './delete-workflow.js';
export * from './template.js';
export * from './placement.js';
export * from './readiness-wait.js';
export * from './tenant-limits.js';
export * from './create-rate.js';
export * from './webhook.js';
export * from './lifetime.js';
export * from './warm-pool.js';
export * from './ids.js';
export * from './labels.js';
export * from './retention.js';
