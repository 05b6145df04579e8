// Access tokens in the viewer (the access-control contract, issue 8). A
// browser cannot set headers on a WebSocket, so the token travels as a second
// subprotocol, "ragdolld.auth." + TOKEN, next to "ragdolld.v1"; the server
// answers with "ragdolld.v1" alone. The page takes the token from its URL's
// fragment (http://host:8080/#token=TOKEN, also /?world=2#token=TOKEN): a
// fragment is never sent in an HTTP request, so the token stays out of
// request lines and server logs. Nothing here writes the token anywhere.
// No DOM: the tests run it in Node (tests/js/auth.test.mjs).

export const SUBPROTOCOL = 'ragdolld.v1';
export const AUTH_PREFIX = 'ragdolld.auth.';
// 16-128 characters that fit a Sec-WebSocket-Protocol token and a URL
// fragment unescaped.
export const TOKEN_FORM = /^[A-Za-z0-9._~-]{16,128}$/;

/**
 * The subprotocols to offer for a page whose location.hash is `hash` ("",
 * "#token=…", or "#a=1&token=…"). Returns { protocols, token, error }:
 * protocols to pass to new WebSocket() (null when there is an error),
 * whether a token is offered, and a message for the user when the fragment
 * has a token that is not one (the message never contains it).
 */
export function protocolsFor(hash) {
  const fragment = String(hash ?? '').replace(/^#/, '');
  // Parsed by hand, not with URLSearchParams: that would turn '+' into a
  // space and undo %-escapes, and a token has neither.
  let token = null;
  for (const part of fragment.split('&')) {
    const eq = part.indexOf('=');
    if (eq >= 0 && part.slice(0, eq) === 'token') token = part.slice(eq + 1);
  }
  if (token === null) return { protocols: [SUBPROTOCOL], token: false, error: null };
  if (!TOKEN_FORM.test(token)) {
    return {
      protocols: null,
      token: true,
      error: 'the token in the page URL (#token=…) is not a token: it wants 16–128 characters of A–Z a–z 0–9 . _ ~ -',
    };
  }
  return { protocols: [SUBPROTOCOL, AUTH_PREFIX + token], token: true, error: null };
}

/**
 * What to tell the user when the server answers HTTP but will not upgrade
 * the connection (401 unknown or missing token, 403, 429, 503: a browser
 * does not see which).
 */
export function refusalMessage(withToken) {
  return withToken
    ? 'connection refused: check the token in the page URL (#token=…)'
    : 'connection refused: the server may want an access token: open the page as …/#token=YOUR_TOKEN';
}
