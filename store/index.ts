/**
 * The sandbox store: schema, migrations and queries on SQLite (embedded) or PostgreSQL
 * (production). Open it with {@link openStore}; everything else is types and errors.
 */
export { openStore, DELETED_REASON } from './store.js';
export { POD_LOST } from './types.js';
export { StoreOptionsError } from './database.js';
export { MigrationError } from './migrations/index.js';
export { InvalidPageTokenError } from './page-token.js';
export { MAX_PAGE_SIZE } from './sandboxes.js';
export type {
  CreateSandboxInput,
  CreateSandboxResult,
  ExecutionRef,
  ListSandboxesOptions,
  MarkSandboxFailedInput,
  MarkRunningResult,
  MarkSandboxRunningInput,
  RecordPodInput,
  Resources,
  RetireExecutionInput,
  SandboxPage,
  SandboxRecord,
  SandboxState,
  Store,
  StoreOptions,
} from './types.js';
