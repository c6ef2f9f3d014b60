/** The extension's commands (package.json `contributes.commands`), registered in one place. */
import * as vscode from 'vscode';
import type { Host } from './host';
import { logError } from './logging';
import type { ServerManager } from './server';
import { SECTION, targetOf } from './settings';
import { nextMode } from './status';
import { DEFECTS_VIEW, type DefectsTree, OPEN_DEFECT_COMMAND, TOGGLE_MODE_COMMAND } from './ui';

export const COMMANDS = {
  restart: 'cctest.restart',
  toggleMode: TOGGLE_MODE_COMMAND,
  showDefects: 'cctest.showDefects',
  refreshDefects: 'cctest.refreshDefects',
  exportDefects: 'cctest.exportDefects',
  clearDefects: 'cctest.clearDefects',
  showOutput: 'cctest.showOutput',
  openDefect: OPEN_DEFECT_COMMAND,
} as const;

/** Server commands the extension registers itself (see client.ts keepExtensionCommands). */
export const EXTENSION_OWNED_SERVER_COMMANDS: ReadonlySet<string> = new Set([COMMANDS.exportDefects, COMMANDS.clearDefects]);

export function registerCommands(host: Host, server: ServerManager, tree: DefectsTree, output: vscode.LogOutputChannel): vscode.Disposable[] {
  const guarded =
    (what: string, fn: (...args: never[]) => Promise<unknown>) =>
    async (...args: never[]) => {
      try {
        await fn(...args);
      } catch (err) {
        logError(`${what}: ${String(err)}`);
        void vscode.window.showErrorMessage(`cctest: ${what} failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    };
  return [
    vscode.commands.registerCommand(COMMANDS.restart, guarded('restart', () => server.restart())),
    vscode.commands.registerCommand(
      COMMANDS.toggleMode,
      guarded('toggle mode', async () => {
        const config = host.getConfiguration(SECTION);
        const mode = nextMode(config.get<string>('mode'));
        await host.updateConfiguration(SECTION, 'mode', mode, targetOf(config, 'mode'));
        vscode.window.setStatusBarMessage(`cctest: mode ${mode}`, 3000);
      }),
    ),
    vscode.commands.registerCommand(
      COMMANDS.showDefects,
      guarded('show defects', async () => {
        await vscode.commands.executeCommand(`${DEFECTS_VIEW}.focus`);
        tree.refresh();
      }),
    ),
    vscode.commands.registerCommand(COMMANDS.refreshDefects, () => tree.refresh()),
    vscode.commands.registerCommand(
      COMMANDS.openDefect,
      guarded('open defect', (r: never) => tree.open(r)),
    ),
    vscode.commands.registerCommand(
      COMMANDS.exportDefects,
      guarded('export defects', async (target?: string) => {
        let file = typeof target === 'string' ? target : undefined;
        if (!file) {
          const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
          const uri = await vscode.window.showSaveDialog({
            title: 'Export the cctest defect log',
            defaultUri: folder ? vscode.Uri.joinPath(folder, 'cctest-defects.jsonl') : undefined,
            filters: { 'JSON lines': ['jsonl'], CSV: ['csv'] },
          });
          if (!uri) {
            return;
          }
          file = uri.fsPath;
        }
        const format = file.toLowerCase().endsWith('.csv') ? 'csv' : 'jsonl';
        const result = await server.executeServerCommand<{ count: number; path: string }>(COMMANDS.exportDefects, [{ path: file, format }]);
        void vscode.window.showInformationMessage(`cctest: ${result.count} records exported to ${result.path}.`);
      }),
    ),
    vscode.commands.registerCommand(
      COMMANDS.clearDefects,
      guarded('clear defects', async () => {
        const sure = await vscode.window.showWarningMessage('Delete every record in the cctest defect log?', { modal: true }, 'Delete');
        if (sure !== 'Delete') {
          return;
        }
        const result = await server.executeServerCommand<{ deleted: number }>(COMMANDS.clearDefects, []);
        tree.refresh();
        void vscode.window.showInformationMessage(`cctest: ${result.deleted} records deleted.`);
      }),
    ),
    vscode.commands.registerCommand(COMMANDS.showOutput, () => output.show()),
  ];
}
