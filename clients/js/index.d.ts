// Type declarations of ragdolld-client (src/index.js). Units SI, Y up;
// ids are integers below 2^53; the wire is protocol/PROTOCOL.md.

export type Vec3 = [number, number, number];
/** A unit quaternion [x, y, z, w]. */
export type Quat = [number, number, number, number];

/** An error reply's code (PROTOCOL.md §2). */
export type ErrorCode =
  | 'bad_json' | 'bad_request' | 'unknown_op' | 'not_found' | 'out_of_range' | 'not_finite'
  | 'too_large' | 'bad_state' | 'forbidden' | 'rate_limited' | 'unavailable' | 'internal';

/** A success reply: `re`, `ok`, `tick` and the op's fields. */
export interface Reply {
  re: number | null;
  ok: true;
  tick?: number;
  [field: string]: unknown;
}

/** Rejected by every command whose reply is an error. */
export class RagdollError extends Error {
  readonly code: ErrorCode;
  readonly reply: { re: number | null; error: { code: ErrorCode; message: string } };
}

/** A bone: its name is null until the client learned it (describe, binary snapshots). */
export interface Bone { name?: string | null; p: Vec3; q: Quat }

/** An entity of a snapshot, JSON-shaped (PROTOCOL.md §5.1) whatever the format. */
export interface EntityRecord {
  entity: number;
  kind: 'rope' | 'cloth' | 'ragdoll' | 'character' | 'ball' | 'softbody';
  state?: 'animated' | 'ragdoll' | 'getting_up' | 'partial';
  particles?: Vec3[];
  bones?: Bone[];
  p?: Vec3;
  q?: Quat;
  /** Binary snapshots: the wire tick (mod 65536) of the frame that last carried it. */
  tick16?: number;
  [topology: string]: unknown;
}

export interface Snapshot {
  world: number;
  tick: number;
  delta?: boolean;
  /**
   * Binary snapshots: true for a partial frame (a subscription with
   * bytes_per_s, PROTOCOL.md §5.2): `entities` is still every entity the
   * client knows, each as the frame that last carried it.
   */
  partial?: boolean;
  /** Partial frames: the client's view was emptied before this frame applied. */
  reset?: boolean;
  /** Partial frames: the ids this frame removed from the view. */
  removed?: number[];
  /** Partial frames: the ids this frame carried, in its order. */
  carried?: number[];
  entities: EntityRecord[];
  metrics?: Record<string, number>;
}

export interface InterpolationInfo {
  delayMs: number;
  jitterMs: number;
  renderTick: number;
  /** The older snapshot drawn: the tick to give as seenTick when aiming at what is drawn. */
  tickA: number;
  tickB: number;
  alpha: number;
  held: boolean;
}

/** Snapshot interpolation: a delay of two send intervals plus the RFC 3550 jitter. */
export class Interpolator {
  constructor(tickHz: number, rateHz: number, depth?: number);
  push(snapshot: Snapshot, atMs: number): void;
  sample(nowMs: number): { snapshot: Snapshot; info: InterpolationInfo } | null;
}

export function slerp(a: Quat, b: Quat, t: number): Quat;

export interface SubscribeOptions {
  format?: 'binary' | 'json';
  rate_hz?: number;
  events?: Array<'impact' | 'joint_limit'>;
  impact_speed?: number;
  /** A byte budget, 1000 to 1e8 bytes a second (PROTOCOL.md §5.3): binary snapshots come as partial frames. */
  bytes_per_s?: number;
  /** Keep an interpolation buffer (true). */
  interpolate?: boolean;
}

export class Subscription {
  readonly world: number;
  /** The subscribe reply (again after each reconnect). */
  readonly reply: Reply | null;
  readonly latest: Snapshot | null;
  readonly interpolator: Interpolator | null;
  /** The world a moment ago, between the two snapshots around it. */
  sample(atMs?: number): { snapshot: Snapshot; info: InterpolationInfo } | null;
  /**
   * set_focus (PROTOCOL.md §3, §5.3): where this client looks, m (null: no
   * focus), and the radius of full priority for a byte budget, m (15).
   * Remembered and sent again after every reconnect.
   */
  setFocus(point: [number, number, number] | null, radius?: number): Promise<Reply>;
  close(): Promise<void>;
}

export interface ClientOptions {
  /** An access token (PROTOCOL.md §6): 16-128 characters of A-Z a-z 0-9 . _ ~ - */
  token?: string;
  /** The WebSocket class: the global one, else the `ws` package (Node). */
  WebSocket?: unknown;
  /** Reconnect with backoff after a loss (true). */
  reconnect?: boolean;
  /** How long connect() waits for the server's welcome, ms (10000). */
  connectTimeoutMs?: number;
}

/** Options of kill, apply_impulse and raycast. */
export interface HitOptions {
  /** The snapshot tick aimed at (lag compensation). */
  seenTick?: number;
  bone?: string;
  particle?: number;
  point?: Vec3;
  maxDistance?: number;
}

export interface Hit {
  kind: 'ground' | 'box' | 'bone' | 'ball' | 'particle';
  entity?: number;
  bone?: string;
  particle?: number;
  box?: number;
  point: Vec3;
  normal: Vec3;
  distance: number;
}

export interface Impact {
  entity: number;
  bone?: string;
  with: 'ground' | 'box' | 'body';
  box?: number;
  other?: number;
  other_bone?: string;
  point: Vec3;
  normal: Vec3;
  speed: number;
}

export interface ImpactsEvent { ev: 'impacts'; world: number; tick: number; impacts: Impact[]; dropped?: number }
export interface LimitHitsEvent {
  ev: 'limit_hits'; world: number; tick: number; dropped?: number;
  hits: Array<{ entity: number; bone: string; limit: 'twist_max' | 'twist_min' | 'swing'; speed: number }>;
}
export interface WorldEvent { ev: string; world?: number; tick?: number; [field: string]: unknown }

