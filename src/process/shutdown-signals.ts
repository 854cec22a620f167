/**
 * What SIGINT (Ctrl-C) and SIGTERM do to a long-running process (api, worker, npm start): the
 * first signal starts a graceful stop; a later one forces it, and the process exits at once with
 * 128 + the signal's number (the shell's convention: 130 for SIGINT, 143 for SIGTERM).
 *
 * One Ctrl-C under `npm run …` arrives twice within milliseconds: from the terminal, which
 * signals the whole process group, and from npm, which forwards it to its script
 * (@npmcli/run-script's signal manager). So a signal within {@link DUPLICATE_SIGNAL_WINDOW_MS}
 * of the first is that same request, not a second Ctrl-C.
 */
import { constants } from 'node:os';

/** How long after the first signal another one counts as the same request, in ms. */
export const DUPLICATE_SIGNAL_WINDOW_MS = 1_000;

/** Options of {@link onShutdownSignals}. */
export interface ShutdownSignalOptions {
  /** Starts the graceful stop; called once, on the first signal. */
  stop(signal: NodeJS.Signals): void;
  /** Called on a forced stop just before the process exits (e.g. to log it). */
  force?(signal: NodeJS.Signals): void;
  /** Default {@link DUPLICATE_SIGNAL_WINDOW_MS}. */
  duplicateWindowMs?: number;
}

/**
 * Listens for SIGINT and SIGTERM as the module header says.
 * @returns a function that removes the listeners
 */
export function onShutdownSignals(options: ShutdownSignalOptions): () => void {
  let firstAt: number | undefined;
  const window = options.duplicateWindowMs ?? DUPLICATE_SIGNAL_WINDOW_MS;
  const listener = (signal: NodeJS.Signals) => {
    if (firstAt === undefined) {
      firstAt = Date.now();
      options.stop(signal);
      return;
    }
    if (Date.now() - firstAt < window) return;
    options.force?.(signal);
    process.exit(128 + (constants.signals[signal] ?? 0));
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];
  for (const signal of signals) process.on(signal, listener);
  return () => {
    for (const signal of signals) process.off(signal, listener);
  };
}
