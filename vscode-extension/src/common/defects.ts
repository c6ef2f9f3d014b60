/**
 * How a defect record (from `cctest/defects`) is shown: tree labels and the two virtual documents
 * (original vs repaired completion) that the diff editor puts side by side. Pure functions.
 */

/** A record as `cctest/defects` sends it (lsp_server/convert.py `defect_to_wire`). */
export interface DefectRecord {
  id: number;
  requestId?: string;
  time: string;
  uri: string | null;
  line: number | null;
  character: number | null;
  mode?: string;
  prompt: string;
  suffix?: string;
  completions: { source: string; text: string; error?: string }[];
  outliers: number[];
  suspect: boolean;
  chosen: number | null;
  chosenCompletion: string;
  originalCompletion: string;
  model?: string;
  accepted: boolean;
}

export interface DefectPage {
  records: DefectRecord[];
  total: number;
}

export const DEFECT_SCHEME = 'cctest-defect';

/** The last path segment of a URI, for a short label. */
export function fileName(uri: string | null): string {
  if (!uri) {
    return '?';
  }
  const clean = uri.replace(/[?#].*$/, '');
  return decodeURIComponent(clean.slice(clean.lastIndexOf('/') + 1)) || clean;
}

/** First non-blank line of a completion, shortened. */
export function firstLine(text: string, width = 60): string {
  const line = text.split('\n').find((x) => x.trim()) ?? '';
  const trimmed = line.trim();
  return trimmed.length <= width ? trimmed : `${trimmed.slice(0, width - 1)}…`;
}

export function defectLabel(r: DefectRecord): string {
  const where = r.line === null ? '' : `:${r.line + 1}`;
  return `${fileName(r.uri)}${where}  ${firstLine(r.chosenCompletion) || '(no completion)'}`;
}

export function defectDescription(r: DefectRecord): string {
  const parts = [`${r.outliers.length}/${r.completions.length} outliers`];
  if (r.suspect) {
    parts.push(r.chosenCompletion !== r.originalCompletion ? 'repaired' : 'flagged');
  } else {
    parts.push('consistent');
  }
  if (r.accepted) {
    parts.push('accepted');
  }
  return parts.join(' · ');
}

export function defectTooltip(r: DefectRecord): string {
  return [
    `#${r.id} ${r.time}${r.model ? ` · ${r.model}` : ''}`,
    `${r.uri ?? '?'}${r.line === null ? '' : `:${r.line + 1}:${(r.character ?? 0) + 1}`}`,
    defectDescription(r),
    '',
    'original:',
    r.originalCompletion,
    'repaired:',
    r.chosenCompletion,
  ].join('\n');
}

/** How many lines of the prompt are shown above each completion in the diff, for context. */
const CONTEXT_LINES = 6;

/** The text of one side of the diff: the end of the prompt, then that side's completion. */
export function sideText(r: DefectRecord, side: 'original' | 'repaired'): string {
  const lines = r.prompt.split('\n');
  const context = lines.slice(Math.max(0, lines.length - CONTEXT_LINES)).join('\n');
  return context + (side === 'original' ? r.originalCompletion : r.chosenCompletion);
}

/** `cctest-defect:/<id>/original.py`: the path names the record and the side. */
export function sidePath(id: number, side: 'original' | 'repaired'): string {
  return `/${id}/${side}.py`;
}

export function parseSidePath(p: string): { id: number; side: 'original' | 'repaired' } | undefined {
  const m = /^\/(\d+)\/(original|repaired)\.py$/.exec(p);
  return m ? { id: Number(m[1]), side: m[2] as 'original' | 'repaired' } : undefined;
}
