import { checkSignature, signPayload } from '../../lambdas/shared/signature';

const secret = 'a-secret-of-sufficient-length';
const body = '{"type":"succeeded","id":"gen_1"}';

describe('webhook signatures', () => {
  it('accepts its own signature within the tolerance', () => {
    expect(checkSignature(secret, signPayload(secret, body, 1000), body, 1200, 300)).toBe('valid');
  });

  it('refuses a stale, altered, foreign or malformed signature', () => {
    expect(checkSignature(secret, signPayload(secret, body, 1000), body, 1301, 300)).toBe('stale');
    expect(checkSignature(secret, signPayload(secret, body, 1000), `${body} `, 1000, 300)).toBe('mismatch');
    expect(checkSignature(secret, signPayload('another-secret-entirely', body, 1000), body, 1000, 300)).toBe(
      'mismatch',
    );
    for (const header of [
      undefined,
      '',
      'v1=abc',
      't=1000',
      't=abc,v1=00',
      'garbage',
      `t=1000,v1=${'z'.repeat(64)}`,
    ]) {
      expect(['malformed', 'mismatch']).toContain(checkSignature(secret, header, body, 1000, 300));
    }
  });

  it('accepts any one of several v1 values, so a secret can rotate', () => {
    const good = signPayload(secret, body, 1000).split('v1=')[1];
    expect(checkSignature(secret, `t=1000,v1=${'0'.repeat(64)},v1=${good}`, body, 1000, 300)).toBe('valid');
  });

  it('signs t + "." + body with HMAC-SHA256 in hex', () => {
    expect(signPayload('k', 'b', 1)).toBe(
      't=1,v1=2946e37a45bb02a0bf1bf1a7d9219543801fedd301f9f485aebd72c928639bea',
    );
  });
});
