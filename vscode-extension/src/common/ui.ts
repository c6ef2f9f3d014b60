/**
 * The extension's UI: the status bar item (mode + last verdict; click toggles the mode), the
 * "cctest defects" tree view, and the virtual documents behind its side-by-side diffs.
 */
import * as vscode from 'vscode';
import {
  DEFECT_SCHEME,
  type DefectPage,
  type DefectRecord,
  defectDescription,
  defectLabel,
  defectTooltip,
  parseSidePath,
  sidePath,
  sideText,
} from './defects';
import { logError } from './logging';
import type { ServerManager } from './server';
import { SECTION } from './settings';
import { type Mode, type ModelLoad, type Verdict, isMode, statusText, statusTooltip } from './status';

export const TOGGLE_MODE_COMMAND = 'cctest.toggleMode';
export const OPEN_DEFECT_COMMAND = 'cctest.openDefect';
export const DEFECTS_VIEW = 'cctest.defects';

export function currentMode(): Mode {
  const mode = vscode.workspace.getConfiguration(SECTION).get<string>('mode');
  return isMode(mode) ? mode : 'repair';
}

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('cctest.status', vscode.StatusBarAlignment.Right, 100);
  private verdict: Verdict | undefined;
  private model: ModelLoad | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly server: ServerManager) {
    this.item.name = 'cctest';
    this.item.command = TOGGLE_MODE_COMMAND;
    this.subscriptions.push(
      server.onDidChangeState((state) => {
        if (state !== 'running') {
          this.model = undefined; // a new server tells its own load
        }
        this.update();
      }),
      server.onDidModel((m) => {
        this.model = m;
        this.update();
      }),
      server.onDidVerdict((v) => {
        this.verdict = v;
        this.update();
      }),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(`${SECTION}.mode`)) {
          this.verdict = undefined; // a verdict from the previous mode would mislead
          this.update();
        }
      }),
    );
    this.update();
    this.item.show();
  }

  update(): void {
    const mode = currentMode();
    this.item.text = statusText(mode, this.server.state, this.verdict, this.model);
    this.item.tooltip = statusTooltip(mode, this.server.state, this.verdict, this.server.interpreter, this.model);
    this.item.backgroundColor =
      this.verdict?.suspect && mode !== 'off' ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
    this.item.dispose();
  }
}

const PAGE = 200;

/** The newest logged records, from the server's `cctest/defects`. */
export class DefectsTree implements vscode.TreeDataProvider<DefectRecord>, vscode.TextDocumentContentProvider {
  private readonly changed = new vscode.EventEmitter<DefectRecord | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly docChanged = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.docChanged.event;
  private readonly records = new Map<number, DefectRecord>();
  view: vscode.TreeView<DefectRecord> | undefined;

  constructor(private readonly server: ServerManager) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  getTreeItem(r: DefectRecord): vscode.TreeItem {
    const item = new vscode.TreeItem(defectLabel(r), vscode.TreeItemCollapsibleState.None);
    item.id = String(r.id);
    item.description = defectDescription(r);
    item.tooltip = defectTooltip(r);
    item.iconPath = new vscode.ThemeIcon(r.suspect ? 'warning' : 'pass', r.accepted ? new vscode.ThemeColor('charts.green') : undefined);
    item.command = { command: OPEN_DEFECT_COMMAND, title: 'Open', arguments: [r] };
    item.contextValue = 'cctestDefect';
    return item;
  }

  async getChildren(element?: DefectRecord): Promise<DefectRecord[]> {
    if (element) {
      return [];
    }
    if (this.server.state !== 'running') {
      this.setMessage('The cctest language server is not running.');
      return [];
    }
    try {
      const page = await this.server.request<DefectPage>('cctest/defects', { limit: PAGE, offset: 0 });
      this.records.clear();
      page.records.forEach((r) => this.records.set(r.id, r));
      this.setMessage(
        page.total === 0
          ? 'No defects logged yet.'
          : page.total > page.records.length
            ? `The newest ${page.records.length} of ${page.total} records.`
            : undefined,
      );
      return page.records;
    } catch (err) {
      logError(`cctest/defects failed: ${String(err)}`);
      this.setMessage(`Could not read the defect log: ${String(err)}`);
      return [];
    }
  }

  private setMessage(message: string | undefined): void {
    if (this.view) {
      this.view.message = message;
    }
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const side = parseSidePath(uri.path);
    const record = side && this.records.get(side.id);
    return record && side ? sideText(record, side.side) : '';
  }

  /**
   * Open the file at the record's position (a tab of its own), then the original vs repaired diff
   * in the same editor group: a full-width group keeps VS Code's diff side by side (it falls back to
   * an inline diff below 900 px, which a split group on most screens is).
   */
  async open(r: DefectRecord): Promise<void> {
    this.records.set(r.id, r);
    if (r.uri) {
      try {
        const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(r.uri));
        const pos = new vscode.Position(r.line ?? 0, r.character ?? 0);
        await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Active, selection: new vscode.Range(pos, pos), preview: false });
      } catch (err) {
        void vscode.window.showWarningMessage(`cctest: cannot open ${r.uri}: ${String(err)}`);
      }
    }
    const left = vscode.Uri.from({ scheme: DEFECT_SCHEME, path: sidePath(r.id, 'original') });
    const right = vscode.Uri.from({ scheme: DEFECT_SCHEME, path: sidePath(r.id, 'repaired') });
    this.docChanged.fire(left);
    this.docChanged.fire(right);
    await vscode.commands.executeCommand('vscode.diff', left, right, `cctest #${r.id}: original ↔ repaired`, {
      viewColumn: vscode.ViewColumn.Active,
      preview: true,
    });
  }

  dispose(): void {
    this.changed.dispose();
    this.docChanged.dispose();
  }
}
