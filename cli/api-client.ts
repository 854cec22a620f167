/**
 * A small client for the durable-sandbox HTTP API over global fetch: bearer auth, JSON in and
 * out, and every non-2xx answer turned into an {@link ApiCallError} with the API's code.
 */

/** Thrown for an error answer (code and message from the API's error body) or no answer. */
export class ApiCallError extends Error {
  /** What a person can do about it, when the command that called knows better than the code. */
  hint?: string;

  constructor(
    readonly code: string,
    message: string,
    /** HTTP status; 0 when the API could not be reached. */
    readonly status: number,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ApiCallError';
  }
}

/** A successful answer. */
export interface ApiResponse<T> {
  status: number;
  headers: Headers;
  body: T;
}

/** Where the API is and who calls it. */
export interface ApiClientOptions {
  /** Base URL, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  token: string;
  /** Default: global fetch. */
  fetch?: typeof fetch;
  /** Aborts every request in flight and every later one (Ctrl-C); they throw {@link Interrupted}. */
  signal?: AbortSignal;
}

/** Thrown by {@link ApiClient.call} once the client's signal has aborted (the user pressed Ctrl-C). */
export class Interrupted extends Error {
  constructor() {
    super('interrupted');
    this.name = 'Interrupted';
  }
}

/** Calls the API. */
export class ApiClient {
  private readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: ApiClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchImpl = options.fetch ?? fetch;
  }

  /**
   * Sends one request.
   * @param path starting with `/`, query included
   * @param body sent as JSON when given
   * @param headers extra request headers (e.g. `Idempotency-Key`), sent as given
   * @returns status, headers and the parsed JSON body of a 2xx answer
   * @throws ApiCallError with the API's error code for a non-2xx answer, `unavailable` (status
   *   0) when the API cannot be reached, `internal` when the answer is not JSON
   * @throws Interrupted when the client's signal aborts
   */
  async call<T>(
    method: string,
    path: string,
    body?: unknown,
    headers: Readonly<Record<string, string>> = {},
  ): Promise<ApiResponse<T>> {
    const url = `${this.baseUrl}${path}`;
    const signal = this.options.signal;
    if (signal?.aborted) throw new Interrupted();
    let response: Response;
    let text: string;
    try {
      response = await this.fetchImpl(url, {
        method,
        headers: {
          Authorization: `Bearer ${this.options.token}`,
          Accept: 'application/json',
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
      text = await response.text();
    } catch (err) {
      if (signal?.aborted) throw new Interrupted();
      const cause = (err as { cause?: { message?: string } }).cause?.message;
      throw new ApiCallError(
        'unavailable',
        `cannot reach ${this.baseUrl}: ${cause ?? (err as Error).message}`,
        0,
      );
    }
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      throw new ApiCallError(
        'internal',
        `${method} ${path} answered ${response.status} with a body that is not JSON`,
        response.status,
      );
    }
    if (!response.ok) {
      const error = (parsed as { error?: { code?: unknown; message?: unknown; details?: unknown } })
        ?.error;
      throw new ApiCallError(
        typeof error?.code === 'string' ? error.code : `http_${response.status}`,
        typeof error?.message === 'string'
          ? error.message
          : `${method} ${path} answered ${response.status}`,
        response.status,
        (error?.details as Record<string, unknown> | undefined) ?? {},
      );
    }
    return { status: response.status, headers: response.headers, body: parsed as T };
  }
}
