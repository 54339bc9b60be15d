import { validateHeaderName, validateHeaderValue } from 'node:http';
import { globalAgent } from 'node:https';
import { isIP, connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

export interface JsonResponse {
  status: number;
  /** Parsed JSON, or undefined for an empty or non-JSON body. */
  body: unknown;
}

export class HttpFailure extends Error {
  override name = 'HttpFailure';
  constructor(
    readonly kind: 'timeout' | 'network',
    message: string,
  ) {
    super(message);
  }
}

// Answers larger than this are not ours to read (a misrouted request, a hostile upstream).
const MAX_RESPONSE_BYTES = 1024 * 1024;
// A response head longer than this is not an HTTP answer we can use.
const MAX_HEAD_BYTES = 16 * 1024;
// Connections per upstream origin; further requests wait for one to be free.
const MAX_SOCKETS = 64;
// Idle connections are dropped this long before the server's announced keep-alive timeout.
const IDLE_MARGIN_MS = 1000;

/**
 * A small JSON-over-HTTP/1.1 client with keep-alive pools. Every issuance makes two upstream
 * calls (claims, dstorage), so the per-request work is kept small: measured here, a node:http
 * request costs about three times the CPU of this one (agent, ClientRequest, header map, parser
 * allocation, a corked writev), and fetch() about three times node:http. Each request is one
 * socket write (head and body together), the target is parsed once per URL, and the deadline is
 * one timer. Callers check the status.
 *
 * What it speaks: requests POST a JSON body with content-length; answers are read by
 * content-length, chunked transfer coding, or until close (HTTP/1.0 style), 1xx heads are
 * skipped, `connection: close` and `keep-alive: timeout=N` are honoured. https uses node:tls
 * with the process's trust (system roots, NODE_EXTRA_CA_CERTS, `https.globalAgent.options.ca`)
 * and the host as SNI name.
 */
export function postJson(
  url: string,
  payload: unknown,
  options: { headers?: Record<string, string>; timeoutMs: number; serialized?: boolean },
): Promise<JsonResponse> {
  return new Promise<JsonResponse>((resolve, reject) => {
    const target = targetFor(url);
    const body = options.serialized ? (payload as string) : JSON.stringify(payload);
    let head = `${target.head}content-length: ${Buffer.byteLength(body)}\r\n`;
    if (options.headers) {
      for (const name in options.headers) {
        const value = options.headers[name]!;
        // Refuses a name or value that would end the line (header injection), as node:http does.
        validateHeaderName(name);
        validateHeaderValue(name, value);
        head += `${name}: ${value}\r\n`;
      }
    }
    target.pool.send({ head: `${head}\r\n`, body, timeoutMs: options.timeoutMs, resolve, reject });
  });
}

interface Exchange {
  head: string;
  body: string;
  timeoutMs: number;
  resolve: (res: JsonResponse) => void;
  reject: (err: HttpFailure) => void;
}

interface Target {
  pool: Pool;
  /** Request line and the fixed headers of every request to this URL. */
  head: string;
}
// Parsed request targets by URL: the few upstream URLs are parsed once, not per request.
const targets = new Map<string, Target>();
const pools = new Map<string, Pool>();

function targetFor(url: string): Target {
  let target = targets.get(url);
  if (!target) {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new TypeError(`not an http(s) URL: ${url}`);
    const tls = u.protocol === 'https:';
    const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
    const port = Number(u.port || (tls ? 443 : 80));
    const key = `${u.protocol}//${u.host}`;
    let pool = pools.get(key);
    if (!pool) {
      pool = new Pool(host, port, tls);
      pools.set(key, pool);
    }
    // `u.host` keeps IPv6 brackets and a non-default port, as node:http writes Host.
    let head = `POST ${u.pathname}${u.search} HTTP/1.1\r\nhost: ${u.host}\r\ncontent-type: application/json\r\naccept: application/json\r\nconnection: keep-alive\r\n`;
    if (u.username || u.password) {
      const auth = `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`;
      head += `authorization: Basic ${Buffer.from(auth).toString('base64')}\r\n`;
    }
    target = { pool, head };
    if (targets.size >= 64) targets.clear();
    targets.set(url, target);
  }
  return target;
}

/** The keep-alive connections to one origin (most recently used first). */
class Pool {
  readonly #free: Connection[] = [];
  readonly #waiting: Exchange[] = [];
  #open = 0;

  constructor(
    readonly host: string,
    readonly port: number,
    readonly tls: boolean,
  ) {}

  send(exchange: Exchange): void {
    const now = Date.now();
    for (let conn = this.#free.pop(); conn !== undefined; conn = this.#free.pop()) {
      if (conn.usable(now)) {
        conn.start(exchange);
        return;
      }
      conn.destroy();
    }
    if (this.#open < MAX_SOCKETS) this.#connect(exchange);
    else this.#waiting.push(exchange);
  }

  /** An exchange ended: the connection serves the next waiting request, idles, or is gone. */
  done(conn: Connection, reusable: boolean): void {
    if (!reusable) {
      conn.destroy();
      return;
    }
    const next = this.#waiting.shift();
    if (next) conn.start(next);
    else this.#free.push(conn);
  }

  /** A connection closed (either side); its slot goes to a waiting request. */
  closed(conn: Connection): void {
    this.#open--;
    const at = this.#free.indexOf(conn);
    if (at !== -1) this.#free.splice(at, 1);
    const next = this.#waiting.shift();
    if (next) this.#connect(next);
  }

  #connect(exchange: Exchange): void {
    this.#open++;
    const socket = this.tls
      ? tlsConnect({
          host: this.host,
          port: this.port,
          servername: isIP(this.host) === 0 ? this.host : undefined,
          ca: globalAgent.options.ca,
          ALPNProtocols: ['http/1.1'],
        })
      : netConnect({ host: this.host, port: this.port });
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 1000);
    new Connection(this, socket).start(exchange);
  }
}

