/**
 * Checks that the Temporal namespace has the custom search attributes the workflows use
 * (src/temporal/search-attribute-keys.ts, names and types). Without them Temporal refuses a workflow
 * start that sets them, and an upsert of a missing one fails every workflow task (docs/api.md,
 * "Readiness"). Both processes run this check at start and in their readiness checks.
 */
import { SEARCH_ATTRIBUTE_KEYS } from './search-attribute-keys.js';

/** What the check needs: the operator service of a Client's or a Worker's connection. */
export interface OperatorServiceLike {
  operatorService: {
    listSearchAttributes(request: {
      namespace: string;
    }): Promise<{ customAttributes?: Record<string, number> | null }>;
  };
}

/**
 * `temporal.api.enums.v1.IndexedValueType` -> the type name the Temporal CLI and the SDK use
 * (`--type Keyword`, SearchAttributeType.KEYWORD = 'KEYWORD').
 */
const INDEXED_VALUE_TYPES: Record<number, string> = {
  1: 'TEXT',
  2: 'KEYWORD',
  3: 'INT',
  4: 'DOUBLE',
  5: 'BOOL',
  6: 'DATETIME',
  7: 'KEYWORD_LIST',
};

/** Result of {@link checkSearchAttributes}. */
export interface SearchAttributeReport {
  /** Names registered with the expected type: the ones the workflows may upsert. */
  registered: string[];
  /** Expected attributes the namespace lacks. */
  missing: string[];
  /** Expected attributes registered with another type (`SandboxId: TEXT, expected KEYWORD`). */
  wrongType: string[];
  /** A message naming what is wrong and the command that fixes it; undefined when all is well. */
  problem?: string;
}

/**
 * Lists the namespace's custom search attributes and compares them with the workflows' list.
 * @param namespace the Temporal namespace (TEMPORAL_NAMESPACE)
 * @param address the Temporal frontend's `host:port`, for the command in the message
 * @throws the client's error when Temporal does not answer
 */
export async function checkSearchAttributes(
  connection: OperatorServiceLike,
  namespace: string,
  address?: string,
): Promise<SearchAttributeReport> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({
    namespace,
  });
  const registered: string[] = [];
  const missing: string[] = [];
  const wrongType: string[] = [];
  for (const key of SEARCH_ATTRIBUTE_KEYS) {
    const type = customAttributes?.[key.name];
    if (type === undefined || type === null) missing.push(key.name);
    else if (INDEXED_VALUE_TYPES[type] !== key.type) {
      wrongType.push(`${key.name}: ${INDEXED_VALUE_TYPES[type] ?? type}, expected ${key.type}`);
    } else registered.push(key.name);
  }
  const report: SearchAttributeReport = { registered, missing, wrongType };
  if (missing.length > 0 || wrongType.length > 0) {
    report.problem = searchAttributeProblem(report, namespace, address);
  }
  return report;
}

/** The message of a namespace that lacks attributes: what is wrong and how to register them. */
function searchAttributeProblem(
  report: SearchAttributeReport,
  namespace: string,
  address: string | undefined,
): string {
  const parts: string[] = [];
  if (report.missing.length > 0) {
    const names = report.missing.map((name) => `--name ${name}`).join(' ');
    parts.push(
      `the Temporal namespace "${namespace}" lacks the search attributes ` +
        `${report.missing.join(', ')}; register them with: temporal operator search-attribute ` +
        `create${address ? ` --address ${address}` : ''} --namespace ${namespace} ${names} ` +
        `--type Keyword`,
    );
  }
  if (report.wrongType.length > 0) {
    parts.push(
      `the Temporal namespace "${namespace}" has search attributes of the wrong type ` +
        `(${report.wrongType.join('; ')}); remove and re-create them as Keyword`,
    );
  }
  return parts.join('; ');
}
