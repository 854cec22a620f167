/**
 * The sandbox store: schema, migrations and queries on SQLite (embedded) or PostgreSQL
 * (production). Open it with {@link openStore}; everything else is types and errors.
 */
export { openStore, DELETED_REASON } from './store.js';
export type { LearnedRootfsFloor } from '../../contract/index.js';
export { POD_LOST } from '../../contract/index.js';
export { StoreOptionsError } from './database.js';
export { MigrationError } from './migrations/index.js';
export { InvalidPageTokenError } from './page-token.js';
export { isStoreUnavailable } from './unavailable.js';
export { TooManyWebhookEndpointsError } from './webhooks.js';
export {
  deletionCauseOf,
  sandboxEventBody,
  webhookEventId,
  type FeedEventRecord,
  type FeedQuery,
} from './event-feed.js';
export type {
  WebhookStore,
  WebhookTarget,
  NewWebhookEndpoint,
  StoredWebhookEvent,
} from './webhooks.js';
export type {
  RequeuedWebhookEvent,
  WebhookEventClaim,
  WebhookEventStateRecord,
} from './webhook-event-states.js';
export type { WarmPoolRecord, WarmPoolStore } from './warm-pools.js';
export type { RetentionStore } from './retention.js';
export { sandboxAsCreated } from './operation-results.js';
export type {
  ListOperationsOptions,
  OperationOutcomeInput,
  OperationPage,
  OperationRecord,
  OperationTransition,
  ListSandboxesOptions,
  MarkSandboxFailedInput,
  MarkRunningResult,
  MarkedRunning,
  MarkSandboxRunningInput,
  NewSandboxInput,
  NewSandboxOutcome,
  RecordPodInput,
  RetireExecutionInput,
  SandboxPage,
  SandboxRecord,
  Store,
  EventFeedStore,
  StoreOptions,
  WaitingPod,
} from './types.js';
