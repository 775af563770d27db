import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateTestAudio } from '../../local/harness/test-audio';
import { readAudioTags } from '../../local/provider-sim/audio-tags';

/**
 * The simulated Deepgram's reading of a recording's tags: the comment as
 * the installed ffmpeg writes it into each container, and the frames and
 * fields other taggers write, built here byte by byte.
 */

const COMMENT = 'Grace is not earned. Is it given? Yes — freely, “to all”! Éléonore said: سلام.';

let dir: string;
const read = (name: string) => readFileSync(path.join(dir, name));

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'longhaul-sim-tags-'));
  await Promise.all([
    ...['wav', 'mp3', 'flac'].map((ext) =>
      generateTestAudio(path.join(dir, `commented.${ext}`), { seconds: 1, kind: 'tone', comment: COMMENT }),
    ),
    generateTestAudio(path.join(dir, 'plain.flac'), { seconds: 1, kind: 'tone' }),
  ]);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('readAudioTags on what ffmpeg writes with -metadata comment=…', () => {
  it.each([
    ['a WAV', 'its LIST/INFO chunk’s ICMT', 'commented.wav'],
    ['an MP3', 'its ID3v2 tag', 'commented.mp3'],
    ['a FLAC', 'its VORBIS_COMMENT block', 'commented.flac'],
  ])('reads %s’s comment from %s', (_, __, name) => {
    expect(readAudioTags(read(name)).comment).toBe(COMMENT);
  });

  it('reads the comment from the first bytes alone, and nothing from a file without one', () => {
    expect(readAudioTags(read('commented.flac').subarray(0, 512)).comment).toBe(COMMENT);
    expect(readAudioTags(read('plain.flac'))).toEqual({
      comment: undefined,
      all: new Map([['encoder', expect.any(String)]]),
    });
  });

  it('reads nothing from what is not a tagged recording, and what came before a tag cut short', () => {
    expect(readAudioTags(Buffer.from('RIFF not really a wav')).all.size).toBe(0);
    expect(readAudioTags(Buffer.alloc(0)).all.size).toBe(0);
    const flac = read('commented.flac');
    // The comment block announced whole but cut off inside: its fields are not read.
    const block = flac.indexOf(Buffer.from('DESCRIPTION='));
    expect(readAudioTags(flac.subarray(0, block + 20)).comment).toBeUndefined();
  });
});

/** An ID3v2 tag of `version` holding `frames`, each `[id, body]`. */
function id3(version: 2 | 3 | 4, frames: readonly (readonly [string, Buffer])[]): Buffer {
  const size = (value: number, bytes: number, synchsafe: boolean) => {
    const out = Buffer.alloc(bytes);
    for (let index = bytes - 1, rest = value; index >= 0; index--) {
      out[index] = rest & (synchsafe ? 0x7f : 0xff);
      rest = synchsafe ? rest >> 7 : rest >> 8;
    }
    return out;
  };
  const body = Buffer.concat(
    frames.map(([id, frame]) =>
      version === 2
        ? Buffer.concat([Buffer.from(id, 'latin1'), size(frame.length, 3, false), frame])
        : Buffer.concat([
            Buffer.from(id, 'latin1'),
            size(frame.length, 4, version === 4),
            Buffer.alloc(2),
            frame,
          ]),
    ),
  );
  const padding = Buffer.alloc(16);
  return Buffer.concat([
    Buffer.from([0x49, 0x44, 0x33, version, 0, 0]),
    size(body.length + padding.length, 4, true),
    body,
    padding,
    // An MP3 frame header, where the audio would begin.
    Buffer.from([0xff, 0xfb, 0x90, 0x64]),
  ]);
}

const utf16WithBom = (text: string) =>
  Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
const utf16be = (text: string) => Buffer.from(text, 'utf16le').swap16();

describe('readAudioTags on ID3v2 frames other taggers write', () => {
  it('takes the COMM frame without a description for the comment, in UTF-16 with a byte order mark (2.3)', () => {
    const comm = (description: string, text: string) =>
      Buffer.concat([
        Buffer.from([1]),
        Buffer.from('eng'),
        utf16WithBom(description),
        Buffer.alloc(2),
        utf16WithBom(text),
      ]);
    const tag = id3(3, [
      ['COMM', comm('iTunNORM', ' 000002E8 00000000')],
      ['COMM', comm('', COMMENT)],
    ]);

    expect(readAudioTags(tag).comment).toBe(COMMENT);
  });

  it('reads COMM in UTF-8 with synchsafe sizes (2.4), and COM in ISO-8859-1 (2.2)', () => {
    const v24 = id3(4, [
      ['COMM', Buffer.concat([Buffer.from([3]), Buffer.from('eng'), Buffer.from([0]), Buffer.from(COMMENT)])],
    ]);
    const v22 = id3(2, [
      [
        'COM',
        Buffer.concat([
          Buffer.from([0]),
          Buffer.from('eng'),
          Buffer.from([0]),
          Buffer.from('Ça va.', 'latin1'),
        ]),
      ],
    ]);

    expect(readAudioTags(v24).comment).toBe(COMMENT);
    expect(readAudioTags(v22).comment).toBe('Ça va.');
  });

  it('reads a TXXX frame as the tag its description names, in UTF-16 big-endian', () => {
    const txxx = Buffer.concat([
      Buffer.from([2]),
      utf16be('Sermon Series'),
      Buffer.alloc(2),
      utf16be('Advent'),
    ]);

    expect(readAudioTags(id3(3, [['TXXX', txxx]])).all.get('sermon series')).toBe('Advent');
  });
});

/** A FLAC file's metadata: the STREAMINFO of `flac`, then a VORBIS_COMMENT block of `fields`, last. */
function flacWithComments(flac: Buffer, fields: readonly string[]): Buffer {
  const streamInfo = flac.subarray(4, 4 + 4 + 34);
  const u32 = (value: number) => {
    const out = Buffer.alloc(4);
    out.writeUInt32LE(value);
    return out;
  };
  const vendor = Buffer.from('test');
  const body = Buffer.concat([
    u32(vendor.length),
    vendor,
    u32(fields.length),
    ...fields.flatMap((field) => [u32(Buffer.byteLength(field)), Buffer.from(field)]),
  ]);
  const header = Buffer.from([
    0x80 | 4,
    (body.length >> 16) & 0xff,
    (body.length >> 8) & 0xff,
    body.length & 0xff,
  ]);
  // STREAMINFO's header loses its last-block flag: the comments follow it.
  const info = Buffer.from(streamInfo);
  info[0] = (info[0] as number) & 0x7f;
  return Buffer.concat([Buffer.from('fLaC'), info, header, body]);
}

describe('readAudioTags on Vorbis comments other taggers write', () => {
  it('takes COMMENT over DESCRIPTION, and field names in any case', () => {
    const flac = flacWithComments(read('plain.flac'), [
      'description=An album note.',
      'Comment=What was said.',
      'LongHaul_Chunk_Offset=12.000000',
    ]);

    const tags = readAudioTags(flac);

    expect(tags.comment).toBe('What was said.');
    expect(tags.all.get('description')).toBe('An album note.');
    expect(tags.all.get('longhaul_chunk_offset')).toBe('12.000000');
  });
});
