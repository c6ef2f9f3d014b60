// The `contributes.configuration` of package.json, derived from the language server's own list
// of settings (lsp_server/settings.py OPTIONS), so the two cannot drift: `npm run sync-settings`
// writes it, and a unit test fails when package.json and the server disagree.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const EXTENSION_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const REPO_ROOT = path.resolve(EXTENSION_ROOT, '..');

/** The repository's virtual environment interpreter (CCTEST_PYTHON overrides it). */
export function repoPython() {
  const candidate = process.env.CCTEST_PYTHON || path.join(REPO_ROOT, '.venv', 'bin', 'python');
  if (!existsSync(candidate)) {
    throw new Error(`no Python with cctest at ${candidate}: run \`make setup\` in ${REPO_ROOT} or set CCTEST_PYTHON`);
  }
  return candidate;
}

const DUMP = `
import dataclasses, json
from lsp_server.settings import OPTIONS, SECTION
try:
    from cctest.mutators import SCHEMES
    schemes = list(SCHEMES)
except Exception:
    schemes = None
print(json.dumps({"section": SECTION, "options": [dataclasses.asdict(o) for o in OPTIONS], "schemes": schemes}))
`;

/** The server's settings as the server itself describes them. */
export function serverOptions(python = repoPython()) {
  return JSON.parse(execFileSync(python, ['-c', DUMP], { cwd: REPO_ROOT, encoding: 'utf8' }));
}

/** One package.json property per server option (JSON-schema types, defaults, enums, markdown). */
export function configurationFromOptions({ section, options, schemes }) {
  const properties = {
    [`${section}.interpreter`]: {
      type: 'string',
      default: '',
      markdownDescription:
        'The Python interpreter that runs the cctest language server (it needs the `cctest` package). ' +
        'Empty: the interpreter selected in the Python extension, else `python3`.',
    },
  };
  for (const o of options) {
    const types = o.type.split('|');
    const prop = { type: types.length === 1 ? types[0] : types, default: o.default, markdownDescription: o.description };
    if (o.enum.length) prop.enum = o.enum;
    if (o.name === 'schemes') prop.items = schemes ? { type: 'string', enum: schemes } : { type: 'string' };
    if (o.name === 'stop') prop.items = { type: 'string' };
    properties[`${section}.${o.name}`] = prop;
  }
  return { title: 'cctest', properties };
}
