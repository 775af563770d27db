/**
 * HLS playlists (RFC 8216) as `audio.publish` writes and serves them. Pure:
 * the adapter reads and writes the files.
 *
 * Playlists are written with relative URIs, so a directory of them plays from
 * any base: a local path, a public prefix, or a CDN. Served from a private
 * bucket, each playlist and segment needs its own presigned URL, and a
 * relative URI cannot carry a signature: the playlists then have to be
 * rewritten with `rewritePlaylistUris`, the master pointing at presigned
 * (rewritten) media playlists and each media playlist at presigned segments
 * and init section.
 */

/** RFC 6381 codec of AAC-LC, the profile every rendition is encoded with. */
export const AAC_LC_CODECS = 'mp4a.40.2';

/** Tags whose `URI` attribute names another resource (RFC 8216 and its successor draft). */
const URI_TAGS = new Set([
  'EXT-X-MAP',
  'EXT-X-KEY',
  'EXT-X-SESSION-KEY',
  'EXT-X-MEDIA',
  'EXT-X-I-FRAME-STREAM-INF',
  'EXT-X-SESSION-DATA',
  'EXT-X-PART',
  'EXT-X-PRELOAD-HINT',
  'EXT-X-RENDITION-REPORT',
]);

/**
 * Rewrites every URI of a playlist, master or media: each URI line (a
 * segment or a variant playlist) and each quoted `URI` attribute of the tags
 * that name a resource (the init section of `EXT-X-MAP`, alternative
 * renditions, keys). Everything else, line endings included, is kept.
 */
export function rewritePlaylistUris(playlistText: string, rewrite: (uri: string) => string): string {
  const checked = (uri: string) => {
    const rewritten = rewrite(uri);
    // A quoted-string attribute cannot hold these, and a URI line ends at the first line break.
    if (/["\r\n]/.test(rewritten))
      throw new RangeError(`A playlist URI cannot contain quotes or line breaks.`);
    return rewritten;
  };
  return playlistText
    .split('\n')
    .map((line) => {
      const carriageReturn = line.endsWith('\r') ? '\r' : '';
      const content = carriageReturn ? line.slice(0, -1) : line;
      const trimmed = content.trim();
      if (trimmed === '') return line;
      if (!trimmed.startsWith('#')) return `${checked(trimmed)}${carriageReturn}`;
      const tag = /^#([A-Z0-9-]+):/.exec(trimmed)?.[1];
      if (tag === undefined || !URI_TAGS.has(tag)) return line;
      return `${content.replace(/([:,]URI=)"([^"]*)"/, (_, name: string, uri: string) => `${name}"${checked(uri)}"`)}${carriageReturn}`;
    })
    .join('\n');
}

export interface MediaSegment {
  readonly uri: string;
  readonly durationSeconds: number;
}

export interface MediaPlaylist {
  readonly targetDurationSeconds: number;
  /** The `EXT-X-MAP` init section, for fMP4 segments. */
  readonly initUri?: string;
  readonly segments: readonly MediaSegment[];
}

/** The parts of a media playlist the master playlist's attributes are computed from. */
export function parseMediaPlaylist(text: string): MediaPlaylist {
  const lines = text.split(/\r?\n/).map((line) => line.trim());
  if (lines[0] !== '#EXTM3U') throw new RangeError('A playlist starts with #EXTM3U.');
  let targetDurationSeconds: number | undefined;
  let initUri: string | undefined;
  let pendingDuration: number | undefined;
  const segments: MediaSegment[] = [];
  for (const line of lines) {
    if (line.startsWith('#EXT-X-TARGETDURATION:')) {
      targetDurationSeconds = Number(line.slice('#EXT-X-TARGETDURATION:'.length));
    } else if (line.startsWith('#EXT-X-MAP:')) {
      initUri = /URI="([^"]*)"/.exec(line)?.[1];
    } else if (line.startsWith('#EXTINF:')) {
      pendingDuration = Number.parseFloat(line.slice('#EXTINF:'.length));
    } else if (line !== '' && !line.startsWith('#')) {
      if (pendingDuration === undefined || !Number.isFinite(pendingDuration)) {
        throw new RangeError(`The segment ${line} has no #EXTINF duration.`);
      }
      segments.push({ uri: line, durationSeconds: pendingDuration });
      pendingDuration = undefined;
    }
  }
  if (targetDurationSeconds === undefined || !Number.isFinite(targetDurationSeconds)) {
    throw new RangeError('A media playlist has an #EXT-X-TARGETDURATION.');
  }
  return { targetDurationSeconds, ...(initUri === undefined ? {} : { initUri }), segments };
}