export class RagdollClient {
  static connect(url: string, options?: ClientOptions): Promise<RagdollClient>;
  readonly welcome: WorldEvent | null;
  readonly stats: { frames: number; bytes: number; snapshots: number; deltas: number; partials: number; acks: number; resyncs: number; errors: number; describes: number };
  on(name: 'impacts', fn: (ev: ImpactsEvent) => void): () => void;
  on(name: 'limit_hits', fn: (ev: LimitHitsEvent) => void): () => void;
  on(name: 'status', fn: (s: { state: 'connecting' | 'open' | 'closed'; text: string }) => void): () => void;
  on(name: 'log', fn: (text: string) => void): () => void;
  on(name: string, fn: (ev: WorldEvent) => void): () => void;
  send(cmd: { op: string; [field: string]: unknown }): Promise<Reply>;
  close(): void;
  subscribe(world: number, options?: SubscribeOptions, onSnapshot?: (s: Snapshot) => void): Promise<Subscription>;
  listWorlds(): Promise<Reply & { worlds: Array<{ world: number; name: string; tick: number; tick_hz: number; entities: number; solver: string }> }>;
  createWorld(name: string, options?: { tick_hz?: number; solver?: 'xpbd' | 'soft_step'; template?: string; limits?: Record<string, number> }): Promise<Reply & { world: number }>;
  destroyWorld(world: number): Promise<Reply>;
  spawnCharacter(world: number, position: Vec3, options?: { facing?: number; skeleton?: string; clip?: string; solver?: 'maximal' | 'reduced'; state?: 'animated' | 'ragdoll' }): Promise<Reply & { entity: number }>;
  spawnBall(world: number, position: Vec3, options?: { velocity?: Vec3; radius?: number; mass?: number }): Promise<Reply & { entity: number }>;
  despawn(world: number, entity: number): Promise<Reply>;
  describe(world: number, entity: number): Promise<Reply>;
  kill(world: number, entity: number, hitPoint: Vec3, impulse: Vec3, options?: HitOptions): Promise<Reply & { bone: string; seen_tick?: number; clamped?: boolean }>;
  applyImpulse(world: number, entity: number, impulse: Vec3, options?: HitOptions): Promise<Reply>;
  raycast(world: number, origin: Vec3, direction: Vec3, options?: HitOptions): Promise<Reply & { hit: Hit | null; seen_tick?: number; clamped?: boolean }>;
  startGetup(world: number, entity: number, blendTime?: number): Promise<Reply & { clip: string }>;
  setParams(world: number, params: Record<string, unknown>): Promise<Reply>;
}

export function connect(url: string, options?: ClientOptions): Promise<RagdollClient>;

// The lower layers, which the viewer uses directly.
export class Connection {
  constructor(url: string, handlers: {
    welcome?(msg: WorldEvent): void; message?(msg: WorldEvent): void; binary?(bytes: Uint8Array): void;
    status?(state: 'connecting' | 'open' | 'closed', text: string): void; bytes?(n: number): void; refused?(): void;
  }, protocols: string[], probeUrl?: string | null, WebSocketImpl?: unknown);
  readonly isOpen: boolean;
  send(cmd: { op: string; [field: string]: unknown }): Promise<Reply | { re: number | null; error: { code: ErrorCode; message: string } }>;
  sendBinary(bytes: Uint8Array): boolean;
  close(): void;
}
export class SnapshotStream {
  constructor(reply: Reply, link: { send(cmd: object): Promise<unknown>; sendBinary(b: Uint8Array): boolean; log(text: string): void; now?(): number }, stats?: object);
  receive(bytes: Uint8Array, now?: number): Snapshot | null;
  close(): void;
}
export function newStats(): RagdollClient['stats'];
export const RESYNC_RETRY_MS: number;
export const DESCRIBE_RETRY_MS: number;
/** An entity as the decoder holds it: f is x, y, z per particle or x, y, z, qx, qy, qz, qw per body. */
export interface DecodedEntity {
  entity: number;
  /** KIND's number. */
  kind: number;
  /** Characters: STATE_NAME's index. */
  state: number;
  /** Particles or bodies. */
  count: number;
  /** The integers on the wire. */
  vals: Int32Array;
  f: Float64Array;
  /** The wire tick of the frame that last carried it. */
  tick16: number;
}
export interface DecodedSnapshot {
  world: number;
  tick16: number;
  delta: boolean;
  baseline16: number | null;
  partial: boolean;
  /** Partial frames only. */
  reset?: boolean;
  removed?: number[];
  carried?: number[];
  /** The frame's entities; for a partial frame, the decoder's whole view. */
  entities: DecodedEntity[];
}
export class Decoder { decode(bytes: Uint8Array | ArrayBuffer): DecodedSnapshot }
export class BaselineError extends Error {
  readonly baseline16: number;
  /** A partial frame's entity whose baseline is missing; null for a delta. */
  readonly entity: number | null;
}
export function unwrapTick(near: number, tick16: number): number;
export function ackFrame(world: number, tick: number): Uint8Array;
export function peekWorld(bytes: Uint8Array | ArrayBuffer): number | null;
export function kindName(kind: number): string;
export function stateName(state: number): string;
export const KIND: Record<string, number>;
export const KIND_NAME: string[];
export const STATE_NAME: string[];
export const BASELINES: number;
export const MAX_SKELETON_BONES: number;
export const SUBPROTOCOL: string;
export const AUTH_PREFIX: string;
export const TOKEN_FORM: RegExp;
export function protocolsFor(hash: string): { protocols: string[] | null; token: boolean; error: string | null };
export function refusalMessage(withToken: boolean): string;
