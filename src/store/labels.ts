/**
 * A sandbox's labels in the store (migration 0018; docs/api.md, "Labels and filters"): the
 * JSON column `sandboxes.labels`, which answers carry, and `sandbox_labels`, one row per label,
 * which label selectors read. Both are written in one transaction, here.
 *
 * A selector's requirements become SQL with Kubernetes' meaning (contract/labels.ts
 * `requirementMatches`): `=`, `==`, `in`, `exists`, `gt`, `lt` are an EXISTS over the sandbox's
 * label rows (primary key (sandbox_id, key)); `!=`, `notin`, `!` the NOT EXISTS of the
 * positive form, so a sandbox without the key matches them, as in Kubernetes.
 */
import { sql, type Expression, type ExpressionBuilder, type Kysely, type SqlBool } from 'kysely';
import { numericLabelKey, type LabelRequirement, type Labels } from '../../contract/index.js';
import type { DialectName } from './database.js';
import type { Database } from './schema.js';

/** The `sandboxes.labels` column of a label map: null for none. */
export function labelsColumn(labels: Labels | undefined): string | null {
  return labels && Object.keys(labels).length > 0 ? JSON.stringify(labels) : null;
}

/** The labels of a `sandboxes.labels` column; none for null or anything unreadable. */
export function labelsOfColumn(raw: string | null | undefined): Record<string, string> {
  if (raw == null) return {};
  try {
    const parsed: unknown = JSON.parse(raw);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
    return Object.fromEntries(
      Object.entries(parsed as Record<string, unknown>).filter(
        (entry): entry is [string, string] => typeof entry[1] === 'string',
      ),
    );
  } catch {
    return {};
  }
}

/**
 * Inserts the label rows of a sandbox (one statement).
 * @param createdAt ISO-8601, the sandbox's created_at
 */
export async function insertLabelRows(
  db: Kysely<Database>,
  sandbox: { id: string; tenant: string; createdAt: string },
  labels: Labels,
): Promise<void> {
  const rows = Object.entries(labels).map(([key, value]) => ({
    sandbox_id: sandbox.id,
    tenant: sandbox.tenant,
    key,
    value,
    numeric_value: numericLabelKey(value) ?? null,
    created_at: sandbox.createdAt,
  }));
  if (rows.length === 0) return;
  await db.insertInto('sandbox_labels').values(rows).execute();
}

/**
 * Replaces a sandbox's labels: the column, its `updated_at`, and its label rows. Run inside the
 * caller's transaction.
 * @param now ISO-8601, the sandbox's new updated_at
 */
export async function replaceLabels(
  db: Kysely<Database>,
  sandbox: { id: string; tenant: string; createdAt: string },
  labels: Labels,
  now: string,
): Promise<void> {
  await db
    .updateTable('sandboxes')
    .set({ labels: labelsColumn(labels), updated_at: now })
    .where('id', '=', sandbox.id)
    .execute();
  await db.deleteFrom('sandbox_labels').where('sandbox_id', '=', sandbox.id).execute();
  await insertLabelRows(db, sandbox, labels);
}

/** Whether a requirement selects sandboxes that carry its key (the rest are negations). */
export function isPositive(requirement: LabelRequirement): boolean {
  return !['!=', 'notin', '!'].includes(requirement.operator);
}

/**
 * The condition on a sandbox row (`sandboxes.id`) of one requirement, with Kubernetes' meaning.
 */
export function requirementCondition(
  eb: ExpressionBuilder<Database, 'sandboxes'>,
  requirement: LabelRequirement,
  dialect: DialectName,
): Expression<SqlBool> {
  const { key, operator, values } = requirement;
  let rows = eb
    .selectFrom('sandbox_labels as l')
    .select(sql.lit(1).as('one'))
    .whereRef('l.sandbox_id', '=', 'sandboxes.id')
    .where('l.key', '=', key);
  switch (operator) {
    case '=':
    case '==':
    case 'in':
    case '!=':
    case 'notin':
      rows = rows.where('l.value', 'in', values);
      break;
    case 'gt':
    case 'lt': {
      const bound = numericLabelKey(values[0] ?? '');
      // The parser only passes int64 bounds; a bound that is none selects nothing.
      if (bound === undefined) return sql<SqlBool>`1 = 0`;
      rows = rows
        .where('l.numeric_value', 'is not', null)
        .where('l.numeric_value', operator === 'gt' ? '>' : '<', bound);
      break;
    }
    case 'exists':
    case '!':
      break;
  }
  // On PostgreSQL, OFFSET 0 keeps the subquery a per-row probe of the primary key (sandbox_id,
  // key): without it the planner may turn it into a semi-join that reads every row of the label
  // and sorts, where a page needs only the first rows of the driver's ordered index scan
  // (tools/bench/list.ts). SQLite probes per row anyway (and wants LIMIT before OFFSET).
  const probe = dialect === 'postgres' ? rows.offset(0) : rows;
  return isPositive(requirement) ? eb.exists(probe) : eb.not(eb.exists(probe));
}
