/**
 * How the language server process is started, and the check that the chosen interpreter can run
 * it (with the exact install command when it cannot).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

/** Imports what `python -m lsp_server` needs, and prints the installed cctest version. */
const PROBE = [
  'import importlib.metadata as m, lsp_server, cctest',
  'try:\n    print(m.version("cctest"))\nexcept m.PackageNotFoundError:\n    print("unknown")',
].join('\n');

export type CheckProblem = 'not-found' | 'no-package' | 'failed';

export type CheckResult = { ok: true; version: string } | { ok: false; problem: CheckProblem; detail: string };

export interface ServerCommand {
  command: string;
  args: string[];
  options: { cwd?: string; env: NodeJS.ProcessEnv };
}

/** The server runs as a module of the chosen interpreter, over stdio. */
export function serverCommand(python: string, cwd?: string, env: NodeJS.ProcessEnv = process.env): ServerCommand {
  return {
    command: python,
    args: ['-m', 'lsp_server'],
    // Unbuffered so the server's log lines reach the output channel as they happen.
    options: { cwd, env: { ...env, PYTHONUNBUFFERED: '1' } },
  };
}

/** Runs the probe with `python`; never throws. */
export function checkInterpreter(python: string, timeoutMs = 60_000): Promise<CheckResult> {
  return new Promise((resolve) => {
    execFile(python, ['-c', PROBE], { timeout: timeoutMs, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (!err) {
        resolve({ ok: true, version: stdout.trim() });
        return;
      }
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EACCES') {
        resolve({ ok: false, problem: 'not-found', detail: `${python}: ${code === 'ENOENT' ? 'no such interpreter' : 'not executable'}` });
      } else if (/ModuleNotFoundError: No module named '(lsp_server|cctest)/.test(stderr)) {
        resolve({ ok: false, problem: 'no-package', detail: lastLine(stderr) });
      } else {
        resolve({ ok: false, problem: 'failed', detail: lastLine(stderr) || err.message });
      }
    });
  });
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return lines[lines.length - 1] ?? '';
}

/** Quotes a path for a POSIX shell when it needs it. */
export function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * The command that installs the server into `python`: from a source checkout when one is known
 * (editable install), else from the package index.
 */
export function installCommand(python: string, checkout?: string): string {
  const what = checkout ? `-e ${shellQuote(checkout)}` : 'cctest';
  return `${shellQuote(python)} -m pip install ${what}`;
}

/** A cctest source checkout among `candidates` (a folder whose pyproject.toml names "cctest"). */
export function findCheckout(candidates: readonly (string | undefined)[]): string | undefined {
  for (const dir of candidates) {
    if (!dir) {
      continue;
    }
    const file = path.join(dir, 'pyproject.toml');
    if (existsSync(file) && /^name\s*=\s*"cctest"/m.test(readFileSync(file, 'utf8'))) {
      return dir;
    }
  }
  return undefined;
}

/** Folders worth checking for a checkout: the workspace, and the folder holding `python`'s venv. */
export function checkoutCandidates(python: string, workspaceFolder?: string): string[] {
  const out: string[] = [];
  if (workspaceFolder) {
    out.push(workspaceFolder);
  }
  if (path.isAbsolute(python)) {
    out.push(path.resolve(python, '..', '..', '..')); // <checkout>/.venv/bin/python
  }
  return out;
}

/** The one-sentence message shown when the interpreter cannot run the server. */
export function problemMessage(python: string, result: Exclude<CheckResult, { ok: true }>, install: string): string {
  switch (result.problem) {
    case 'not-found':
      return `cctest: the Python interpreter "${python}" was not found. Set "cctest.interpreter" to a Python that has cctest installed.`;
    case 'no-package':
      return `cctest: the Python interpreter "${python}" does not have the cctest language server installed. Install it with: ${install}`;
    default:
      return `cctest: "${python}" cannot import the cctest language server (${result.detail}). Reinstall it with: ${install}`;
  }
}
