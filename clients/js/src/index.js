// ragdolld-client: the JavaScript client of ragdolld (README.md).
export { RagdollClient, RagdollError, Subscription, connect } from './client.js';
export { Interpolator, slerp } from './interp.js';
export { Connection } from './connection.js';
export { SnapshotStream, newStats, RESYNC_RETRY_MS, DESCRIBE_RETRY_MS } from './stream.js';
export {
  Decoder, BaselineError, unwrapTick, ackFrame, peekWorld, kindName, stateName,
  KIND, KIND_NAME, STATE_NAME, BASELINES, MAX_SKELETON_BONES,
} from './codec.js';
export { SUBPROTOCOL, AUTH_PREFIX, TOKEN_FORM, protocolsFor, refusalMessage } from './auth.js';
