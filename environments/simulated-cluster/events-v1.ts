/**
 * events.k8s.io/v1 Event creation on the simulated apiserver, as kube-apiserver does it: the
 * request is validated (pkg/apis/core/validation/events.go `ValidateEventCreate`, the strict rules
 * for events.k8s.io/v1 and newer), converted to the core Event it is stored as
 * (pkg/apis/events/v1/conversion.go `Convert_v1_Event_To_core_Event`: `regarding` ->
 * `involvedObject`, `note` -> `message`, `deprecatedSource` -> `source`, `deprecated*` ->
 * `firstTimestamp`/`lastTimestamp`/`count`, `reportingController` -> `reportingComponent`, the
 * rest by name), and answered in the events.k8s.io/v1 shape. So a core/v1 watcher (the service's
 * events informer) sees it exactly as it would see it from a real apiserver.
 */
import { ApiError, status as makeStatus } from './status.js';
import type { KubeObject } from './store.js';

type Json = Record<string, unknown>;

/** The path of the collection, split: `apis/events.k8s.io/v1/namespaces/<ns>/events`. */
export function eventsV1Namespace(segments: string[]): string | undefined {
  const [apis, group, version, namespaces, namespace, resource, ...rest] = segments;
  const matches =
    apis === 'apis' &&
    group === 'events.k8s.io' &&
    version === 'v1' &&
    namespaces === 'namespaces' &&
    resource === 'events' &&
    rest.length === 0;
  return matches ? namespace : undefined;
}

/** Unset as Go's zero values are: absent, null, '' or 0. */
function isSet(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '' && value !== 0;
}

/**
 * The field errors kube-apiserver's `ValidateEventCreate` finds in an events.k8s.io/v1 create
 * (after conversion: `deprecatedSource` is `source`, which must be unset), as `field: message`.
 */
function validationErrors(body: Json): string[] {
  const errors: string[] = [];
  if (!isSet(body.eventTime)) errors.push('eventTime: Required value');
  if (body.type !== 'Normal' && body.type !== 'Warning') {
    errors.push(`type: Invalid value: "": has invalid value: ${String(body.type ?? '')}`);
  }
  if (isSet(body.deprecatedFirstTimestamp)) errors.push('firstTimestamp: needs to be unset');
  if (isSet(body.deprecatedLastTimestamp)) errors.push('lastTimestamp: needs to be unset');
  if (isSet(body.deprecatedCount)) errors.push('count: needs to be unset');
  const source = (body.deprecatedSource ?? {}) as Json;
  if (isSet(source.component) || isSet(source.host)) errors.push('source: needs to be unset');
  if (!isSet(body.reportingController)) errors.push('reportingController: Required value');
  const instance = typeof body.reportingInstance === 'string' ? body.reportingInstance : '';
  if (!instance) errors.push('reportingInstance: Required value');
  if (instance.length > 128) errors.push('reportingInstance: can have at most 128 characters');
  if (!isSet(body.action)) errors.push('action: Required value');
  if (!isSet(body.reason)) errors.push('reason: Required value');
  if (typeof body.note === 'string' && body.note.length > 1024) {
    errors.push('message: can have at most 1024 characters');
  }
  return errors;
}

/**
 * The core/v1 Event an events.k8s.io/v1 create body is stored as (uid, resourceVersion and
 * creationTimestamp are assigned by the store).
 * @throws ApiError 400 without a body or for another namespace in the body; 422 Invalid with the
 *   apiserver's field errors
 */
export function coreEventFromV1(namespace: string, body: Json | undefined): KubeObject {
  if (!body) throw new ApiError(makeStatus(400, 'the body of the request is required'));
  const metadata = { ...((body.metadata as Json | undefined) ?? {}) };
  if (metadata.namespace !== undefined && metadata.namespace !== namespace) {
    throw new ApiError(
      makeStatus(
        400,
        'the namespace of the provided object does not match the namespace sent on the request',
      ),
    );
  }
  const name = typeof metadata.name === 'string' ? metadata.name : '';
  const errors = [...(name ? [] : ['metadata.name: Required value']), ...validationErrors(body)];
  if (errors.length > 0) {
    throw new ApiError(
      makeStatus(422, `Event.events.k8s.io "${name}" is invalid: ${errors.join(', ')}`, {
        kind: 'events',
      }),
    );
  }
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: {
      ...metadata,
      name,
      namespace,
      uid: '',
      resourceVersion: '',
      creationTimestamp: '',
    },
    involvedObject: body.regarding ?? {},
    related: body.related,
    reason: body.reason,
    message: body.note ?? '',
    source: (body.deprecatedSource as Json | undefined) ?? {},
    firstTimestamp: body.deprecatedFirstTimestamp ?? null,
    lastTimestamp: body.deprecatedLastTimestamp ?? null,
    count: body.deprecatedCount ?? 0,
    type: body.type,
    eventTime: body.eventTime,
    series: body.series,
    action: body.action,
    reportingComponent: body.reportingController,
    reportingInstance: body.reportingInstance,
  };
}

/** A stored core Event in the events.k8s.io/v1 shape (`Convert_core_Event_To_v1_Event`). */
export function v1EventFromCore(event: KubeObject): Json {
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: event.metadata,
    eventTime: event.eventTime,
    series: event.series,
    reportingController: event.reportingComponent,
    reportingInstance: event.reportingInstance,
    action: event.action,
    reason: event.reason,
    regarding: event.involvedObject,
    related: event.related,
    note: event.message,
    type: event.type,
    deprecatedSource: event.source,
    deprecatedFirstTimestamp: event.firstTimestamp,
    deprecatedLastTimestamp: event.lastTimestamp,
    deprecatedCount: event.count,
  };
}
