#!/usr/bin/env node
/**
 * The `resourcesync` binary. Each subcommand is a module `commands/<name>.js` exporting `run`,
 * loaded on demand so that start-up stays fast.
 */
import { stderr, stdout, argv, exit } from 'node:process';
import { COMMANDS, type CommandName } from './commands.js';
import { usage } from './usage.js';
import { usageHint } from './command-args.js';

async function main(args: string[]): Promise<number> {
  const [name, ...rest] = args;
  if (name === undefined || name === '-h' || name === '--help' || name === 'help') {
    stdout.write(usage());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-V') {
    const { createRequire } = await import('node:module');
    const pkg = createRequire(import.meta.url)('../../../package.json') as { version: string };
    stdout.write(`${pkg.version}\n`);
    return 0;
  }
  if (!(COMMANDS as readonly string[]).includes(name)) {
    stderr.write(`resourcesync: unknown command '${name}'.\n${usageHint()}\n`);
    return 2;
  }
  const mod = (await import(`./commands/${name as CommandName}.js`)) as { run(args: string[]): Promise<number> };
  return mod.run(rest);
}

// A reader that goes away (`resourcesync validate … | head -1`) ends the output, not the program with a trace.
for (const out of [stdout, stderr]) {
  out.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') exit(process.exitCode ?? 0);
    throw err;
  });
}

main(argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    stderr.write(`resourcesync: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    exit(70);
  },
);
