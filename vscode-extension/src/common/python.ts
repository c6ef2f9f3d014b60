/**
 * Which Python runs the language server: the `cctest.interpreter` setting, else the interpreter
 * selected in the Python extension (when it is installed), else `python3` from PATH.
 */
import type { Host } from './host';
import { logWarn } from './logging';
import { SECTION, interpreterSetting } from './settings';

export type InterpreterSource = 'setting' | 'python-extension' | 'default';

export interface InterpreterChoice {
  path: string;
  source: InterpreterSource;
}

export const DEFAULT_PYTHON = 'python3';

export async function chooseInterpreter(host: Host): Promise<InterpreterChoice> {
  const folder = host.workspaceFolder();
  const fromSetting = interpreterSetting(host.getConfiguration(SECTION), folder);
  if (fromSetting) {
    return { path: fromSetting, source: 'setting' };
  }
  const fromExtension = await pythonExtensionInterpreter(host);
  if (fromExtension) {
    return { path: fromExtension, source: 'python-extension' };
  }
  return { path: DEFAULT_PYTHON, source: 'default' };
}

/** The Python extension's selected interpreter; undefined when absent or when it cannot say. */
export async function pythonExtensionInterpreter(host: Host): Promise<string | undefined> {
  try {
    const envs = await host.pythonEnvironments();
    if (!envs) {
      return undefined;
    }
    const active = envs.getActiveEnvironmentPath();
    if (!active?.path) {
      return undefined;
    }
    const resolved = await envs.resolveEnvironment(active);
    return resolved?.executable.uri?.fsPath || undefined;
  } catch (err) {
    // A broken or half-activated Python extension must not keep the server from starting.
    logWarn(`could not ask the Python extension for its interpreter: ${String(err)}`);
    return undefined;
  }
}
