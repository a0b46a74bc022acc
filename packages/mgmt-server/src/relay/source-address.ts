import { isIPv4, isIPv6 } from 'node:net';

/** Where a registration attempt came from: the peer's address and the network it sits in. */
export interface SourceAddress {
  /** The address as the socket reports it (IPv4-mapped IPv6 given as IPv4). */
  readonly host: string;
  /** `a.b.c.0/24` for IPv4, the first four groups + `::/64` for IPv6; the host itself otherwise. */
  readonly network: string;
}

/**
 * The source of a gRPC call from its peer string (`1.2.3.4:5678`, `2001:db8::1:5678`,
 * `::ffff:1.2.3.4:5678`, or bracketed `[2001:db8::1]:5678`). Networks are the blocks one party
 * usually holds whole: a /24 of IPv4, a /64 of IPv6 (one LAN or one customer's delegation), so
 * rotating addresses inside them does not escape a limit on the network.
 */
export function sourceAddressOf(peer: string): SourceAddress {
  const host = normalizedHost(peer);
  if (isIPv4(host)) return { host, network: `${host.split('.').slice(0, 3).join('.')}.0/24` };
  if (isIPv6(host)) {
    const groups = ipv6Groups(host);
    return {
      host,
      network: `${groups
        .slice(0, 4)
        .map((g) => g.toString(16))
        .join(':')}::/64`,
    };
  }
  return { host, network: host };
}

// grpc-js gives a call's peer as `${remoteAddress}:${remotePort}`, IPv6 without brackets
// (`::ffff:1.2.3.4:5678`), so the port is whatever follows the last colon.
function normalizedHost(peer: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(peer);
  let host = bracketed?.[1] ?? /^(.*):\d+$/.exec(peer)?.[1] ?? peer;
  const zone = host.indexOf('%');
  if (zone > 0) host = host.slice(0, zone);
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(host);
  return mapped?.[1] ?? host.toLowerCase();
}

/** The eight 16-bit groups of a valid IPv6 address, `::` expanded and a dotted IPv4 tail converted. */
function ipv6Groups(address: string): number[] {
  const [head = '', tail] = address.split('::');
  const parse = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [Number.parseInt(group, 16)];
          const [a = 0, b = 0, c = 0, d = 0] = group.split('.').map(Number);
          return [(a << 8) | b, (c << 8) | d];
        });
  const front = parse(head);
  if (tail === undefined) return front;
  const back = parse(tail);
  return [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back];
}
