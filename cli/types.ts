/**
 * The API's JSON shapes as the CLI reads them: the ones api/wire.ts writes (api/openapi.json
 * documents them). Types only; the CLI talks to the API over HTTP.
 */
export type {
  OperationJson as Operation,
  SandboxJson as Sandbox,
  TemplateJson as Template,
} from '../api/wire.js';
export type { QuotaJson as Quota } from '../api/handlers/quota.js';

/** A page of a list; `next_page_token` is null on the last page. */
export interface Page {
  next_page_token: string | null;
}
