/** Test doubles for the VS Code API wrapper (`Host`) and the logger: records what was asked of them. */
import * as path from 'node:path';
import type { ConfigSection, ConfigTarget, Host, PythonEnvironmentsApi } from '../../common/host';
import type { Logger } from '../../common/logging';

export const EXTENSION_ROOT = path.resolve(__dirname, '..', '..', '..');
export const REPO_ROOT = path.resolve(EXTENSION_ROOT, '..');
export const REPO_PYTHON = process.env.CCTEST_PYTHON || path.join(REPO_ROOT, '.venv', 'bin', 'python');

export class FakeConfig implements ConfigSection {
  constructor(
    public values: Record<string, unknown> = {},
    public where: Record<string, ConfigTarget> = {},
  ) {}

  get<T>(key: string): T | undefined {
    return this.values[key] as T | undefined;
  }

  inspect(key: string) {
    const target = this.where[key];
    const v = this.values[key];
    return {
      globalValue: target === 'global' ? v : undefined,
      workspaceValue: target === 'workspace' ? v : undefined,
      workspaceFolderValue: target === 'workspaceFolder' ? v : undefined,
    };
  }
}

export class FakeHost implements Host {
  config = new FakeConfig();
  folder: string | undefined;
  python: PythonEnvironmentsApi | undefined;
  pythonError: Error | undefined;
  /** The answer the fake user gives to the next message. */
  answer: string | undefined;
  messages: { kind: 'warning' | 'error' | 'info'; message: string; actions: string[] }[] = [];
  clipboard = '';
  commands: { command: string; args: unknown[] }[] = [];
  updates: { section: string; key: string; value: unknown; target: ConfigTarget }[] = [];

  getConfiguration(): ConfigSection {
    return this.config;
  }

  async updateConfiguration(section: string, key: string, value: unknown, target: ConfigTarget): Promise<void> {
    this.updates.push({ section, key, value, target });
    this.config.values[key] = value;
  }

  workspaceFolder(): string | undefined {
    return this.folder;
  }

  async pythonEnvironments(): Promise<PythonEnvironmentsApi | undefined> {
    if (this.pythonError) {
      throw this.pythonError;
    }
    return this.python;
  }

  private async show(kind: 'warning' | 'error' | 'info', message: string, actions: string[]) {
    this.messages.push({ kind, message, actions });
    return this.answer;
  }

  showWarningMessage(m: string, ...a: string[]) {
    return this.show('warning', m, a);
  }

  showErrorMessage(m: string, ...a: string[]) {
    return this.show('error', m, a);
  }

  showInformationMessage(m: string, ...a: string[]) {
    return this.show('info', m, a);
  }

  async writeClipboard(text: string): Promise<void> {
    this.clipboard = text;
  }

  async executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    this.commands.push({ command, args });
    return undefined;
  }
}

/** The Python extension's API answering with one interpreter. */
export function pythonExtension(executable: string | undefined): PythonEnvironmentsApi {
  return {
    getActiveEnvironmentPath: () => ({ path: executable ?? '' }),
    resolveEnvironment: async () => ({ executable: { uri: executable ? { fsPath: executable } : undefined } }),
  };
}

export class MemoryLogger implements Logger {
  lines: string[] = [];
  trace(m: string) {
    this.lines.push(`trace ${m}`);
  }
  info(m: string) {
    this.lines.push(`info ${m}`);
  }
  warn(m: string) {
    this.lines.push(`warn ${m}`);
  }
  error(m: string | Error) {
    this.lines.push(`error ${String(m)}`);
  }
}
