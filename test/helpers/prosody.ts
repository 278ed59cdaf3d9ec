/**
 * A Prosody XMPP server (Debian package `prosody`) for tests: its own configuration, data and log in a temporary
 * folder, client connections on 127.0.0.1 at a free port, no server-to-server, HTTP or system service; the virtual
 * host `localhost` with a PubSub component `pubsub.localhost`. Users are registered with `prosodyctl register`
 * before it starts. `PROSODY` is undefined where it is not installed (tests skip, saying so).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { exited } from './exited.js';

function which(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/bin', '/usr/sbin'])) {
    const p = join(dir, name);
    if (dir !== '' && existsSync(p)) return p;
  }
  return undefined;
}

/** The `prosody` and `prosodyctl` binaries, or undefined. */
const PROSODY: { prosody: string; prosodyctl: string } | undefined = (() => {
  const prosody = which('prosody');
  const prosodyctl = which('prosodyctl');
  return prosody !== undefined && prosodyctl !== undefined ? { prosody, prosodyctl } : undefined;
})();

/** Why the Prosody tests skip here, or false. */
export const PROSODY_SKIP: string | false = PROSODY === undefined ? 'prosody is not installed (apt-get install prosody)' : false;

export const DOMAIN = 'localhost';
export const SERVICE = 'pubsub.localhost';

export interface ProsodyOptions {
  /** user → password, registered on `localhost`. */
  users: Record<string, string>;
  /** Bare JIDs that administer the server (and so may create PubSub nodes). */
  admins?: string[];
  /** `c2s_stanza_size_limit` (bytes). */
  stanzaSizeLimit?: number;
  /** Certificate and key (PEM files) for STARTTLS on `localhost`; without them TLS is not offered. */
  tls?: { certificate: string; key: string };
}

async function freePort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

async function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** A running test server. */
export class Prosody {
  readonly port: number;
  readonly dir: string;
  readonly config: string;
  #child: ChildProcess | undefined;
  #out = '';

  private constructor(dir: string, port: number) {
    this.dir = dir;
    this.port = port;
    this.config = join(dir, 'prosody.cfg.lua');
  }

  /** Writes the configuration into `dir`, registers the users and starts the server. */
  static async start(dir: string, o: ProsodyOptions): Promise<Prosody> {
    if (PROSODY === undefined) throw new Error('prosody is not installed');
    const p = new Prosody(dir, await freePort());
    await mkdir(join(dir, 'data'), { recursive: true });
    await mkdir(join(dir, 'certs'), { recursive: true });
    const q = (s: string): string => JSON.stringify(s);
    const lines = [
      'run_as_root = true',
      `pidfile = ${q(join(dir, 'prosody.pid'))}`,
      `data_path = ${q(join(dir, 'data'))}`,
      `certificates = ${q(join(dir, 'certs'))}`,
      'interfaces = { "127.0.0.1" }',
      'local_interfaces = { "127.0.0.1" }',
      `c2s_ports = { ${p.port} }`,
      'c2s_direct_tls_ports = { }',
      'legacy_ssl_ports = { }',
      's2s_ports = { }',
      'component_ports = { }',
      'http_ports = { }',
      'https_ports = { }',
      'modules_enabled = { "roster"; "saslauth"; "disco"; "ping"' + (o.tls ? '; "tls"' : '') + ' }',
      'modules_disabled = { "s2s"; "offline" }',
      `admins = { ${(o.admins ?? []).map(q).join('; ')} }`,
      'authentication = "internal_hashed"',
      'storage = "internal"',
      'c2s_require_encryption = false',
      'allow_unencrypted_plain_auth = false',
      ...(o.stanzaSizeLimit === undefined ? [] : [`c2s_stanza_size_limit = ${o.stanzaSizeLimit}`]),
      `log = { { levels = { min = "info" }, to = "file", filename = ${q(join(dir, 'prosody.log'))} } }`,
      `VirtualHost ${q(DOMAIN)}`,
      ...(o.tls ? [`  ssl = { certificate = ${q(o.tls.certificate)}; key = ${q(o.tls.key)} }`] : []),
      `Component ${q(SERVICE)} "pubsub"`,
      '',
    ];
    await writeFile(p.config, lines.join('\n'));
    for (const [user, password] of Object.entries(o.users)) {
      const r = spawnSync(PROSODY.prosodyctl, ['--config', p.config, 'register', user, DOMAIN, password], { encoding: 'utf8', timeout: 20_000 });
      if (r.status !== 0) throw new Error(`prosodyctl register ${user} failed: ${r.stdout}${r.stderr}`);
    }
    await p.resume();
    return p;
  }

  /** Starts the server again (after {@link stop}), on the same port with the same data; nothing when it runs. */
  async resume(): Promise<void> {
    if (this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null) return;
    const child = spawn(PROSODY!.prosody, ['--config', this.config, '-F'], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    child.stdout.on('data', (d: Buffer) => (this.#out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (this.#out += d.toString()));
    const deadline = Date.now() + 20_000;
    while (!(await accepting(this.port))) {
      if (child.exitCode !== null || Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`prosody did not start on port ${this.port}: ${this.#out}\n${await this.log()}`);
      }
      await sleep(50);
    }
  }

  /** Stops the server (SIGTERM; SIGKILL after 10 s). */
  async stop(): Promise<void> {
    const child = this.#child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await exited(child, 10_000).catch(() => undefined);
  }

  /** The server's log so far. */
  async log(): Promise<string> {
    return readFile(join(this.dir, 'prosody.log'), 'utf8').catch(() => '');
  }
}

/** A self-signed certificate for `localhost` made with `openssl` in `dir`, or undefined without `openssl`. */
export function selfSignedCertificate(dir: string): { certificate: string; key: string } | undefined {
  const openssl = which('openssl');
  if (openssl === undefined) return undefined;
  const certificate = join(dir, 'localhost.crt');
  const key = join(dir, 'localhost.key');
  const r = spawnSync(
    openssl,
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost', '-keyout', key, '-out', certificate],
    { encoding: 'utf8', timeout: 20_000 },
  );
  return r.status === 0 ? { certificate, key } : undefined;
}
