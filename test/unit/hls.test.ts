import {
  AAC_LC_CODECS,
  averageBitRate,
  masterPlaylist,
  parseMediaPlaylist,
  peakBitRate,
  renditionBandwidth,
  rewritePlaylistUris,
} from '../../lambdas/domain/hls';

/** A media playlist as the HLS muxer writes it for fMP4 segments. */
const MEDIA = [
  '#EXTM3U',
  '#EXT-X-VERSION:7',
  '#EXT-X-TARGETDURATION:6',
  '#EXT-X-MEDIA-SEQUENCE:0',
  '#EXT-X-PLAYLIST-TYPE:VOD',
  '#EXT-X-MAP:URI="init.mp4"',
  '#EXTINF:6.013968,',
  'segment-00000.m4s',
  '#EXTINF:5.990748,',
  'segment-00001.m4s',
  '#EXTINF:2.004535,',
  'segment-00002.m4s',
  '#EXT-X-ENDLIST',
  '',
].join('\n');

const MASTER = [
  '#EXTM3U',
  '#EXT-X-INDEPENDENT-SEGMENTS',
  '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac",NAME="en",URI="alt/playlist.m3u8"',
  '#EXT-X-STREAM-INF:BANDWIDTH=70467,AVERAGE-BANDWIDTH=64035,CODECS="mp4a.40.2"',
  '64k/playlist.m3u8',
  '#EXT-X-STREAM-INF:BANDWIDTH=139513,AVERAGE-BANDWIDTH=121917,CODECS="mp4a.40.2"',
  '128k/playlist.m3u8',
  '',
].join('\n');

const presign = (uri: string) =>
  `https://bucket.s3.amazonaws.com/out/${uri}?X-Amz-Signature=ab&X-Amz-Expires=3600`;

describe('rewritePlaylistUris', () => {
  it("rewrites a media playlist's segments and its init section, and nothing else", () => {
    const rewritten = rewritePlaylistUris(MEDIA, presign);
    expect(rewritten.split('\n')).toEqual([
      '#EXTM3U',
      '#EXT-X-VERSION:7',
      '#EXT-X-TARGETDURATION:6',
      '#EXT-X-MEDIA-SEQUENCE:0',
      '#EXT-X-PLAYLIST-TYPE:VOD',
      `#EXT-X-MAP:URI="${presign('init.mp4')}"`,
      '#EXTINF:6.013968,',
      presign('segment-00000.m4s'),
      '#EXTINF:5.990748,',
      presign('segment-00001.m4s'),
      '#EXTINF:2.004535,',
      presign('segment-00002.m4s'),
      '#EXT-X-ENDLIST',
      '',
    ]);
  });

  it("rewrites a master playlist's variants and its renditions' URI attributes", () => {
    const seen: string[] = [];
    const rewritten = rewritePlaylistUris(MASTER, (uri) => {
      seen.push(uri);
      return `/signed/${uri}`;
    });
    expect(seen).toEqual(['alt/playlist.m3u8', '64k/playlist.m3u8', '128k/playlist.m3u8']);
    expect(rewritten).toContain('GROUP-ID="aac",NAME="en",URI="/signed/alt/playlist.m3u8"');
    expect(rewritten).toContain(
      'BANDWIDTH=70467,AVERAGE-BANDWIDTH=64035,CODECS="mp4a.40.2"\n/signed/64k/playlist.m3u8\n',
    );
  });

  it('keeps CRLF line ends and leaves a playlist unchanged under the identity', () => {
    const crlf = MEDIA.replaceAll('\n', '\r\n');
    expect(rewritePlaylistUris(crlf, (uri) => uri)).toBe(crlf);
    expect(rewritePlaylistUris(crlf, (uri) => `x/${uri}`)).toContain('\r\nx/segment-00000.m4s\r\n');
    expect(rewritePlaylistUris(MASTER, (uri) => uri)).toBe(MASTER);
  });

  it('refuses a URI that would break the playlist', () => {
    expect(() => rewritePlaylistUris(MEDIA, () => 'a"b')).toThrow(RangeError);
    expect(() => rewritePlaylistUris(MEDIA, () => 'a\nb')).toThrow(RangeError);
  });
});

describe('parseMediaPlaylist', () => {
  it('reads the target duration, the init section and each segment with its duration', () => {
    expect(parseMediaPlaylist(MEDIA)).toEqual({
      targetDurationSeconds: 6,
      initUri: 'init.mp4',
      segments: [
        { uri: 'segment-00000.m4s', durationSeconds: 6.013968 },
        { uri: 'segment-00001.m4s', durationSeconds: 5.990748 },
        { uri: 'segment-00002.m4s', durationSeconds: 2.004535 },
      ],
    });
  });

  it('refuses what is not a media playlist', () => {
    expect(() => parseMediaPlaylist('hello')).toThrow('A playlist starts with #EXTM3U.');
    expect(() => parseMediaPlaylist('#EXTM3U\nsegment.m4s\n')).toThrow(
      'The segment segment.m4s has no #EXTINF',
    );
    expect(() => parseMediaPlaylist('#EXTM3U\n#EXTINF:6,\na.m4s\n')).toThrow('#EXT-X-TARGETDURATION');
  });
});

describe('bit rates', () => {
  it('takes the peak over runs of 0.5 to 1.5 target durations, not over a short last segment', () => {
    const segments = [
      { durationSeconds: 6, bytes: 48_000 }, // 64 000 bit/s
      { durationSeconds: 6, bytes: 54_000 }, // 72 000 bit/s
      { durationSeconds: 1, bytes: 20_000 }, // 160 000 bit/s alone, too short to count alone
    ];
    // Runs that qualify (3..9 s): [0], [1], [1,2] = 592 000 bits / 7 s.
    expect(peakBitRate(segments, 6)).toBe(Math.ceil(592_000 / 7));
    expect(averageBitRate(segments)).toBe(Math.ceil((122_000 * 8) / 13));
  });

  it('advertises a rendition at no less than the rate it was encoded at, nor less than its peak', () => {
    // A tone as the encoder left it: 64 kbit/s asked, about 67 spent; 128 asked, about 59 spent.
    const at64 = [
      { durationSeconds: 6, bytes: 50_488 },
      { durationSeconds: 6, bytes: 49_769 },
    ];
    const at128 = [
      { durationSeconds: 6, bytes: 44_109 },
      { durationSeconds: 6, bytes: 44_248 },
    ];
    expect(renditionBandwidth(at64, 6, 64)).toBe(Math.ceil((50_488 * 8) / 6));
    expect(renditionBandwidth(at128, 6, 128)).toBe(128_000);
  });

  it('falls back to the average when the whole recording is shorter than half a target duration', () => {
    expect(peakBitRate([{ durationSeconds: 2, bytes: 16_000 }], 6)).toBe(64_000);
    expect(averageBitRate([])).toBe(0);
  });
});

describe('masterPlaylist', () => {
  it('lists each variant with its bandwidths and codecs, in the order given', () => {
    expect(
      masterPlaylist([
        { uri: '64k/playlist.m3u8', bandwidth: 70_467, averageBandwidth: 64_035, codecs: AAC_LC_CODECS },
        { uri: '128k/playlist.m3u8', bandwidth: 139_513, averageBandwidth: 121_917, codecs: AAC_LC_CODECS },
      ]),
    ).toBe(MASTER.replace(/#EXT-X-MEDIA:.*\n/, ''));
  });
});
