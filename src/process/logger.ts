/**
 * The process logger: pino JSON, one event per line, level from LOG_LEVEL; human-readable
 * only when stdout is a terminal and LOG_FORMAT is not `json`. A line written while the API
 * serves a request carries the request's `request_id` (src/process/request-context.ts). A failed
 * start is reported by src/process/startup-failure.ts (one plain line unless LOG_FORMAT=json).
 */
import { pino, type DestinationStream, type Logger } from 'pino';
import { isLogLevel } from '../config/log-level.js';
import { requestLogFields } from './request-context.js';

/**
 * Creates the root logger of a process. `name` is the process role (api, worker, stack).
 * @param destination where lines go (default stdout; tests pass a stream to read them)
 */
export function createLogger(
  name: string,
  requested = process.env.LOG_LEVEL ?? 'info',
  destination?: DestinationStream,
): Logger {
  // An unknown LOG_LEVEL would make pino throw before anything could say so: log at info, and
  // let loadConfig refuse it with a message naming the variable (src/config/index.ts).
  const level = isLogLevel(requested) ? requested : 'info';
  const pretty = !destination && process.stdout.isTTY && !jsonLogsRequested();
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

/**
 * Whether LOG_FORMAT asks for JSON lines everywhere (`json`): on a terminal too, and for a
 * failed start (src/process/startup-failure.ts). The production launchers set it.
 */
export function jsonLogsRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.LOG_FORMAT?.trim() === 'json';
}
