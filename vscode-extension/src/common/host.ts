/**
 * The slice of the VS Code API that the extension's logic uses, as plain interfaces.
 *
 * Logic modules (settings, interpreter discovery, launch, status) take a `Host` instead of
 * importing `vscode`, so unit tests run them in plain Node with a hand-made host; `vscodeapi.ts`
 * is the one implementation backed by the real API.
 */

/** A read-only view of one configuration section (what `workspace.getConfiguration` returns). */
export interface ConfigSection {
  get<T>(key: string): T | undefined;
  /** Where a key is set: used to write a toggled value back at the same level. */
  inspect?(key: string): { globalValue?: unknown; workspaceValue?: unknown; workspaceFolderValue?: unknown } | undefined;
}

export type ConfigTarget = 'global' | 'workspace' | 'workspaceFolder';

/** The Python extension's environment API (ms-python.python), the part we call. */
export interface PythonEnvironmentsApi {
  getActiveEnvironmentPath(resource?: unknown): { path: string } | undefined;
  resolveEnvironment(env: { path: string } | string): Promise<{ executable: { uri?: { fsPath: string } } } | undefined>;
  onDidChangeActiveEnvironmentPath?: (listener: (e: unknown) => unknown) => { dispose(): unknown };
}

export interface Host {
  getConfiguration(section: string): ConfigSection;
  updateConfiguration(section: string, key: string, value: unknown, target: ConfigTarget): Promise<void>;
  /** The first workspace folder's path, if any (for `${workspaceFolder}` in settings). */
  workspaceFolder(): string | undefined;
  /** The Python extension's environments API, or undefined when it is not installed. */
  pythonEnvironments(): Promise<PythonEnvironmentsApi | undefined>;
  showWarningMessage(message: string, ...actions: string[]): Promise<string | undefined>;
  showErrorMessage(message: string, ...actions: string[]): Promise<string | undefined>;
  showInformationMessage(message: string, ...actions: string[]): Promise<string | undefined>;
  writeClipboard(text: string): Promise<void>;
  executeCommand(command: string, ...args: unknown[]): Promise<unknown>;
}
