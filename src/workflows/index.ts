// Every workflow the worker registers (the bundle's entry point).
export { createSandbox } from './create-sandbox.js';
export { deleteSandbox } from './delete-sandbox.js';
export { webhookDelivery } from './webhook-delivery.js';
export { sandboxLifetime } from './sandbox-lifetime.js';
export { warmPool } from './warm-pool.js';
export { purgeAgedRows } from './purge-aged-rows.js';
