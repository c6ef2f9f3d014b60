/**
 * Everything decided before the server process starts: the interpreter, whether it can run the
 * server (if not, a notification with the exact install command), the command line and the
 * settings sent in initializationOptions. Takes a `Host`, so unit tests run it without VS Code.
 */
import type { Host } from './host';
import {
  type CheckResult,
  type ServerCommand,
  checkInterpreter,
  checkoutCandidates,
  findCheckout,
  installCommand,
  problemMessage,
  serverCommand,
} from './launch';
import { logError, logInfo } from './logging';
import { type InterpreterChoice, chooseInterpreter } from './python';
import { SECTION, readServerSettings } from './settings';

export const COPY_ACTION = 'Copy install command';
export const SETTINGS_ACTION = 'Choose interpreter';
export const OUTPUT_ACTION = 'Show output';

export type LaunchPlan =
  | { ok: true; interpreter: InterpreterChoice; version: string; command: ServerCommand; initializationOptions: Record<string, unknown> }
  | { ok: false; interpreter: InterpreterChoice; message: string; install: string };

export interface PlanOptions {
  /** The server's setting names (from package.json). */
  settingKeys: readonly string[];
  check?: (python: string) => Promise<CheckResult>;
  env?: NodeJS.ProcessEnv;
}

export async function planLaunch(host: Host, opts: PlanOptions): Promise<LaunchPlan> {
  const interpreter = await chooseInterpreter(host);
  const folder = host.workspaceFolder();
  logInfo(`interpreter: ${interpreter.path} (from ${interpreter.source})`);
  const result = await (opts.check ?? checkInterpreter)(interpreter.path);
  if (!result.ok) {
    const install = installCommand(interpreter.path, findCheckout(checkoutCandidates(interpreter.path, folder)));
    const message = problemMessage(interpreter.path, result, install);
    logError(`${message} (${result.detail})`);
    return { ok: false, interpreter, message, install };
  }
  logInfo(`cctest ${result.version} found in ${interpreter.path}`);
  return {
    ok: true,
    interpreter,
    version: result.version,
    command: serverCommand(interpreter.path, folder, opts.env),
    initializationOptions: readServerSettings(host.getConfiguration(SECTION), opts.settingKeys, folder),
  };
}

/** Shows the install notification and carries out the action the user picks. */
export async function reportLaunchProblem(host: Host, plan: Extract<LaunchPlan, { ok: false }>): Promise<string | undefined> {
  const choice = await host.showWarningMessage(plan.message, COPY_ACTION, SETTINGS_ACTION, OUTPUT_ACTION);
  if (choice === COPY_ACTION) {
    await host.writeClipboard(plan.install);
  } else if (choice === SETTINGS_ACTION) {
    await host.executeCommand('workbench.action.openSettings', `${SECTION}.interpreter`);
  } else if (choice === OUTPUT_ACTION) {
    await host.executeCommand(`${SECTION}.showOutput`);
  }
  return choice;
}
