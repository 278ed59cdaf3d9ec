/** Top-level help text. */
export function usage(): string {
  return `Usage: resourcesync <command> [options]

Commands:
  validate [--spec 1.0|1.1] [--json] <file-or-url>...   check documents against Z39.99
  inspect [--json] <file-or-url>                        describe a document
  build <dir> --base-url <url> --out <publish-dir>      write a Source's documents for a web server
  build --jsonl <file|-> | --pg-inventory <url> ...    the same from a JSON-lines feed or a PostgreSQL query
  serve <dir>... [--port N] [--host H] [--base-url URL] publish directories as a Source over HTTP
  oai-pmh <oai-base-url> [--port N | --out DIR]         publish an OAI-PMH repository as a Source
  sync <source-url> <dest-dir> [--delete] [--json]      mirror a Source into a directory
  worker --queue <postgres-url> [--concurrency N]       fetch the chunks of 'sync --queue' runs
  audit <source-url> <dest-dir> [--json]                compare a mirror with its Source
  links <dest-dir> [<url-or-path>] [--json]             the §14 links a mirror keeps for its resources
  check <url> [--json] [--html FILE] [--sample N]       crawl a live Source and judge it whole
  explore <url> [--json] [--depth N]                    print a Source's document tree
  explore --web <url> [--port N]                        the explorer page: tree, entries, timeline, check
  simulate [--resources N] [--rate R] [--seed S]        a live Source that changes at a seeded rate
  hub [--port N] [--host H] [--data DIR]                run a WebSub hub for notifications
  demo                                                  run the bundled demonstration

Run 'resourcesync <command> --help' for the options of a command.
`;
}
