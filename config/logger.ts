/**
 * The process logger: pino JSON, one event per line, level from LOG_LEVEL; human-readable
 * only when stdout is a terminal.
 */
import { pino, type Logger } from 'pino';

/** Creates the root logger of a process. `name` is the process role (api, worker, stack). */
export function createLogger(name: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  const pretty = process.stdout.isTTY && process.env.LOG_FORMAT !== 'json';
  return pino({
    name,
    level,
    ...(pretty
      ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } }
      : {}),
  });
}
