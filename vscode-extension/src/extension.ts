/**
 * Entry point: builds the pieces in src/common/ and ties them together; nothing else lives here.
 */
import * as vscode from 'vscode';
import { COMMANDS, EXTENSION_OWNED_SERVER_COMMANDS, registerCommands } from './common/commands';
import { debounce } from './common/debounce';
import { DEFECT_SCHEME } from './common/defects';
import { logInfo, setLogger } from './common/logging';
import { ServerManager } from './common/server';
import { SECTION, classifyChange, interpreterSetting, serverSettingKeys } from './common/settings';
import { DEFECTS_VIEW, DefectsTree, StatusBar } from './common/ui';
import { vscodeHost } from './common/vscodeapi';

/** Settings edits come in bursts (typing in the settings UI): restart or push once they settle. */
const RESTART_DELAY_MS = 1000;
const PUSH_DELAY_MS = 300;

let server: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('cctest', { log: true });
  setLogger(output);
  const host = vscodeHost();
  const keys = serverSettingKeys(context.extension.packageJSON);
  server = new ServerManager(host, output, keys, EXTENSION_OWNED_SERVER_COMMANDS);
  const manager = server;
  const tree = new DefectsTree(manager);
  const view = vscode.window.createTreeView(DEFECTS_VIEW, { treeDataProvider: tree, showCollapseAll: false });
  tree.view = view;
  const status = new StatusBar(manager);
  const restartSoon = debounce(() => void manager.restart(), RESTART_DELAY_MS);
  const pushSoon = debounce(() => void manager.pushSettings(), PUSH_DELAY_MS);

  context.subscriptions.push(
    output,
    view,
    tree,
    status,
    vscode.workspace.registerTextDocumentContentProvider(DEFECT_SCHEME, tree),
    ...registerCommands(host, manager, tree, output),
    vscode.workspace.onDidChangeConfiguration((e) => {
      const action = classifyChange((s) => e.affectsConfiguration(s));
      if (action === 'restart') {
        logInfo('the interpreter setting changed: restarting the server');
        restartSoon();
      } else if (action === 'push') {
        pushSoon();
      }
    }),
    manager.onDidVerdict((v) => {
      if (v.suspect) {
        tree.refresh();
      }
    }),
    manager.onDidAccept(() => tree.refresh()),
    manager.onDidChangeState((s) => {
      if (s === 'running' || s === 'stopped') {
        tree.refresh();
      }
    }),
    { dispose: () => (restartSoon.cancel(), pushSoon.cancel()) },
  );

  // A new interpreter picked in the Python extension matters only when ours is not set explicitly.
  void host.pythonEnvironments().then((envs) => {
    const sub = envs?.onDidChangeActiveEnvironmentPath?.(() => {
      if (!interpreterSetting(host.getConfiguration(SECTION), host.workspaceFolder())) {
        logInfo('the Python extension selected another interpreter: restarting the server');
        restartSoon();
      }
    });
    if (sub) {
      context.subscriptions.push(sub);
    }
  });

  void manager.restart();
  logInfo(`cctest extension activated; commands: ${Object.values(COMMANDS).join(', ')}`);
}

export async function deactivate(): Promise<void> {
  await server?.dispose();
  server = undefined;
}
