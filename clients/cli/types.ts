/**
 * The API's JSON shapes as the CLI reads them: the typed client's, generated from the OpenAPI
 * document (clients/typescript/src/types.ts).
 */
export type { Operation, Quota, Sandbox, SandboxState, Template } from '../typescript/src/index.js';
