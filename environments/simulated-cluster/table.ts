/**
 * Server-side printing: the `meta.k8s.io/v1` Table that kubectl asks for with
 * `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, with the columns the real apiserver
 * prints for pods and events (pkg/printers/internalversion), so `kubectl get pods,events`
 * and `kubectl get -w` look as they do against a real cluster.
 */
import type { KubeObject, WatchedResource } from './store.js';

interface ColumnDefinition {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

/** What a Table row carries as `object` (query parameter `includeObject`, default Metadata). */
export type IncludeObject = 'None' | 'Metadata' | 'Object';

/** A `meta.k8s.io/v1` Table. */
export interface Table {
  kind: 'Table';
  apiVersion: 'meta.k8s.io/v1';
  metadata: { resourceVersion?: string };
  columnDefinitions: ColumnDefinition[];
  rows: Array<{ cells: unknown[]; object?: unknown }>;
}

function column(name: string, type: string, description: string, priority = 0): ColumnDefinition {
  return { name, type, format: name === 'Name' ? 'name' : '', description, priority };
}

const COLUMNS: Record<WatchedResource, ColumnDefinition[]> = {
  pods: [
    column('Name', 'string', 'Name must be unique within a namespace.'),
    column('Ready', 'string', 'The aggregate readiness state of this pod for accepting traffic.'),
    column('Status', 'string', 'The aggregate status of the containers in this pod.'),
    column(
      'Restarts',
      'string',
      'The number of times the containers in this pod have been restarted.',
    ),
    column(
      'Age',
      'string',
      'CreationTimestamp is a timestamp representing the server time when this object was created.',
    ),
    column('IP', 'string', 'IP address allocated to the pod.', 1),
    column('Node', 'string', 'Name of the Node this pod is assigned to.', 1),
  ],
  events: [
    column('Last Seen', 'string', 'Time when this Event was last seen.'),
    column('Type', 'string', 'Type of this event (Normal, Warning).'),
    column(
      'Reason',
      'string',
      'Short, machine understandable string that gives the reason for this event.',
    ),
    column('Object', 'string', 'The object that this event is about.'),
    column('Subobject', 'string', 'The field of the object this event is about.', 1),
    column('Source', 'string', 'The component reporting this event.', 1),
    column('Message', 'string', 'A human-readable description of the status of this operation.'),
    column('First Seen', 'string', 'The time at which the event was first recorded.', 1),
    column('Count', 'string', 'The number of times this event has occurred.', 1),
    column('Name', 'string', 'Name must be unique within a namespace.', 1),
  ],
};

/** Kubernetes' HumanDuration ("5s", "3m20s", "2h", "4d") for the time since `timestamp`. */
export function age(timestamp: unknown, now: number = Date.now()): string {
  if (typeof timestamp !== 'string') return '<unknown>';
  const seconds = Math.max(0, Math.floor((now - Date.parse(timestamp)) / 1000));
  if (Number.isNaN(seconds)) return '<unknown>';
  const minutes = Math.floor(seconds / 60);
  const hours = Math.floor(minutes / 60);
  const days = Math.floor(hours / 24);
  if (seconds < 120) return `${seconds}s`;
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (hours < 3) return `${minutes}m`;
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (days < 8) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`;
  return `${days}d`;
}

type Json = Record<string, unknown>;
const obj = (value: unknown): Json =>
  value !== null && typeof value === 'object' ? (value as Json) : {};

function podCells(pod: KubeObject): unknown[] {
  const spec = obj(pod.spec);
  const status = obj(pod.status);
  const containers = Array.isArray(spec.containers) ? spec.containers.length : 0;
  const statuses = Array.isArray(status.containerStatuses) ? status.containerStatuses.map(obj) : [];
  const ready = statuses.filter((s) => s.ready === true).length;
  const restarts = statuses.reduce((sum, s) => sum + (Number(s.restartCount) || 0), 0);
  let phase = String(status.reason ?? status.phase ?? 'Pending');
  if (phase === 'Pending' && typeof spec.nodeName === 'string') phase = 'ContainerCreating';
  return [
    pod.metadata.name,
    `${ready}/${containers}`,
    phase,
    String(restarts),
    age(pod.metadata.creationTimestamp),
    status.podIP ?? '<none>',
    spec.nodeName ?? '<none>',
  ];
}

function eventCells(event: KubeObject): unknown[] {
  const involved = obj(event.involvedObject);
  const source = obj(event.source);
  const kind = String(involved.kind ?? '').toLowerCase();
  return [
    age(event.lastTimestamp ?? event.metadata.creationTimestamp),
    event.type ?? '',
    event.reason ?? '',
    `${kind}/${String(involved.name ?? '')}`,
    involved.fieldPath ?? '',
    [source.component, source.host].filter(Boolean).join(', '),
    String(event.message ?? '').trim(),
    age(event.firstTimestamp ?? event.metadata.creationTimestamp),
    String(event.count ?? 1),
    event.metadata.name,
  ];
}

function rowObject(object: KubeObject, include: IncludeObject): unknown {
  if (include === 'None') return undefined;
  if (include === 'Object') return object;
  return {
    kind: 'PartialObjectMetadata',
    apiVersion: 'meta.k8s.io/v1',
    metadata: object.metadata,
  };
}

/** True when the Accept header asks for server-side printing. */
export function wantsTable(accept: string | undefined): boolean {
  return accept !== undefined && /as=Table/.test(accept);
}

/**
 * Prints objects of one resource as a Table.
 * @param resourceVersion the list's resourceVersion, when printing a list
 */
export function toTable(
  resource: WatchedResource,
  objects: KubeObject[],
  include: IncludeObject,
  resourceVersion?: string,
): Table {
  const cells = resource === 'pods' ? podCells : eventCells;
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: resourceVersion === undefined ? {} : { resourceVersion },
    columnDefinitions: COLUMNS[resource],
    rows: objects.map((object) => {
      const row: { cells: unknown[]; object?: unknown } = { cells: cells(object) };
      const carried = rowObject(object, include);
      if (carried !== undefined) row.object = carried;
      return row;
    }),
  };
}

/** Reads the `includeObject` query parameter (default Metadata, like the apiserver). */
export function includeObject(value: string | undefined): IncludeObject {
  return value === 'None' || value === 'Object' ? value : 'Metadata';
}
