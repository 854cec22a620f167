/**
 * The process logger: pino JSON, one event per line, level from LOG_LEVEL; human-readable
 * only when stdout is a terminal. A line written while the API serves a request carries the
 * request's `request_id` (config/request-context.ts).
 */
import { pino, type DestinationStream, type Logger } from 'pino';
import { requestLogFields } from './request-context.js';

/**
 * Creates the root logger of a process. `name` is the process role (api, worker, stack).
 * @param destination where lines go (default stdout; tests pass a stream to read them)
 */
export function createLogger(
  name: string,
  level = process.env.LOG_LEVEL ?? 'info',
  destination?: DestinationStream,
): Logger {
  const pretty = !destination && process.stdout.isTTY && process.env.LOG_FORMAT !== 'json';
  const options = {
    name,
    level,
    mixin: requestLogFields,
    ...(pretty
      ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } }
      : {}),
  };
  return destination ? pino(options, destination) : pino(options);
}
