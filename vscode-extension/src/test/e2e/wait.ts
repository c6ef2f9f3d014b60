/**
 * The end-to-end test's waits: each is for an event, and its limit is a guard against a hang, not
 * a window sized for a quiet machine.
 */
import { watch } from 'node:fs';
import * as path from 'node:path';

/** Probe until `probe` finds what it looks for (every 250 ms), at most `guardMs`: a hang guard. */
export async function waitFor<T>(what: string, guardMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + guardMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await probe();
      if (v !== undefined) {
        return v;
      }
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out after ${guardMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
}

/**
 * Wait until `probe` finds what it looks for in `file` (the defect log): probed now and again on
 * each change of the files whose names start with its name (every SQLite commit reaches the
 * write-ahead log beside it), and every `pollMs` in case a change notice is missed; at most
 * `guardMs`, a hang guard.
 */
export async function waitForFile<T>(
  what: string,
  file: string,
  guardMs: number,
  probe: () => Promise<T | undefined>,
  pollMs = 5000,
): Promise<T> {
  const name = path.basename(file);
  let changed = false;
  let wake: () => void = () => undefined;
  const watcher = watch(path.dirname(file), (_event, changedName) => {
    if (!changedName || String(changedName).startsWith(name)) {
      changed = true;
      wake();
    }
  });
  const end = Date.now() + guardMs;
  let last: unknown;
  try {
    while (Date.now() < end) {
      changed = false;
      try {
        const v = await probe();
        if (v !== undefined) {
          return v;
        }
      } catch (err) {
        last = err;
      }
      if (!changed) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(pollMs, Math.max(0, end - Date.now())));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = () => undefined;
      }
    }
  } finally {
    watcher.close();
  }
  throw new Error(`timed out after ${guardMs} ms (a hang guard) waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
}
