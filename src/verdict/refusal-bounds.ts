/**
 * What a believable refusal may claim (docs/architecture.md, "Rootfs floors"; docs/security.md,
 * "Refusal events and learned floors"). An event that passes src/verdict/refusal.ts's checks
 * (this pod's uid, reported by the kubelet of the pod's node) is still written by whoever may
 * create Events in the namespace, so what it says is bounded before it decides or teaches
 * anything:
 * - none of its times may lie in the future by more than {@link CLOCK_SKEW_ALLOWANCE_MS}
 *   (a floor's evidence is replaced only by newer evidence, so a far-future time would pin a
 *   floor for ever);
 * - the rootfs size a decisive refusal states may not exceed the largest disk the template
 *   allows (`max_disk_mib`, else {@link RESOURCE_LIMITS}.diskMib): such a floor would refuse
 *   every create of the template before 202. A floor is learned per image, so the bound is the
 *   smallest such disk over every catalog template of the pod's image: a refusal forged on a
 *   template with a large `max_disk_mib` may not teach a floor that refuses a smaller template
 *   sharing its image.
 * An event out of bounds decides nothing and teaches nothing; it is logged once.
 */
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { RESOURCE_LIMITS } from '../../contract/index.js';
import { POD_ANNOTATIONS } from '../kubernetes/pod-spec.js';
import { parseRootfsFloor, type ParsedRefusal } from './refusal.js';

/**
 * How far in the future an event's time may be, in ms (5 minutes): kubelet stamps events with
 * its own node's clock, and nodes drift from the worker's by seconds under NTP; five minutes is
 * Kerberos' customary skew allowance, far above NTP drift and far below a forged year 9999.
 */
export const CLOCK_SKEW_ALLOWANCE_MS = 5 * 60_000;

/** Distinct out-of-bounds events remembered so each is logged once (oldest forgotten first). */
const LOGGED_EVENTS_KEPT = 1_000;

/** The fields of a template this module reads (src/config/index.ts `TemplateConfig`). */
export interface BoundedTemplate {
  /** The template's container image: the key of its learned floor. */
  image?: string;
  /** The largest `disk_mib` a create of the template may ask for, in MiB. */
  max_disk_mib?: number;
}

/** The bound on the rootfs a refusal of a template's pod may state ({@link floorBoundOf}). */
export interface FloorBound {
  /** The bound, in MiB. */
  mib: number;
  /** The template whose largest disk sets the bound: the pod's own or one sharing its image. */
  template: string | undefined;
}

/** Where an out-of-bounds event is logged (a pino logger fits). */
export interface BoundsLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** Options of {@link RefusalBounds}. */
export interface RefusalBoundsOptions {
  /** The template catalog (name -> template); absent: every template has the global limit. */
  templates?: Readonly<Record<string, BoundedTemplate>>;
  /** Allowed clock skew, in ms (default {@link CLOCK_SKEW_ALLOWANCE_MS}). */
  clockSkewMs?: number;
  /** The clock, epoch ms (default `Date.now`). */
  now?: () => number;
  logger?: BoundsLogger;
}

/**
 * The largest disk a create of `template` may ask for, in MiB: the template's `max_disk_mib`,
 * else {@link RESOURCE_LIMITS}.diskMib.
 */
export function maxDiskMibOf(
  templates: Readonly<Record<string, BoundedTemplate>> | undefined,
  template: string | undefined,
): number {
  const own =
    template && templates && Object.hasOwn(templates, template) ? templates[template] : {};
  return own?.max_disk_mib ?? RESOURCE_LIMITS.diskMib;
}

/**
 * The largest rootfs a believable refusal of a `template` pod may state, in MiB: the smallest
 * {@link maxDiskMibOf} over the catalog's templates with the same image as `template` (itself
 * included), since the floor it teaches is the image's and refuses each of them. A template not
 * in the catalog is bounded by its own (the global) limit.
 */
export function floorBoundOf(
  templates: Readonly<Record<string, BoundedTemplate>> | undefined,
  template: string | undefined,
): FloorBound {
  let bound: FloorBound = { mib: maxDiskMibOf(templates, template), template };
  const image =
    template && templates && Object.hasOwn(templates, template)
      ? templates[template]?.image
      : undefined;
  if (!image || !templates) return bound;
  for (const [name, other] of Object.entries(templates)) {
    const mib = other.max_disk_mib ?? RESOURCE_LIMITS.diskMib;
    if (other.image === image && mib < bound.mib) bound = { mib, template: name };
  }
  return bound;
}

