/**
 * The language client: starts `python -m lsp_server` over stdio and wires its features into VS Code.
 *
 * vscode-languageclient 10 implements `textDocument/inlineCompletion` (LSP 3.18) itself, so the
 * server's repaired completion becomes ghost text without a hand-written provider; the inline
 * item's `cctest.accepted` command is registered by the client from the server's
 * `executeCommandProvider` and forwarded to the server when the user accepts (Tab).
 */
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
} from 'vscode-languageclient/node';
import type { ServerCommand } from './launch';

export const CLIENT_ID = 'cctest';
export const CLIENT_NAME = 'cctest language server';

/** Python documents, saved or not (the server reads the text from the client, not from disk). */
export const DOCUMENT_SELECTOR = [
  { scheme: 'file', language: 'python' },
  { scheme: 'untitled', language: 'python' },
];

export interface ClientHooks {
  /** Called after the server has been told the user accepted a completion. */
  onAccepted?: () => void;
}

export function createClient(
  command: ServerCommand,
  initializationOptions: Record<string, unknown>,
  output: vscode.LogOutputChannel,
  extensionCommands: ReadonlySet<string>,
  hooks: ClientHooks = {},
): LanguageClient {
  const serverOptions: ServerOptions = { command: command.command, args: command.args, options: command.options };
  const clientOptions: LanguageClientOptions = {
    documentSelector: DOCUMENT_SELECTOR,
    outputChannel: output,
    traceOutputChannel: output,
    initializationOptions,
    // The server never decides to reveal the output channel; errors come as notifications.
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    middleware: {
      executeCommand: async (cmd, args, next) => {
        const result = await next(cmd, args);
        if (cmd === 'cctest.accepted') {
          hooks.onAccepted?.();
        }
        return result;
      },
    },
  };
  const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
  keepExtensionCommands(client, extensionCommands);
  return client;
}

/**
 * The server lists `cctest.exportDefects` and `cctest.clearDefects` among its commands, and the
 * client would register those names itself (forwarding blindly); the extension registers them
 * instead, because they need UI (a save dialog, a confirmation) and must exist while the server
 * is down. Registering a name twice throws in VS Code, so the client's feature skips those names.
 */
function keepExtensionCommands(client: LanguageClient, names: ReadonlySet<string>): void {
  const feature = client.getFeature(ExecuteCommandRequest.method);
  const register = feature.register.bind(feature);
  feature.register = (data: Parameters<typeof register>[0]) => {
    const commands = (data.registerOptions.commands ?? []).filter((c) => !names.has(c));
    register({ ...data, registerOptions: { ...data.registerOptions, commands } });
  };
}