type BodyState = 'head' | 'length' | 'close' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailers';

/** One socket and the response it is reading. */
class Connection {
  #exchange: Exchange | undefined;
  #timer: NodeJS.Timeout | undefined;
  #buffered: Buffer = Buffer.alloc(0);
  #state: BodyState = 'head';
  #status = 0;
  #keepAlive = true;
  #remaining = 0;
  #chunks: Buffer[] = [];
  #size = 0;
  #idleSince = 0;
  #maxIdleMs = Number.POSITIVE_INFINITY;

  constructor(
    private readonly pool: Pool,
    private readonly socket: Socket,
  ) {
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.on('end', () => this.#ended());
    socket.on('error', () => this.#fail(new HttpFailure('network', 'unreachable')));
    socket.on('close', () => {
      this.#fail(new HttpFailure('network', 'unreachable'));
      pool.closed(this);
    });
  }

  /** Idle, open, and not past the keep-alive time the server announced. */
  usable(now: number): boolean {
    // readyState 'open': neither side has ended (a server's FIN makes it 'writeOnly').
    return (
      this.socket.readyState === 'open' && !this.socket.destroyed && now - this.#idleSince < this.#maxIdleMs
    );
  }

  start(exchange: Exchange): void {
    this.#exchange = exchange;
    this.#state = 'head';
    this.#status = 0;
    this.#keepAlive = true;
    this.#chunks = [];
    this.#size = 0;
    this.#buffered = Buffer.alloc(0);
    this.#timer = setTimeout(() => {
      this.#fail(new HttpFailure('timeout', `timed out after ${exchange.timeoutMs} ms`));
    }, exchange.timeoutMs);
    this.socket.ref();
    // One write: head and body together. A head with non-ASCII (latin1) header text is written
    // as latin1, as node:http writes heads; the body is UTF-8.
    if (Buffer.byteLength(exchange.head) === exchange.head.length)
      this.socket.write(exchange.head + exchange.body);
    else {
      this.socket.cork();
      this.socket.write(exchange.head, 'latin1');
      this.socket.write(exchange.body);
      process.nextTick(() => this.socket.uncork());
    }
  }

  destroy(): void {
    this.socket.destroy();
  }

  #fail(err: HttpFailure): void {
    const exchange = this.#exchange;
    if (!exchange) return;
    this.#exchange = undefined;
    clearTimeout(this.#timer);
    this.socket.destroy();
    exchange.reject(err);
  }

