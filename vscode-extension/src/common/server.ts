/**
 * The server's lifecycle: start (after `planLaunch` has checked the interpreter), stop, restart
 * (serialised, so a burst of restarts cannot leave two servers running), settings pushes, and the
 * server's custom messages (`cctest/verdict`, `cctest/model`, `cctest/defects`, commands).
 */
import * as vscode from 'vscode';
import { DidChangeConfigurationNotification, type LanguageClient, State } from 'vscode-languageclient/node';
import { createClient } from './client';
import type { Host } from './host';
import { logError, logInfo } from './logging';
import { SECTION, readServerSettings } from './settings';
import { type LaunchPlan, planLaunch, reportLaunchProblem } from './startup';
import type { ModelLoad, ServerState, Verdict } from './status';

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private queue: Promise<void> = Promise.resolve();
  private _state: ServerState = 'stopped';
  private _plan: LaunchPlan | undefined;
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private readonly verdictEmitter = new vscode.EventEmitter<Verdict>();
  private readonly acceptEmitter = new vscode.EventEmitter<void>();
  private readonly modelEmitter = new vscode.EventEmitter<ModelLoad>();
  readonly onDidChangeState = this.stateEmitter.event;
  readonly onDidVerdict = this.verdictEmitter.event;
  /** The server's local model: loading, then ready or failed (`cctest/model`). */
  readonly onDidModel = this.modelEmitter.event;
  readonly onDidAccept = this.acceptEmitter.event;

  constructor(
    private readonly host: Host,
    private readonly output: vscode.LogOutputChannel,
    private readonly settingKeys: readonly string[],
    private readonly extensionCommands: ReadonlySet<string>,
  ) {}

  get state(): ServerState {
    return this._state;
  }

  get interpreter(): string | undefined {
    return this._plan?.interpreter.path;
  }

  /** Stop the running server (if any) and start a new one; calls are queued, never overlapped. */
  restart(): Promise<void> {
    this.queue = this.queue.then(
      () => this.doRestart(),
      () => this.doRestart(),
    );
    return this.queue;
  }

  stop(): Promise<void> {
    this.queue = this.queue.then(() => this.doStop());
    return this.queue;
  }

  private setState(state: ServerState): void {
    this._state = state;
    this.stateEmitter.fire(state);
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (err) {
        logError(`stopping the server: ${String(err)}`);
      }
      await client.dispose();
    }
    this.setState('stopped');
  }

  private async doRestart(): Promise<void> {
    await this.doStop();
    this.setState('starting');
    const plan = await planLaunch(this.host, { settingKeys: this.settingKeys });
    this._plan = plan;
    if (!plan.ok) {
      this.setState('failed');
      void reportLaunchProblem(this.host, plan);
      return;
    }
    logInfo(`starting: ${plan.command.command} ${plan.command.args.join(' ')}`);
    const client = createClient(plan.command, plan.initializationOptions, this.output, this.extensionCommands, {
      onAccepted: () => this.acceptEmitter.fire(),
    });
    client.onDidChangeState((e) => {
      if (this.client !== client) {
        return;
      }
      if (e.newState === State.Running) {
        this.setState('running');
      } else if (e.newState === State.Stopped) {
        this.setState('stopped');
      }
    });
    client.onNotification('cctest/verdict', (v: Verdict) => this.verdictEmitter.fire(v));
    client.onNotification('cctest/model', (m: ModelLoad) => {
      if (this.client === client) {
        this.modelEmitter.fire(m);
      }
    });
    this.client = client;
    try {
      await client.start();
      this.setState('running');
    } catch (err) {
      logError(`the server did not start: ${String(err)}`);
      this.setState('failed');
      void this.host.showErrorMessage(`cctest: the language server did not start (${String(err)}).`, 'Show output').then((a) => {
        if (a) {
          this.output.show();
        }
      });
    }
  }

  /** Send the current settings to the running server (no restart needed: it applies them). */
  async pushSettings(): Promise<void> {
    const client = this.client;
    if (!client || !client.isRunning()) {
      return;
    }
    const settings = readServerSettings(this.host.getConfiguration(SECTION), this.settingKeys, this.host.workspaceFolder());
    await client.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: settings } });
  }

  private running(): LanguageClient {
    if (!this.client || !this.client.isRunning()) {
      throw new Error('the cctest language server is not running');
    }
    return this.client;
  }

  request<T>(method: string, params: unknown): Promise<T> {
    return this.running().sendRequest<T>(method, params);
  }

  executeServerCommand<T>(command: string, args: unknown[]): Promise<T> {
    return this.running().sendRequest<T>('workspace/executeCommand', { command, arguments: args });
  }

  async dispose(): Promise<void> {
    await this.stop();
    this.stateEmitter.dispose();
    this.verdictEmitter.dispose();
    this.acceptEmitter.dispose();
    this.modelEmitter.dispose();
  }
}
