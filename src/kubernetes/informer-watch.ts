/**
 * The watch request under a worker's informers: client-node's `Watch`, with what its
 * `ListWatch` does not send and what its `Watch` does not keep (docs/architecture.md, "The
 * readiness watch").
 *
 * Why this wraps `Watch` (and only `watch()`): client-node 2.0.1's `ListWatch` passes only
 * resourceVersion and the selectors to the watch, and its `Watch` turns a non-2xx answer into
 * an Error holding nothing but the status. So this subclass, handed to `ListWatch` in place of
 * `Watch`, (1) asks for bookmarks (`allowWatchBookmarks=true`) so a quiet resource's version
 * keeps moving and a resumed watch is not answered 410 (which would cost a LIST), (2) sends a
 * `timeoutSeconds` under client-node's 30 s idle cut, so the apiserver ends a quiet stream
 * cleanly (with a bookmark) before the client cuts it, (3) keeps the status, `Retry-After` and
 * the Status message of a refused request ({@link WatchRequestError}), (4) turns an in-stream
 * ERROR other than 410 into the end of the stream with that status (ListWatch would ignore it
 * and re-open at once), and (5) never rejects: ListWatch calls `watch()` from a callback whose
 * promise nobody awaits, so a rejection would be unhandled; every failure goes to `done`.
 * The request itself is client-node's: same URL building, authentication and dispatcher.
 */
import { STATUS_CODES } from 'node:http';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { fetch } from 'undici';
import { HttpMethod, type KubeConfig, RequestContext, Watch } from '@kubernetes/client-node';

/** client-node's `Watch` idle cut, in ms: a stream silent this long is aborted (TimeoutError). */
export const CLIENT_IDLE_CUT_MS = 30_000;

/** A watch request the apiserver answered with a non-2xx status. */
export class WatchRequestError extends Error {
  /** @param statusMessage the Status body's `message` (e.g. who may not watch what) */
  constructor(
    readonly statusCode: number,
    readonly statusMessage: string | undefined,
    readonly retryAfterMs: number | undefined,
  ) {
    super(statusMessage || STATUS_CODES[statusCode] || `HTTP ${statusCode}`);
    this.name = 'WatchRequestError';
  }
}

/** Hooks for metrics and logs. */
export interface InformerWatchObserver {
  /** A watch request is about to be sent; `cause` says why (`initial`, `ended`, `status-410`, …). */
  onOpen?(cause: string): void;
  /** A stream was established (`open` true, HTTP 200) or has closed (`open` false). */
  onStream?(open: boolean): void;
}

/** Options of {@link InformerWatch}. */
export interface InformerWatchOptions {
  /** `timeoutSeconds` sent with every watch (under {@link CLIENT_IDLE_CUT_MS}). */
  timeoutSeconds: number;
  observer?: InformerWatchObserver;
}

type Done = (err: unknown) => void;
type Callback = (phase: string, apiObj: any, watchObj?: any) => void; // eslint-disable-line @typescript-eslint/no-explicit-any

/** `Watch` with bookmarks, a server-side timeout and refusals that keep their answer. */
export class InformerWatch extends Watch {
  private nextCause = 'initial';

  constructor(
    config: KubeConfig,
    private readonly options: InformerWatchOptions,
  ) {
    super(config);
  }

  /**
   * Opens one watch stream. Same contract as `Watch.watch`, except that it never rejects.
   * @returns the stream's AbortController (already aborted when the request failed)
   */
  override async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: Callback,
    done: Done,
  ): Promise<AbortController> {
    const controller = new AbortController();
    let finished = false;
    let streamOpen = false;
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const finish = (err: unknown): void => {
      if (finished) return;
      finished = true;
      if (timer) clearTimeout(timer);
      if (streamOpen) this.options.observer?.onStream?.(false);
      controller.abort();
      const ended = timedOut
        ? new DOMException('The operation was aborted due to timeout', 'TimeoutError')
        : err;
      this.nextCause = causeOf(ended);
      done(ended);
    };
    const resetTimer = (): void => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, CLIENT_IDLE_CUT_MS);
      timer.unref();
    };
    this.options.observer?.onOpen?.(this.nextCause);
    try {
      const cluster = this.config.getCurrentCluster();
      if (!cluster) throw new Error('No currently active cluster');
      const url = new URL(cluster.server + path);
      url.searchParams.set('watch', 'true');
      url.searchParams.set('allowWatchBookmarks', 'true');
      url.searchParams.set('timeoutSeconds', String(this.options.timeoutSeconds));
      for (const [key, value] of Object.entries(queryParams)) {
        if (value !== undefined) url.searchParams.set(key, String(value));
      }
      const context = new RequestContext(url.toString(), HttpMethod.GET);
      await this.config.applySecurityAuthentication(context);
      resetTimer();
      const response = await fetch(url, {
        method: 'GET',
        headers: context.getHeaders(),
        dispatcher: context.getDispatcher(),
        signal: controller.signal,
      });
      if (response.status !== 200 || !response.body) {
        const text = await response.text().catch(() => '');
        throw new WatchRequestError(
          response.status,
          statusMessageOf(text),
          retryAfterMs(response.headers.get('retry-after')),
        );
      }
      resetTimer();
      streamOpen = true;
      this.options.observer?.onStream?.(true);
      const body = Readable.fromWeb(response.body as import('node:stream/web').ReadableStream);
      body.on('data', resetTimer);
      body.on('error', finish);
      const lines = createInterface(body);
      lines.on('error', finish); // readline re-emits the body's error (an abort): never unhandled
      lines.on('line', (line) => {
        if (finished) return;
        let frame: { type?: string; object?: { code?: number; message?: string } };
        try {
          frame = JSON.parse(line) as typeof frame;
        } catch {
          return; // as client-node: a line that is not JSON is skipped
        }
        if (frame.type === 'ERROR' && frame.object?.code !== 410) {
          const status = frame.object?.code ?? 500;
          finish(new WatchRequestError(status, frame.object?.message, undefined));
          return;
        }
        callback(frame.type ?? '', frame.object, frame);
      });
      lines.on('close', () => finish(null));
    } catch (err) {
      finish(err);
    }
    return controller;
  }
}

/** Why the next watch is opened, from how the last one ended (for the opens metric). */
function causeOf(err: unknown): string {
  if (err === null || err === undefined) return 'ended';
  if ((err as { name?: string }).name === 'TimeoutError') return 'timeout';
  const status = (err as { statusCode?: unknown }).statusCode;
  return typeof status === 'number' ? `status-${status}` : 'dropped';
}

function statusMessageOf(text: string): string | undefined {
  try {
    const status = JSON.parse(text) as { message?: unknown };
    return typeof status.message === 'string' ? status.message : undefined;
  } catch {
    return undefined;
  }
}

function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}
