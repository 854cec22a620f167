/** The OpenAPI 3.1 document kept beside the code (src/api/openapi.json), read once. */
import { readFileSync } from 'node:fs';

/** The parts of the document the code reads. */
export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, { operationId?: string; security?: unknown[] }>>;
  [key: string]: unknown;
}

let cached: OpenApiDocument | undefined;

/**
 * The parsed src/api/openapi.json.
 * @throws the fs or JSON error when the file is missing or malformed (a packaging bug)
 */
export function openApiDocument(): OpenApiDocument {
  cached ??= JSON.parse(
    readFileSync(new URL('./openapi.json', import.meta.url), 'utf8'),
  ) as OpenApiDocument;
  return cached;
}
