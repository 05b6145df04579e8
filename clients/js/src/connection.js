// The WebSocket link to ragdolld (protocol/PROTOCOL.md): commands with ids
// whose replies resolve promises, events handed to a callback, binary frames
// (snapshots, §5.2) handed to another, binary frames out (acks), and
// reconnection with exponential backoff when the socket closes. The
// subprotocols offered (with an access token or without) come from auth.js.
// The low layer of client.js, and what the viewer talks through. Works with
// the browser's WebSocket or any class of the same shape (`ws` in Node).

const REPLY_TIMEOUT_MS = 10000;
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 8000;

export class Connection {
  /**
   * handlers: {
   *   welcome(msg)          – a (re)connected session's welcome event,
   *   message(msg)          – every other event (and stray replies),
   *   binary(bytes)         – a binary frame (Uint8Array): a snapshot,
   *   status(state, text)   – state is 'connecting' | 'open' | 'closed',
   *   bytes(n)              – size of every frame received, text or binary (for the HUD),
   *   refused()             – the server answers HTTP (probeUrl) but refused the
   *                           WebSocket upgrade: a browser cannot see the status
   *                           (401 token, 403 origin, 429, 503 full), only that
   *                           the socket closed before it opened,
   * }
   * protocols: the subprotocols to offer (auth.js protocolsFor); probeUrl: a
   * plain GET on the same server (/healthz) that tells a refusal from a
   * server that is down (null: none). WebSocketImpl: the WebSocket class
   * (the global one by default; `ws` in Node).
   */
  constructor(url, handlers, protocols, probeUrl, WebSocketImpl = globalThis.WebSocket) {
    this.WebSocket = WebSocketImpl;
    this.url = url;
    this.h = handlers;
    this.protocols = protocols;
    this.probeUrl = probeUrl;
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map(); // id -> { resolve, reject, timer }
    this.attempt = 0;
    this.retryTimer = 0;
    this.refusedLast = false; // the last attempt was refused (not: nobody there)
    this.connect();
  }

  get isOpen() {
    return this.ws !== null && this.ws.readyState === 1; // OPEN
  }

  connect() {
    this.h.status?.('connecting', this.attempt === 0 ? 'connecting' : 'reconnecting');
    const ws = new this.WebSocket(this.url, this.protocols);
    let opened = false;
    ws.onopen = () => {
      opened = true;
      this.refusedLast = false;
    };
    // Snapshots are decoded as soon as they arrive: no Blob round trip.
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    let welcomed = false;
    ws.onmessage = (e) => {
      if (typeof e.data !== 'string') {
        this.h.bytes?.(e.data.byteLength);
        this.h.binary?.(new Uint8Array(e.data));
        return;
      }
      this.h.bytes?.(utf8Length(e.data));
      let msg;
      try {
        msg = JSON.parse(e.data);
      } catch {
        return;
      }
      if (!welcomed && msg.ev === 'welcome') {
        welcomed = true;
        this.attempt = 0; // a server that answers resets the backoff
        this.h.status?.('open', 'connected');
        this.h.welcome?.(msg);
        return;
      }
      if ('re' in msg && this.pending.has(msg.re)) {
        const p = this.pending.get(msg.re);
        this.pending.delete(msg.re);
        clearTimeout(p.timer);
        p.resolve(msg);
        return;
      }
      this.h.message?.(msg);
    };
    ws.onclose = () => {
      if (this.ws !== ws || this.closed) return;
      this.ws = null;
      for (const p of this.pending.values()) {
        clearTimeout(p.timer);
        p.reject(new Error('connection closed'));
      }
      this.pending.clear();
      const delay = this.scheduleReconnect(!opened && this.refusedLast ? 'refused' : 'offline');
      if (!opened && this.probeUrl) {
        // Closed before it opened: refused, or nobody there. An HTTP answer
        // of any status from the same server says it is up.
        const said = (refused) => {
          const changed = refused !== this.refusedLast;
          this.refusedLast = refused;
          if (this.ws !== null) return; // the next attempt is under way
          if (changed) this.h.status?.('closed', `${refused ? 'refused' : 'offline'} · retry ${(delay / 1000).toFixed(1)} s`);
          if (refused) this.h.refused?.();
        };
        fetch(this.probeUrl, { cache: 'no-store' }).then(() => said(true), () => said(false));
      }
    };
    // An error is always followed by a close; the close handler does the work.
    ws.onerror = () => {};
  }

  /** Closes for good: no reconnecting; pending commands are rejected. */
  close() {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const ws = this.ws;
    this.ws = null;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new Error('connection closed'));
    }
    this.pending.clear();
    if (ws !== null) ws.close();
  }

  /** Waits (with backoff) and connects again; `why` is the badge's word. Returns the wait, ms. */
  scheduleReconnect(why = 'offline') {
    if (this.closed) return 0;
    const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.attempt);
    // Jitter so that many viewers of a restarted server do not reconnect in step.
    const delay = Math.round(base * (0.75 + 0.5 * Math.random()));
    this.attempt++;
    this.retryTimer = setTimeout(() => this.connect(), delay);
    // Told after the retry is set, so that a handler may close() to stop it.
    this.h.status?.('closed', `${why} · retry ${(delay / 1000).toFixed(1)} s`);
    return delay;
  }

  /**
   * Sends a command and resolves with its reply (success or error object,
   * the caller decides). Rejects when not connected or on timeout.
   */
  send(cmd) {
    if (!this.isOpen) return Promise.reject(new Error('not connected'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`no reply to ${cmd.op}`));
      }, REPLY_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      this.ws.send(JSON.stringify({ ...cmd, id }));
    });
  }

  /** Sends a binary frame (an ack); false when not connected. */
  sendBinary(bytes) {
    if (!this.isOpen) return false;
    this.ws.send(bytes);
    return true;
  }
}

// Bytes on the wire of a text frame. The server's JSON is ASCII in practice,
// so the string length is exact and cheap; fall back to encoding otherwise.
const NON_ASCII = /[^\x00-\x7f]/;
const encoder = new TextEncoder();
function utf8Length(s) {
  return NON_ASCII.test(s) ? encoder.encode(s).length : s.length;
}
