/**
 * Logging to the extension's output channel ("cctest"), shared with the language client so the
 * server's stderr and window/logMessage lines appear next to the extension's own.
 */

/** What `vscode.LogOutputChannel` offers; tests pass an array-backed logger. */
export interface Logger {
  trace(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string | Error): void;
}

let current: Logger | undefined;

export function setLogger(logger: Logger | undefined): void {
  current = logger;
}

export function logInfo(message: string): void {
  current?.info(message);
}

export function logWarn(message: string): void {
  current?.warn(message);
}

export function logError(message: string | Error): void {
  current?.error(message);
}

export function logTrace(message: string): void {
  current?.trace(message);
}
