/**
 * Entity tags of the resources a caller reads and waits on (docs/api.md, "Long-poll"): the
 * `ETag` a GET of an operation or a sandbox answers, and the `If-None-Match` a caller sends back
 * with the tag it last saw.
 *
 * The tag is a strong validator (RFC 9110 §8.8.1): a hash of the JSON the GET answers, so it
 * changes whenever any field the caller can see does, and two reads of an unchanged resource,
 * on any replica of one release, give the same tag. Nothing is stored for it.
 *
 * `If-None-Match` is read as RFC 9110 §13.1.2 says: `*` or a comma-separated list of entity
 * tags, compared with the weak comparison function (§8.8.3.2: `W/"x"` matches `"x"`); a member
 * that is not an entity tag is ignored.
 */
import { createHash } from 'node:crypto';

/** The condition of an `If-None-Match` header: `*`, or the opaque tags it lists. */
export type NoneMatchCondition = { any: true } | { any: false; opaqueTags: string[] };

/**
 * The strong entity tag of a JSON representation: `"` + the first 128 bits of its SHA-256, in
 * base64url + `"` (24 characters in all).
 * @param representation the body the GET answers, before JSON serialisation
 */
export function entityTagOf(representation: unknown): string {
  const digest = createHash('sha256').update(JSON.stringify(representation)).digest();
  return `"${digest.subarray(0, 16).toString('base64url')}"`;
}

/**
 * RFC 9110 §8.8.3: `entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE` (etagc: 0x21, 0x23-0x7E,
 * obs-text); found one after another, so a comma inside an opaque tag does not split it.
 */
const ENTITY_TAGS = /(?:W\/)?("[\x21\x23-\x7e\x80-\xff]*")/g;

/**
 * Parses an `If-None-Match` header.
 * @param header the header's value, as Node joins repeated headers (`, `); undefined when absent
 * @returns undefined when the header is absent or names no entity tag (the request is then
 *   unconditional: RFC 9110 §13.1.2, a recipient ignores a condition it cannot parse)
 */
export function parseIfNoneMatch(header: string | undefined): NoneMatchCondition | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === '*') return { any: true };
  const opaqueTags = [...header.matchAll(ENTITY_TAGS)].map((match) => match[1] as string);
  return opaqueTags.length > 0 ? { any: false, opaqueTags } : undefined;
}

/**
 * Whether the condition names the current representation (so a GET answers 304): `*` names any,
 * a list names it when one member's opaque tag equals the current one (weak comparison).
 * @param currentTag the resource's tag now ({@link entityTagOf}), with or without `W/`
 */
export function noneMatchFails(condition: NoneMatchCondition, currentTag: string): boolean {
  if (condition.any) return true;
  const current = currentTag.replace(/^W\//, '');
  return condition.opaqueTags.includes(current);
}
