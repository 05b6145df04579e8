// The viewer's access token (clients/js/src/auth.js): the subprotocols it
// offers for a page URL's fragment, by the access-control contract
// (issue 8): "ragdolld.v1" alone without a token, "ragdolld.v1" and
// "ragdolld.auth." + TOKEN with one; a fragment whose token is malformed
// is refused with a message that does not repeat it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { protocolsFor, refusalMessage } from '../../clients/js/src/index.js';

const TOKEN = 'Abc.def_ghi~jkl-0123456789';

test('without a token the viewer offers ragdolld.v1 only', () => {
  for (const hash of ['', '#', '#world=2', '#tokens=' + TOKEN, undefined]) {
    assert.deepEqual(protocolsFor(hash), { protocols: ['ragdolld.v1'], token: false, error: null }, String(hash));
  }
});

test('a token in the fragment is offered as a second subprotocol', () => {
  for (const hash of [`#token=${TOKEN}`, `token=${TOKEN}`, `#x=1&token=${TOKEN}&y=2`]) {
    assert.deepEqual(protocolsFor(hash),
      { protocols: ['ragdolld.v1', 'ragdolld.auth.Abc.def_ghi~jkl-0123456789'], token: true, error: null }, hash);
  }
  // 16 and 128 characters: the bounds.
  assert.deepEqual(protocolsFor('#token=' + 'a'.repeat(16)).protocols, ['ragdolld.v1', 'ragdolld.auth.' + 'a'.repeat(16)]);
  assert.equal(protocolsFor('#token=' + 'Z'.repeat(128)).protocols[1].length, 'ragdolld.auth.'.length + 128);
});

test('a malformed token is refused, and the message does not contain it', () => {
  const bad = ['', 'a'.repeat(15), 'a'.repeat(129), 'abcdefgh ijklmnop', 'abcdefgh+ijklmnop',
    'abcdefgh%20ijklmnop', 'abcdefgh/ijklmnop', 'abcdefghijklmnop=', 'abcdéfghijklmnopq', 'abcdefgh,ijklmnop'];
  for (const token of bad) {
    const r = protocolsFor('#token=' + token);
    assert.equal(r.protocols, null, token);
    assert.equal(r.token, true);
    assert.match(r.error, /not a token/);
    if (token.length > 0) assert.ok(!r.error.includes(token), r.error);
  }
});

test('the refusal message points at the fragment, never at a token', () => {
  assert.match(refusalMessage(true), /check the token in the page URL \(#token=…\)/);
  assert.match(refusalMessage(false), /#token=YOUR_TOKEN/);
});
