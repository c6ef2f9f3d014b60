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

/** A local model's load: the params of the server's `cctest/model` notification. */
export interface ModelLoad {
  state: 'loading' | 'ready' | 'failed';
  /** `bundled` or the model directory, as the settings name it. */
  model: string;
  /** How long the load took (when it ended). */
  seconds?: number;
  /** One line, e.g. `cctest: loading model bundled… done (14.8 s)` (the server's own wording). */
  text: string;
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

/** The status bar text: `<icon> cctest [mode]: <verdict>`; `loading model …` while the server loads one. */
export function statusText(mode: Mode, state: ServerState, verdict?: Verdict, model?: ModelLoad): string {
  const head = `${ICONS[state]} cctest [${mode}]`;
  if (state !== 'running') {
    return `${head}: ${state === 'starting' ? 'starting…' : state}`;
  }
  if (model?.state === 'loading') {
    return `${ICONS.starting} cctest [${mode}]: loading model ${model.model}…`;
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

/** The model line of the tooltip: `Model: bundled, loaded in 14.8 s`. */
export function modelLine(model: ModelLoad): string {
  if (model.state === 'loading') {
    return `Model: ${model.model}, loading…`;
  }
  if (model.state === 'failed') {
    return `Model: ${model.model}, failed to load (see the output)`;
  }
  return `Model: ${model.model}, loaded${model.seconds === undefined ? '' : ` in ${model.seconds.toFixed(1)} s`}`;
}

export function statusTooltip(
  mode: Mode,
  state: ServerState,
  verdict: Verdict | undefined,
  interpreter?: string,
  model?: ModelLoad,
): string {
  const lines = [
    `cctest language server: ${state}${interpreter ? ` (${interpreter})` : ''}`,
    `Mode: ${mode} — click to switch to ${nextMode(mode)}`,
  ];
  if (model && state === 'running') {
    lines.push(modelLine(model));
  }
  if (verdict) {
    lines.push(`Last completion: ${verdict.text.replace(/^cctest:\s*/, '')}`);
  }
  return lines.join('\n');
}
