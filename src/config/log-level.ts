/**
 * LOG_LEVEL's values (docs/configuration.md): pino's level names and `silent`. Read by the
 * configuration, which refuses an unknown one, and by the process logger (src/process/logger.ts).
 */
import { pino } from 'pino';

/** pino's level names (`fatal` … `trace`) and `silent`, which LOG_LEVEL may name. */
export const LOG_LEVELS = [...Object.keys(pino.levels.values), 'silent'] as const;

/** Whether `level` is one of {@link LOG_LEVELS}. */
export function isLogLevel(level: string): boolean {
  return (LOG_LEVELS as readonly string[]).includes(level);
}