/**
 * Every time an event states, epoch ms: `lastTimestamp`, `firstTimestamp`, `eventTime` and
 * `series.lastObservedTime` (a core/v1 event written through events.k8s.io/v1 carries the last
 * two; kubelet's legacy recorder the first two). Unparseable or absent times are left out.
 */
export function eventTimesMs(event: CoreV1Event): number[] {
  const values: unknown[] = [
    event.lastTimestamp,
    event.firstTimestamp,
    event.eventTime,
    event.series?.lastObservedTime,
  ];
  return values.flatMap((value) => {
    if (!value) return [];
    const ms = value instanceof Date ? value.getTime() : Date.parse(String(value));
    return Number.isFinite(ms) ? [ms] : [];
  });
}

/** The bounds a worker holds refusal events to; one per process. */
export class RefusalBounds {
  private readonly logged = new Set<string>();
  /** Template -> its floor bound; the catalog of the options does not change. */
  private readonly floorBounds = new Map<string, FloorBound>();

  constructor(private readonly options: RefusalBoundsOptions = {}) {}

  /** The allowed clock skew, in ms. */
  get clockSkewMs(): number {
    return this.options.clockSkewMs ?? CLOCK_SKEW_ALLOWANCE_MS;
  }

  /**
   * {@link floorBoundOf} of the options' catalog, computed once per catalog template (a worker's
   * catalog does not change while it runs).
   */
  private floorBound(template: string | undefined): FloorBound {
    const { templates } = this.options;
    // Only the catalog's templates are kept: a pod's annotation could name anything.
    if (!template || !templates || !Object.hasOwn(templates, template)) {
      return floorBoundOf(templates, template);
    }
    let bound = this.floorBounds.get(template);
    if (!bound) {
      bound = floorBoundOf(templates, template);
      this.floorBounds.set(template, bound);
    }
    return bound;
  }

  /**
   * Why an event that counts for `pod` is out of bounds, or undefined when it is within them.
   * `refusal` is the event's parsed refusal; its stated rootfs size is checked only when it is
   * decisive (the only refusal that teaches a floor). Logs each out-of-bounds event once (a
   * warning with the event, pod and reason). Never throws.
   */
  outOfBounds(event: CoreV1Event, pod: V1Pod, refusal: ParsedRefusal): string | undefined {
    const why = this.check(event, pod, refusal);
    if (why) this.log(event, pod, why);
    return why;
  }

  private check(event: CoreV1Event, pod: V1Pod, refusal: ParsedRefusal): string | undefined {
    const now = (this.options.now ?? Date.now)();
    const latest = Math.max(...eventTimesMs(event));
    if (latest > now + this.clockSkewMs) {
      return (
        `the event's time ${new Date(latest).toISOString()} is more than ` +
        `${this.clockSkewMs / 1000} s in the future`
      );
    }
    if (!refusal.decisive) return undefined;
    const claimed = parseRootfsFloor(refusal.reason);
    const template = pod.metadata?.annotations?.[POD_ANNOTATIONS.template];
    const bound = this.floorBound(template);
    if (claimed !== undefined && claimed > bound.mib) {
      const sibling =
        bound.template === template ? '' : ` (it shares its image with ${template ?? '(unknown)'})`;
      return (
        `the refusal claims a rootfs of ${claimed} MiB, above the largest disk template ` +
        `${bound.template ?? '(unknown)'} allows (${bound.mib} MiB)${sibling}`
      );
    }
    return undefined;
  }

  private log(event: CoreV1Event, pod: V1Pod, why: string): void {
    const key = `${event.metadata?.uid ?? event.metadata?.name}/${event.metadata?.resourceVersion}`;
    if (this.logged.has(key)) return;
    if (this.logged.size >= LOGGED_EVENTS_KEPT) {
      const oldest = this.logged.values().next().value;
      if (oldest !== undefined) this.logged.delete(oldest);
    }
    this.logged.add(key);
    this.options.logger?.warn(
      {
        event: event.metadata?.name,
        pod_name: pod.metadata?.name,
        pod_uid: pod.metadata?.uid,
        node_name: pod.spec?.nodeName,
        reason: why,
      },
      'a refusal event is out of bounds; it decides nothing and teaches nothing',
    );
  }
}

/** Bounds with the defaults and no logger: the global disk limit, 5 minutes of skew. */
export const DEFAULT_REFUSAL_BOUNDS = new RefusalBounds();