  #ended(): void {
    // An answer read until close is complete when the server closes.
    if (this.#exchange && this.#state === 'close') {
      this.#keepAlive = false;
      this.#complete();
    } else this.#fail(new HttpFailure('network', 'unreachable'));
  }

  #read(chunk: Buffer): void {
    if (!this.#exchange) {
      // Bytes nobody asked for: the connection is out of step.
      this.socket.destroy();
      return;
    }
    this.#buffered = this.#buffered.length === 0 ? chunk : Buffer.concat([this.#buffered, chunk]);
    try {
      this.#parse();
    } catch (err) {
      this.#fail(new HttpFailure('network', (err as Error).message));
    }
  }

  #parse(): void {
    for (;;) {
      const buf = this.#buffered;
      switch (this.#state) {
        case 'head': {
          const end = buf.indexOf('\r\n\r\n');
          if (end === -1) {
            if (buf.length > MAX_HEAD_BYTES) throw new Error('malformed response');
            return;
          }
          const done = this.#head(buf.toString('latin1', 0, end));
          this.#buffered = buf.subarray(end + 4);
          if (done) {
            this.#complete();
            return;
          }
          break;
        }
        case 'length':
        case 'chunk-data': {
          if (buf.length === 0) return;
          const take = Math.min(buf.length, this.#remaining);
          this.#body(buf.subarray(0, take));
          this.#remaining -= take;
          this.#buffered = buf.subarray(take);
          if (this.#remaining > 0) return;
          if (this.#state === 'length') {
            this.#complete();
            return;
          }
          this.#state = 'chunk-end';
          break;
        }
        case 'close':
          this.#body(buf);
          this.#buffered = Buffer.alloc(0);
          return;
        case 'chunk-end':
          if (buf.length < 2) return;
          if (buf[0] !== 13 || buf[1] !== 10) throw new Error('malformed response');
          this.#buffered = buf.subarray(2);
          this.#state = 'chunk-size';
          break;
        case 'chunk-size': {
          const end = buf.indexOf('\r\n');
          if (end === -1) {
            if (buf.length > 1024) throw new Error('malformed response');
            return;
          }
          const size = buf.toString('latin1', 0, end).split(';')[0]!.trim();
          if (!/^[0-9a-fA-F]{1,8}$/.test(size)) throw new Error('malformed response');
          this.#remaining = Number.parseInt(size, 16);
          this.#buffered = buf.subarray(end + 2);
          this.#state = this.#remaining === 0 ? 'trailers' : 'chunk-data';
          break;
        }
        case 'trailers': {
          const end = buf.indexOf('\r\n');
          if (end === -1) {
            if (buf.length > MAX_HEAD_BYTES) throw new Error('malformed response');
            return;
          }
          this.#buffered = buf.subarray(end + 2);
          if (end === 0) {
            this.#complete();
            return;
          }
          break;
        }
      }
    }
  }

  /** Reads a response head; true when the answer has no body. */
  #head(text: string): boolean {
    const lines = text.split('\r\n');
    const status = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: |$)/.exec(lines[0]!);
    if (!status) throw new Error('malformed response');
    this.#status = Number(status[2]);
    // 1xx (e.g. 103 Early Hints): an interim head; the answer follows.
    if (this.#status < 200) return false;
    let keepAlive = status[1] === '1';
    let length: number | undefined;
    let chunked = false;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon <= 0) throw new Error('malformed response');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'content-length') {
        if (!/^\d{1,15}$/.test(value) || (length !== undefined && length !== Number(value)))
          throw new Error('malformed response');
        length = Number(value);
      } else if (name === 'transfer-encoding') {
        chunked = /(?:^|,)\s*chunked\s*$/i.test(value);
        if (!chunked) throw new Error('malformed response');
      } else if (name === 'connection') {
        const tokens = value.toLowerCase();
        if (/(?:^|,)\s*close\s*(?:,|$)/.test(tokens)) keepAlive = false;
        else if (/(?:^|,)\s*keep-alive\s*(?:,|$)/.test(tokens)) keepAlive = true;
      } else if (name === 'keep-alive') {
        const timeout = /(?:^|,)\s*timeout=(\d+)/i.exec(value);
        if (timeout) this.#maxIdleMs = Number(timeout[1]) * 1000 - IDLE_MARGIN_MS;
      }
    }
    this.#keepAlive = keepAlive;
    this.#state = 'head';
    if (this.#status === 204 || this.#status === 304) return true;
    if (chunked) {
      // Both framings at once (RFC 9112 §6.3): read as chunked, then close.
      if (length !== undefined) this.#keepAlive = false;
      this.#state = 'chunk-size';
      return false;
    }
    if (length !== undefined) {
      this.#remaining = length;
      if (length > MAX_RESPONSE_BYTES) throw new Error('response too large');
      this.#state = 'length';
      return length === 0;
    }
    this.#keepAlive = false;
    this.#state = 'close';
    return false;
  }

  #body(part: Buffer): void {
    this.#size += part.length;
    if (this.#size > MAX_RESPONSE_BYTES) throw new Error('response too large');
    this.#chunks.push(part);
  }

  #complete(): void {
    const exchange = this.#exchange!;
    this.#exchange = undefined;
    clearTimeout(this.#timer);
    // Bytes past the answer: the connection is out of step.
    const reusable = this.#keepAlive && this.#buffered.length === 0;
    // Read before the connection is handed on: `start` resets them for the next exchange.
    const status = this.#status;
    const chunks = this.#chunks;
    this.#chunks = [];
    this.#buffered = Buffer.alloc(0);
    if (reusable) {
      this.#idleSince = Date.now();
      this.socket.unref();
    }
    this.pool.done(this, reusable);
    const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    exchange.resolve({ status, body: parsed });
  }
}
