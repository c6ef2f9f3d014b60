/**
 * The real `Host`: every call the extension's logic makes into VS Code goes through here, so this
 * is the only logic-facing module that imports `vscode` (UI pieces like the tree view and status
 * bar item use it directly; they are exercised by the end-to-end test in a real VS Code).
 */
import * as vscode from 'vscode';
import type { ConfigTarget, Host, PythonEnvironmentsApi } from './host';

const TARGETS: Record<ConfigTarget, vscode.ConfigurationTarget> = {
  global: vscode.ConfigurationTarget.Global,
  workspace: vscode.ConfigurationTarget.Workspace,
  workspaceFolder: vscode.ConfigurationTarget.WorkspaceFolder,
};

export const PYTHON_EXTENSION_ID = 'ms-python.python';

export function vscodeHost(): Host {
  return {
    getConfiguration: (section) => vscode.workspace.getConfiguration(section),
    updateConfiguration: async (section, key, value, target) => {
      await vscode.workspace.getConfiguration(section).update(key, value, TARGETS[target]);
    },
    workspaceFolder: () => vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
    pythonEnvironments: async () => {
      const ext = vscode.extensions.getExtension<{ environments?: PythonEnvironmentsApi }>(PYTHON_EXTENSION_ID);
      if (!ext) {
        return undefined;
      }
      const api = ext.isActive ? ext.exports : await ext.activate();
      return api?.environments;
    },
    showWarningMessage: async (m, ...a) => vscode.window.showWarningMessage(m, ...a),
    showErrorMessage: async (m, ...a) => vscode.window.showErrorMessage(m, ...a),
    showInformationMessage: async (m, ...a) => vscode.window.showInformationMessage(m, ...a),
    writeClipboard: async (text) => vscode.env.clipboard.writeText(text),
    executeCommand: async (command, ...args) => vscode.commands.executeCommand(command, ...args),
  };
}
