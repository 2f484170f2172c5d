import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../server/config.ts';
import { peerAddress } from '../../server/runtime/listener.ts';

// The listener's address, the connection limits and TRUST_PROXY as server/config.ts reads them from the environment.

const refusal = (env: Record<string, string>) => {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  return null;
};

describe('HOST, MAX_CONNECTIONS_PER_ADDRESS and FIRST_BYTE_TIMEOUT_MS', () => {
  it('when none is set, then the public listener is on loopback, one address may hold 256 connections, and a connection has 5 s to send its first byte', () => {
    const config = loadConfig({});
    expect(config.HOST).toBe('127.0.0.1');
    expect(config.MAX_CONNECTIONS_PER_ADDRESS).toBe(256);
    expect(config.FIRST_BYTE_TIMEOUT_MS).toBe(5_000);
    expect(config.TRUST_PROXY).toBe(false);
  });

  it('when HOST is an IPv4 or IPv6 address, then it is taken; a host name or an empty value stops the start naming HOST', () => {
    for (const host of ['0.0.0.0', '::', '10.1.2.3', '::1', 'fd00::5']) expect(loadConfig({ HOST: host }).HOST).toBe(host);
    for (const host of ['localhost', 'myhost.example.com', '', '10.1.2', '0.0.0.0:8080'])
      expect(refusal({ HOST: host }), host).toMatch(/^invalid configuration:\n {2}HOST: /);
  });

  it('when MAX_CONNECTIONS_PER_ADDRESS is 0, then there is no cap per address; below 0 or not a whole number stops the start', () => {
    expect(loadConfig({ MAX_CONNECTIONS_PER_ADDRESS: '0' }).MAX_CONNECTIONS_PER_ADDRESS).toBe(0);
    expect(loadConfig({ MAX_CONNECTIONS_PER_ADDRESS: '4096' }).MAX_CONNECTIONS_PER_ADDRESS).toBe(4096);
    for (const value of ['-1', '1.5', 'many']) expect(refusal({ MAX_CONNECTIONS_PER_ADDRESS: value }), value).toContain('MAX_CONNECTIONS_PER_ADDRESS: ');
    for (const value of ['0', '-5', 'x']) expect(refusal({ FIRST_BYTE_TIMEOUT_MS: value }), value).toContain('FIRST_BYTE_TIMEOUT_MS: ');
  });
});

describe('TRUST_PROXY', () => {
  it('when it is a hop count, false, or a list of named ranges, addresses and CIDR blocks, then it is what Express takes for trust proxy', () => {
    const cases: [string, unknown][] = [
      ['false', false],
      ['0', false],
      ['1', 1],
      ['2', 2],
      ['loopback', ['loopback']],
      ['loopback, uniquelocal,linklocal', ['loopback', 'uniquelocal', 'linklocal']],
      ['10.0.0.0/8, 192.168.1.7', ['10.0.0.0/8', '192.168.1.7']],
      ['fd00::/8,::1', ['fd00::/8', '::1']],
      ['203.0.113.9/32', ['203.0.113.9/32']],
    ];
    for (const [value, expected] of cases) expect(loadConfig({ TRUST_PROXY: value }).TRUST_PROXY, value).toEqual(expected);
  });

  it('when it is true, a negative or fractional count, an address out of range, a prefix too long, a host name or an empty entry, then the start stops naming TRUST_PROXY', () => {
    for (const value of [
      'true',
      'yes',
      '-1',
      '1.5',
      '300.1.1.1',
      '10.0.0.0/33',
      'fd00::/129',
      '10.0.0.0/',
      'proxy.example.com',
      'loopback,',
      '',
      'loopback, ,1',
    ]) {
      expect(refusal({ TRUST_PROXY: value }), value).toMatch(/^invalid configuration:\n {2}TRUST_PROXY: /);
    }
  });
});

describe('the address a connection is counted under', () => {
  it('when an IPv4 client reaches a dual-stack listener, then its IPv4-mapped IPv6 address is counted as the IPv4 address', () => {
    expect(peerAddress('::ffff:127.0.0.2')).toBe('127.0.0.2');
    expect(peerAddress('::FFFF:10.0.0.1')).toBe('10.0.0.1');
    expect(peerAddress('127.0.0.2')).toBe('127.0.0.2');
    expect(peerAddress('::1')).toBe('::1');
    expect(peerAddress('2001:db8::ffff:1.2.3.4')).toBe('2001:db8::ffff:1.2.3.4');
    expect(peerAddress(undefined)).toBeUndefined();
  });
});
