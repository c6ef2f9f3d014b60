/**
 * The extension's settings: which ones the server receives, how `${workspaceFolder}` and `~` are
 * resolved, and which changes need a server restart.
 *
 * The list of server settings is not repeated here: it is package.json's
 * `contributes.configuration` (itself generated from cctest/config.py by
 * tools/sync_settings.py), read at run time.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import type { ConfigSection } from './host';

export const SECTION = 'cctest';
export const INTERPRETER = 'interpreter';

/** Settings whose change needs a new server process; every other change is pushed to the server. */
export const RESTART_KEYS: readonly string[] = [INTERPRETER];

/** Settings that hold a path, where `${workspaceFolder}`, `${userHome}`, `${env:X}` and `~` work. */
const PATH_KEYS = new Set([INTERPRETER, 'defectLog', 'model']);

export interface PackageJsonLike {
  contributes?: { configuration?: { properties?: Record<string, unknown> } };
}

/** The server's setting names (camelCase, without `cctest.`), in package.json order. */
export function serverSettingKeys(packageJSON: PackageJsonLike): string[] {
  const props = packageJSON.contributes?.configuration?.properties ?? {};
  return Object.keys(props)
    .filter((k) => k.startsWith(`${SECTION}.`))
    .map((k) => k.slice(SECTION.length + 1))
    .filter((k) => k !== INTERPRETER);
}

/** `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~` in a path setting. */
export function resolveVariables(value: string, workspaceFolder: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  let out = value.replace(/\$\{(workspaceFolder|userHome|env:([^}]+))\}/g, (whole, name: string, envName?: string) => {
    if (envName !== undefined) {
      return env[envName] ?? '';
    }
    if (name === 'userHome') {
      return os.homedir();
    }
    return workspaceFolder ?? whole;
  });
  if (out === '~' || out.startsWith('~/')) {
    out = path.join(os.homedir(), out.slice(1));
  }
  return out;
}

/**
 * The settings object sent to the server (initializationOptions and didChangeConfiguration):
 * every server setting with its effective value, path settings resolved, empty strings as null
 * (VS Code's settings UI cannot write null for a string setting).
 */
export function readServerSettings(config: ConfigSection, keys: readonly string[], workspaceFolder?: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    let value = config.get<unknown>(key);
    if (value === undefined) {
      continue; // unknown to this VS Code's schema: let the server use its default
    }
    if (typeof value === 'string' && PATH_KEYS.has(key)) {
      value = value.trim() === '' ? null : resolveVariables(value, workspaceFolder);
    }
    out[key] = value;
  }
  return out;
}

/** The interpreter setting, resolved; undefined when empty. */
export function interpreterSetting(config: ConfigSection, workspaceFolder?: string): string | undefined {
  const raw = config.get<string>(INTERPRETER);
  return raw && raw.trim() ? resolveVariables(raw.trim(), workspaceFolder) : undefined;
}

export type ChangeAction = 'restart' | 'push' | 'none';

/** What a configuration change asks of the server, given `event.affectsConfiguration`. */
export function classifyChange(affects: (section: string) => boolean): ChangeAction {
  if (RESTART_KEYS.some((k) => affects(`${SECTION}.${k}`))) {
    return 'restart';
  }
  return affects(SECTION) ? 'push' : 'none';
}

/** Where a key is currently set, so a toggle writes back at the same level (default: user settings). */
export function targetOf(config: ConfigSection, key: string): 'global' | 'workspace' | 'workspaceFolder' {
  const where = config.inspect?.(key);
  if (where?.workspaceFolderValue !== undefined) {
    return 'workspaceFolder';
  }
  if (where?.workspaceValue !== undefined) {
    return 'workspace';
  }
  return 'global';
}
