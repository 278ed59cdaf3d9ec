import { parseArgs, type ParseArgsConfig } from 'node:util';
import { stderr, stdout } from 'node:process';
import { messageOf } from '../core/errors.js';

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

const HELP_OPTION = { help: { type: 'boolean', short: 'h' } } as const;

/** What `parseArgs` returns for a command with options `O` (and `--help`). */
export type ParsedCommandArgs<O extends OptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O & typeof HELP_OPTION; allowPositionals: true; strict: true }>
>;

/** Exit code of a usage error, the same for every command. */
export const USAGE_EXIT = 2;

/**
 * Writes a usage error in two lines to stderr, `resourcesync <command>: <problem>` and where the help is; returns
 * {@link USAGE_EXIT}. The help itself is printed only when asked for (`--help`).
 */
export function usageError(command: string, problem: unknown): number {
  const text = (messageOf(problem)).trim();
  stderr.write(`resourcesync ${command}: ${text}\n${usageHint(command)}\n`);
  return USAGE_EXIT;
}

/** The line that follows a usage error: where to read the options. */
export function usageHint(command?: string): string {
  return `See 'resourcesync ${command === undefined ? '' : `${command} `}--help'.`;
}

/**
 * Parses a command's arguments (strict, positionals allowed, `--help`/`-h` added). Returns the parsed values and
 * positionals, or the exit code once the command has nothing more to do: 0 after writing the help to stdout,
 * {@link USAGE_EXIT} after writing an unknown or malformed option and where the help is to stderr.
 * @example
 * const parsed = parseCommandArgs('inspect', args, { json: { type: 'boolean' } }, HELP);
 * if (typeof parsed === 'number') return parsed;
 */
export function parseCommandArgs<O extends OptionsConfig>(command: string, args: string[], options: O, help: string): ParsedCommandArgs<O> | number {
  let parsed: ParsedCommandArgs<O>;
  try {
    parsed = parseArgs({ args, options: { ...options, ...HELP_OPTION }, allowPositionals: true as const, strict: true as const });
  } catch (err) {
    return usageError(command, err);
  }
  if ((parsed.values as { help?: unknown }).help === true) {
    stdout.write(help);
    return 0;
  }
  return parsed;
}