export interface SegmentSize {
  readonly durationSeconds: number;
  readonly bytes: number;
}

/**
 * The peak segment bit rate RFC 8216bis defines for `BANDWIDTH`: the highest
 * bit rate of any run of consecutive segments lasting between 0.5 and 1.5
 * target durations. A recording too short for any such run (all of it under
 * half a target duration) has its overall rate as its peak.
 */
export function peakBitRate(segments: readonly SegmentSize[], targetDurationSeconds: number): number {
  let peak = 0;
  for (let first = 0; first < segments.length; first++) {
    let seconds = 0;
    let bytes = 0;
    for (let last = first; last < segments.length; last++) {
      seconds += (segments[last] as SegmentSize).durationSeconds;
      bytes += (segments[last] as SegmentSize).bytes;
      if (seconds > 1.5 * targetDurationSeconds) break;
      if (seconds >= 0.5 * targetDurationSeconds) peak = Math.max(peak, (bytes * 8) / seconds);
    }
  }
  return Math.ceil(peak > 0 ? peak : averageBitRate(segments));
}

/**
 * A rendition's `BANDWIDTH`: its peak segment bit rate, and never less than
 * the rate it was encoded at. The encoder is asked for that rate and may
 * spend up to it on any passage; on easy audio (a tone, silence) it spends
 * less, and less at 128 kbit/s than at 64 (measured: a 220 Hz tone came out
 * at 61 kbit/s peak at 128 and 72 at 64), so the measured peaks alone would
 * advertise the lower rendition as the richer one and players would pick it.
 * A peak above the rate (container overhead, the bit reservoir) raises it.
 */
export function renditionBandwidth(
  segments: readonly SegmentSize[],
  targetDurationSeconds: number,
  encodedKbps: number,
): number {
  return Math.max(peakBitRate(segments, targetDurationSeconds), encodedKbps * 1000);
}

/** `AVERAGE-BANDWIDTH`: all the segments' bits over their whole duration. */
export function averageBitRate(segments: readonly SegmentSize[]): number {
  const seconds = segments.reduce((sum, segment) => sum + segment.durationSeconds, 0);
  const bytes = segments.reduce((sum, segment) => sum + segment.bytes, 0);
  return seconds > 0 ? Math.ceil((bytes * 8) / seconds) : 0;
}

export interface Variant {
  /** Relative to the master playlist. */
  readonly uri: string;
  /** Peak bits per second (`renditionBandwidth`). */
  readonly bandwidth: number;
  readonly averageBandwidth: number;
  readonly codecs: string;
}

/**
 * The master playlist: one `EXT-X-STREAM-INF` per variant, in the order
 * given (players that do not estimate bandwidth start with the first one).
 * Every AAC frame decodes on its own, so every segment is independent.
 */
export function masterPlaylist(variants: readonly Variant[]): string {
  return [
    '#EXTM3U',
    '#EXT-X-INDEPENDENT-SEGMENTS',
    ...variants.flatMap((variant) => [
      `#EXT-X-STREAM-INF:BANDWIDTH=${variant.bandwidth},AVERAGE-BANDWIDTH=${variant.averageBandwidth},CODECS="${variant.codecs}"`,
      variant.uri,
    ]),
    '',
  ].join('\n');
}
