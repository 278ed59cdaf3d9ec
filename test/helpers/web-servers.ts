/**
 * Web servers nobody here wrote (nginx, Apache httpd, lighttpd, busybox httpd, `python3 -m http.server`),
 * started in the foreground on 127.0.0.1 with a configuration written into a temporary folder (no system
 * configuration, no daemon), serving one document root. Used by test/real-servers.test.ts.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { delimiter, join } from 'node:path';

/** A web server we know how to start. */
export interface WebServerKind {
  name: string;
  /** The executable, or undefined when the server is not installed. */
  find(): string | undefined;
  /** Writes the configuration into `dir` and returns the command line that serves `root` on 127.0.0.1:`port`. */
  configure(bin: string, dir: string, root: string, port: number): Promise<string[]>;
}

const isRoot = process.getuid?.() === 0;

/** An executable on PATH or in the sbin folders (nginx, apache2 and lighttpd live there). */
function which(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/local/sbin', '/usr/sbin', '/sbin'];
  for (const d of dirs) {
    if (d === '') continue;
    const p = join(d, name);
    if (existsSync(p)) return p;
  }
  return undefined;
}

const TEXT_TYPES = { txt: 'text/plain', xml: 'application/xml', zip: 'application/zip', html: 'text/html' } as const;

export const WEB_SERVERS: WebServerKind[] = [
  {
    name: 'nginx',
    find: () => which('nginx'),
    async configure(bin, dir, root, port) {
      // gzip on for text and XML: the client must decode it (no Content-Length, chunked); weak ETags then
      const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${join(dir, 'nginx-temp', t)};`).join('\n  ');
      await mkdir(join(dir, 'nginx-temp'), { recursive: true });
      await writeFile(
        join(dir, 'nginx.conf'),
        `daemon off;
worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'nginx-error.log')} warn;
${isRoot ? 'user root root;' : ''}
events { worker_connections 256; }
http {
  access_log off;
  ${temp}
  types { ${Object.entries(TEXT_TYPES).map(([e, t]) => `${t} ${e};`).join(' ')} }
  default_type application/octet-stream;
  sendfile on;
  keepalive_requests 100;
  gzip on;
  gzip_min_length 64;
  gzip_types text/plain application/xml;
  server {
    listen 127.0.0.1:${port};
    root ${root};
  }
}
`,
      );
      return [bin, '-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'nginx-error.log')];
    },
  },
  {
    name: 'apache2',
    find: () => (existsSync('/usr/lib/apache2/modules/mod_mpm_event.so') ? which('apache2') : undefined),
    async configure(bin, dir, root, port) {
      // Apache refuses to serve as root: the children run as www-data, so the tree must be world-readable
      const mod = (name: string): string => `LoadModule ${name}_module /usr/lib/apache2/modules/mod_${name}.so`;
      await writeFile(
        join(dir, 'httpd.conf'),
        `ServerRoot "${dir}"
DefaultRuntimeDir "${dir}"
PidFile "${join(dir, 'httpd.pid')}"
ErrorLog "${join(dir, 'httpd-error.log')}"
LogLevel warn
Listen 127.0.0.1:${port}
ServerName 127.0.0.1
${mod('mpm_event')}
${mod('authz_core')}
${mod('mime')}
${isRoot ? 'User www-data\nGroup www-data' : ''}
StartServers 1
ServerLimit 2
ThreadsPerChild 25
MaxRequestWorkers 50
KeepAlive On
MaxKeepAliveRequests 20
KeepAliveTimeout 5
TypesConfig /dev/null
${Object.entries(TEXT_TYPES).map(([e, t]) => `AddType ${t} .${e}`).join('\n')}
DocumentRoot "${root}"
<Directory />
  Require all denied
  AllowOverride None
</Directory>
<Directory "${root}">
  Require all granted
  Options None
</Directory>
`,
      );
      return [bin, '-f', join(dir, 'httpd.conf'), '-DFOREGROUND'];
    },
  },
  {
    name: 'lighttpd',
    find: () => which('lighttpd'),
    async configure(bin, dir, root, port) {
      const deflate = existsSync('/usr/lib/lighttpd/mod_deflate.so'); // Debian: lighttpd-mod-deflate
      // mod_deflate with brotli first: the client must decode `br`; errors go to stderr (the log would be opened
      // after the switch to www-data)
      await writeFile(
        join(dir, 'lighttpd.conf'),
        `server.document-root = "${root}"
server.bind = "127.0.0.1"
server.port = ${port}
${isRoot ? 'server.username = "www-data"\nserver.groupname = "www-data"' : ''}
${deflate ? 'server.modules = ( "mod_deflate" )\ndeflate.mimetypes = ( "text/plain", "application/xml" )\ndeflate.allowed-encodings = ( "br", "gzip" )' : ''}
server.max-keep-alive-requests = 50
mimetype.assign = ( ${Object.entries(TEXT_TYPES).map(([e, t]) => `".${e}" => "${t}", `).join('')}"" => "application/octet-stream" )
`,
      );
      return [bin, '-D', '-f', join(dir, 'lighttpd.conf'), '-m', '/usr/lib/lighttpd'];
    },
  },
  {
    name: 'busybox httpd',
    find: () => {
      const bin = which('busybox');
      if (bin === undefined) return undefined;
      const list = spawnSync(bin, ['--list'], { encoding: 'utf8' });
      return list.stdout?.split('\n').includes('httpd') ? bin : undefined;
    },
    async configure(bin, dir, root, port) {
      await writeFile(join(dir, 'busybox-httpd.conf'), `${Object.entries(TEXT_TYPES).map(([e, t]) => `.${e}:${t}`).join('\n')}\n`);
      return [bin, 'httpd', '-f', '-p', `127.0.0.1:${port}`, '-h', root, '-c', join(dir, 'busybox-httpd.conf')];
    },
  },
  {
    name: 'python3 -m http.server',
    find: () => {
      const bin = which('python3');
      if (bin === undefined) return undefined;
      return spawnSync(bin, ['-c', 'import http.server'], { stdio: 'ignore' }).status === 0 ? bin : undefined;
    },
    async configure(bin, _dir, root, port) {
      return [bin, '-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', root];
    },
  },
];

/** A port that was free a moment ago on 127.0.0.1 (the servers need it in their configuration). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** One GET on loopback; resolves with the status (or 0 when the connection failed). */
function statusOf(port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

/** A started server; `stop()` ends it and every process it started. */
export interface RunningServer {
  readonly origin: string;
  /** What the server wrote on stdout and stderr so far (for failure messages). */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts `kind` serving `root`, in its own process group, and waits (at most 15 s) until `readyPath` answers 200.
 * A server that exits at once (another process took the port between the choice and the bind) is started again
 * on another port, three times at most.
 */
export async function startWebServer(kind: WebServerKind, bin: string, dir: string, root: string, readyPath: string): Promise<RunningServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(kind, bin, dir, root, readyPath);
    } catch (err) {
      if (attempt >= 3 || !(err instanceof ExitedEarly)) throw err;
    }
  }
}

class ExitedEarly extends Error {}

async function startOnce(kind: WebServerKind, bin: string, dir: string, root: string, readyPath: string): Promise<RunningServer> {
  const port = await freePort();
  const [cmd, ...args] = await kind.configure(bin, dir, root, port);
  let output = '';
  const child: ChildProcess = spawn(cmd!, args, { cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('error', (err) => (output += `\n${String(err)}`));
  const stop = async (): Promise<void> => {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    // the group: nginx and Apache fork workers; SIGTERM lets the master stop them
    const kill = (sig: NodeJS.Signals): void => {
      try {
        process.kill(-child.pid!, sig);
      } catch {
        /* already gone */
      }
    };
    kill('SIGTERM');
    const timer = setTimeout(() => kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
    kill('SIGKILL'); // workers left behind by a master that died first
  };
  // polled until it answers: 60 s at most, however busy the machine (and at most 3,000 tries)
  const deadline = Date.now() + 60_000;
  for (let i = 0; i < 3000 && Date.now() < deadline; i++) {
    if (child.exitCode !== null) break;
    if ((await statusOf(port, readyPath)) === 200) return { origin: `http://127.0.0.1:${port}`, output: () => output, stop };
    await new Promise((r) => setTimeout(r, 50));
  }
  const early = child.exitCode !== null;
  await stop();
  const message = `${kind.name} did not answer on 127.0.0.1:${port} (exit ${child.exitCode}); output:\n${output}`;
  throw early ? new ExitedEarly(message) : new Error(message);
}
