/**
 * What the status bar item says: the mode, the server's state and the verdict on the last
 * completion (e.g. `cctest: 2/11 outliers · repaired`). Pure functions, unit-tested; the item
 * itself lives in ui.ts.
 */

export const MODES = ['repair', 'monitor', 'off'] as const;
export type Mode = (typeof MODES)[number];

export type ServerState = 'starting' | 'running' | 'stopped' | 'failed';

/** The verdict on one completion: the params of the server's `cctest/verdict` notification. */
export interface Verdict {
  /** One line, e.g. `cctest: 2/11 outliers · repaired` (the server's own wording). */
  text: string;
  outliers?: number;
  total?: number;
  /** The original completion was flagged as an outlier. */
  suspect?: boolean;
  uri?: string;
  requestId?: string;
  mode?: string;
}

export function isMode(value: unknown): value is Mode {
  return typeof value === 'string' && (MODES as readonly string[]).includes(value);
}

/** repair → monitor → off → repair. */
export function nextMode(mode: unknown): Mode {
  const i = isMode(mode) ? MODES.indexOf(mode) : -1;
  return MODES[(i + 1) % MODES.length];
}

const ICONS: Record<ServerState, string> = {
  starting: '$(loading~spin)',
  running: '$(beaker)',
  stopped: '$(circle-slash)',
  failed: '$(error)',
};

/** The status bar text: `<icon> cctest [mode]: <verdict>`. */
export function statusText(mode: Mode, state: ServerState, verdict?: Verdict): string {
  const head = `${ICONS[state]} cctest [${mode}]`;
  if (state !== 'running') {
    return `${head}: ${state === 'starting' ? 'starting…' : state}`;
  }
  if (mode === 'off') {
    return `${head}: off`;
  }
  if (!verdict) {
    return `${head}: ready`;
  }
  const body = verdict.text.replace(/^cctest:\s*/, '');
  return `${head}: ${body}`;
}

export function statusTooltip(mode: Mode, state: ServerState, verdict: Verdict | undefined, interpreter?: string): string {
  const lines = [
    `cctest language server: ${state}${interpreter ? ` (${interpreter})` : ''}`,
    `Mode: ${mode} — click to switch to ${nextMode(mode)}`,
  ];
  if (verdict) {
    lines.push(`Last completion: ${verdict.text.replace(/^cctest:\s*/, '')}`);
  }
  return lines.join('\n');
}
