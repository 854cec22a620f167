/**
 * The search attributes a create upserts as it moves (docs/architecture.md, "The create path").
 * All Keyword, so the
 * Temporal UI can filter exactly, e.g. `FailureCode="invalid_request"`.
 * The dev server launcher registers the same list (environments/dev-server/dev-server.ts).
 * Workflow-safe (@temporalio/common only): the workflows upsert them, the API and the delete
 * starts set them, src/temporal/search-attributes.ts checks the namespace has them.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const SandboxIdKey = defineSearchAttributeKey('SandboxId', SearchAttributeType.KEYWORD);
export const TenantIdKey = defineSearchAttributeKey('TenantId', SearchAttributeType.KEYWORD);
export const TemplateKey = defineSearchAttributeKey('Template', SearchAttributeType.KEYWORD);
export const CreatePhaseKey = defineSearchAttributeKey('CreatePhase', SearchAttributeType.KEYWORD);
export const FailureCodeKey = defineSearchAttributeKey('FailureCode', SearchAttributeType.KEYWORD);

/**
 * The search attributes an operation on a sandbox starts with: its sandbox, tenant and
 * template; a create also its first phase, `creating_pod`.
 */
export function operationSearchAttributes(
  sandbox: { sandboxId: string; tenantId: string; template: string },
  operation: 'create' | 'delete',
) {
  return [
    { key: SandboxIdKey, value: sandbox.sandboxId },
    { key: TenantIdKey, value: sandbox.tenantId },
    { key: TemplateKey, value: sandbox.template },
    ...(operation === 'create' ? [{ key: CreatePhaseKey, value: 'creating_pod' }] : []),
  ];
}

/** Every key above, for registration: `--search-attribute Name=Keyword`. */
export const SEARCH_ATTRIBUTE_KEYS = [
  SandboxIdKey,
  TenantIdKey,
  TemplateKey,
  CreatePhaseKey,
  FailureCodeKey,
] as const;
