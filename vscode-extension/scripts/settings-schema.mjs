// The `contributes.configuration` of package.json, as the repository's generator writes it
// (tools/sync_settings.py, from each setting's one description in cctest/config.py), so the two
// cannot drift: `npm run sync-settings` rewrites it, and a unit test fails when they disagree.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const EXTENSION_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const REPO_ROOT = path.resolve(EXTENSION_ROOT, '..');
const GENERATOR = path.join(REPO_ROOT, 'tools', 'sync_settings.py');

/** The repository's virtual environment interpreter (CCTEST_PYTHON overrides it). */
export function repoPython() {
  const candidate = process.env.CCTEST_PYTHON || path.join(REPO_ROOT, '.venv', 'bin', 'python');
  if (!existsSync(candidate)) {
    throw new Error(`no Python with cctest at ${candidate}: run \`make setup\` in ${REPO_ROOT} or set CCTEST_PYTHON`);
  }
  return candidate;
}

/** The configuration the generator derives from the server's settings. */
export function generatedConfiguration(python = repoPython()) {
  return JSON.parse(execFileSync(python, [GENERATOR, '--vscode'], { cwd: REPO_ROOT, encoding: 'utf8' }));
}

/** Rewrite package.json (and the docs' settings table) from the server's settings. */
export function syncSettings(python = repoPython()) {
  return execFileSync(python, [GENERATOR], { cwd: REPO_ROOT, encoding: 'utf8' });
}
