/**
 * Kubernetes `Status` objects, the body of every error the simulated apiserver returns, with
 * the real apiserver's reason names (k8s.io/apimachinery/pkg/apis/meta/v1 `StatusReason`).
 */

/** A `meta/v1` Status as the apiserver sends it for a failed request or an in-stream watch ERROR. */
export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: string;
  code: number;
  details?: StatusDetails;
}

/** `Status.details`: which object the failure is about. */
export interface StatusDetails {
  name?: string;
  kind?: string;
  retryAfterSeconds?: number;
}

/** HTTP status code -> the apiserver's `reason` for it. Codes not listed get reason "". */
export const REASON_BY_CODE: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Expired',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/**
 * Builds a Status.
 * @param code HTTP status code; also picks the reason unless `reason` is given
 */
export function status(
  code: number,
  message: string,
  details?: StatusDetails,
  reason?: string,
): Status {
  const body: Status = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: reason ?? REASON_BY_CODE[code] ?? '',
    code,
  };
  if (details) body.details = details;
  return body;
}

/** Thrown inside request handling; the server answers with `status` as the body and `status.code` as the HTTP status. */
export class ApiError extends Error {
  constructor(readonly status: Status) {
    super(status.message);
    this.name = 'ApiError';
  }
}

/** 404 `<resource> "<name>" not found`, as the apiserver words it. */
export function notFound(resource: string, name: string): ApiError {
  return new ApiError(status(404, `${resource} "${name}" not found`, { name, kind: resource }));
}

/** 409 AlreadyExists `<resource> "<name>" already exists`. */
export function alreadyExists(resource: string, name: string): ApiError {
  return new ApiError(
    status(409, `${resource} "${name}" already exists`, { name, kind: resource }, 'AlreadyExists'),
  );
}

/**
 * 409 Conflict for a failed delete precondition, worded as kube-apiserver's `rest.BeforeDelete`
 * words it (the Kind, not the resource, names the object), e.g. `Operation cannot be fulfilled
 * on Pod "p": the UID in the precondition (a) does not match the UID in record (b). The object
 * might have been deleted and then recreated` (checked against a real apiserver in
 * test/real-apiserver.test.ts).
 * @param kind e.g. `Pod`
 */
export function preconditionFailed(kind: string, name: string, detail: string): ApiError {
  return new ApiError(
    status(409, `Operation cannot be fulfilled on ${kind} "${name}": ${detail}`, { name, kind }),
  );
}

/** 400 BadRequest with the given message. */
export function badRequest(message: string): ApiError {
  return new ApiError(status(400, message));
}

/** 410 Expired, as sent in-stream for a watch whose resourceVersion is older than the kept history. */
export function tooOldResourceVersion(requested: number, oldest: number): Status {
  return status(410, `too old resource version: ${requested} (${oldest})`);
}

/**
 * The Status a scripted fault answers with, worded like the apiserver for the common codes.
 * @param verb Kubernetes verb of the request (`watch`, `list`, `delete`, ...)
 */
export function faultStatus(
  code: number,
  verb: string,
  resource: string,
  namespace: string | undefined,
  name = '',
): Status {
  const scope =
    namespace === undefined ? 'at the cluster scope' : `in the namespace "${namespace}"`;
  switch (code) {
    case 401:
      return status(401, 'Unauthorized');
    case 403:
      return status(
        403,
        `${resource} is forbidden: User "simulated" cannot ${verb} resource "${resource}" in API group "" ${scope}`,
        { kind: resource },
      );
    case 404:
      // A create in a namespace that does not exist, as kube-apiserver words it.
      if (verb === 'create' && namespace !== undefined) {
        return status(404, `namespaces "${namespace}" not found`, {
          name: namespace,
          kind: 'namespaces',
        });
      }
      return status(404, 'the server could not find the requested resource');
    case 410:
      return status(410, 'The resourceVersion for the provided watch is too old.');
    case 422:
      return status(
        422,
        `Pod "${name}" is invalid: spec.containers[0].resources.requests: Invalid value: "2": ` +
          'must be less than or equal to cpu limit of 1',
        { name, kind: 'Pod' },
      );
    case 429:
      return status(429, 'Too many requests, please try again later.', { retryAfterSeconds: 1 });
    case 500:
      return status(500, 'Internal error occurred: simulated fault');
    case 503:
      return status(503, 'The server is currently unable to handle the request (simulated fault)');
    case 504:
      return status(504, 'Timeout: request did not complete within the allowed duration');
    default:
      return status(code, `simulated fault ${code}`);
  }
}

/**
 * 403 Forbidden of the LimitRanger admission for a container over the LimitRange's maximum, as
 * kube-apiserver words it: `pods "p" is forbidden: maximum ephemeral-storage usage per
 * Container is 2Gi, but limit is 3000Mi`.
 */
export function limitRangeForbidden(name: string, resource: string, max: string, limit: string) {
  return new ApiError(
    status(
      403,
      `pods "${name}" is forbidden: maximum ${resource} usage per Container is ${max}, but limit is ${limit}`,
      { name, kind: 'pods' },
    ),
  );
}

/**
 * 403 Forbidden of the ResourceQuota admission, as kube-apiserver words it: `pods "p" is
 * forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`.
 */
export function quotaForbidden(name: string, quota: string, used: number, limited: number) {
  return new ApiError(
    status(
      403,
      `pods "${name}" is forbidden: exceeded quota: ${quota}, requested: pods=1, used: pods=${used}, limited: pods=${limited}`,
      { name, kind: 'pods' },
    ),
  );
}
