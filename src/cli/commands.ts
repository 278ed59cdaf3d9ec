/** Subcommands of the `resourcesync` binary; each is `commands/<name>.ts` exporting `run(args)`. */
export const COMMANDS = ['validate', 'inspect', 'demo', 'build', 'serve', 'sync', 'audit', 'simulate', 'check', 'explore', 'hub', 'links', 'oai-pmh', 'worker'] as const;
export type CommandName = (typeof COMMANDS)[number];
