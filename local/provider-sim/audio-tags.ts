/**
 * The tags at the start of a recording, as `ffmpeg -metadata key=value`
 * writes them in each container the simulated Deepgram listens to:
 * - WAV: a `LIST` chunk of type `INFO`, one sub-chunk per tag (the comment is
 *   `ICMT`), before the `data` chunk;
 * - MP3: an ID3v2 tag (versions 2.2 to 2.4): the comment is a `COMM` frame,
 *   or, as the ffmpeg build this repository installs writes it, a `TXXX`
 *   frame described `comment`; every other `TXXX` is a tag by its
 *   description;
 * - FLAC: the `VORBIS_COMMENT` metadata block, `NAME=value` fields; the
 *   comment is `COMMENT`, or `DESCRIPTION`, which is where ffmpeg writes it.
 * Names are case-insensitive in every one of them, so they are kept lower
 * case. Anything the readers cannot follow (another format, a tag cut off by
 * the end of the bytes, a length that points past them) yields the tags read
 * before it.
 */

export interface AudioTags {
  /** The recording's comment, whichever way its container spells it; undefined when it has none. */
  readonly comment: string | undefined;
  /** Every tag read, by lower-case name. */
  readonly all: ReadonlyMap<string, string>;
}

/** The tags of the recording whose first bytes are `head`. */
export function readAudioTags(head: Buffer): AudioTags {
  const all = new Map<string, string>();
  const magic = head.toString('latin1', 0, 4);
  try {
    if (magic === 'fLaC') vorbisComments(head, all);
    else if (magic === 'RIFF' && head.toString('latin1', 8, 12) === 'WAVE') wavInfo(head, all);
    else if (head.toString('latin1', 0, 3) === 'ID3') id3v2(head, all);
  } catch (error) {
    // A length that points past the bytes: what came before it stands.
    if (!(error instanceof RangeError)) throw error;
  }
  const comment = all.get('comment') ?? all.get('description');
  return { comment, all };
}

/** FLAC: metadata blocks after `fLaC` (a byte of last-flag and type, 24 bits of length), type 4 the comments. */
function vorbisComments(bytes: Buffer, into: Map<string, string>): void {
  let offset = 4;
  while (offset + 4 <= bytes.length) {
    const header = bytes[offset] as number;
    const length = bytes.readUIntBE(offset + 1, 3);
    const body = offset + 4;
    if (body + length > bytes.length) return;
    if ((header & 0x7f) === 4) {
      // Little-endian, as in Vorbis: the vendor string, a count, then each field with its length.
      let at = body + 4 + bytes.readUInt32LE(body);
      const count = bytes.readUInt32LE(at);
      at += 4;
      for (let field = 0; field < count && at + 4 <= body + length; field++) {
        const size = bytes.readUInt32LE(at);
        const text = bytes.toString('utf8', at + 4, at + 4 + size);
        const equals = text.indexOf('=');
        if (equals > 0) into.set(text.slice(0, equals).toLowerCase(), text.slice(equals + 1));
        at += 4 + size;
      }
    }
    if (header & 0x80) return;
    offset = body + length;
  }
}

/** The INFO list's tag ids, by the name ffmpeg gives them (its RIFF INFO table). */
const INFO_NAMES: Readonly<Record<string, string>> = {
  ICMT: 'comment',
  INAM: 'title',
  IART: 'artist',
  IPRD: 'album',
  ICRD: 'date',
  IGNR: 'genre',
  ICOP: 'copyright',
  ISFT: 'encoder',
};

/** WAV: RIFF chunks after `WAVE`; a `LIST` of type `INFO` holds one sub-chunk per tag, NUL-terminated. */
function wavInfo(bytes: Buffer, into: Map<string, string>): void {
  let offset = 12;
  while (offset + 8 <= bytes.length) {
    const id = bytes.toString('latin1', offset, offset + 4);
    const size = bytes.readUInt32LE(offset + 4);
    const end = Math.min(offset + 8 + size, bytes.length);
    if (id === 'LIST' && bytes.toString('latin1', offset + 8, offset + 12) === 'INFO') {
      let at = offset + 12;
      while (at + 8 <= end) {
        const tag = bytes.toString('latin1', at, at + 4);
        const length = bytes.readUInt32LE(at + 4);
        if (at + 8 + length > end) break;
        into.set(INFO_NAMES[tag] ?? tag.toLowerCase(), untilNul(bytes.subarray(at + 8, at + 8 + length)));
        at += 8 + length + (length % 2);
      }
    }
    // The data chunk's size may be a streaming placeholder; nothing ffmpeg writes follows it anyway.
    if (id === 'data') return;
    offset += 8 + size + (size % 2);
  }
}

const untilNul = (bytes: Buffer): string => {
  const nul = bytes.indexOf(0);
  return bytes.toString('utf8', 0, nul === -1 ? bytes.length : nul);
};

/** A 28-bit integer in four bytes of seven bits each, as ID3v2 writes sizes. */
const synchsafe = (bytes: Buffer, at: number): number =>
  ((bytes[at] as number) << 21) |
  ((bytes[at + 1] as number) << 14) |
  ((bytes[at + 2] as number) << 7) |
  (bytes[at + 3] as number);

/** ID3v2's unsynchronisation undone: every 0xFF 0x00 was a lone 0xFF. */
function resynchronised(bytes: Buffer): Buffer {
  const out: number[] = [];
  for (let index = 0; index < bytes.length; index++) {
    out.push(bytes[index] as number);
    if (bytes[index] === 0xff && bytes[index + 1] === 0x00) index++;
  }
  return Buffer.from(out);
}

/** MP3: the ID3v2 tag's `COMM` and `TXXX` frames (`COM` and `TXX` in version 2.2). */
function id3v2(bytes: Buffer, into: Map<string, string>): void {
  if (bytes.length < 10) return;
  const version = bytes[3] as number;
  const flags = bytes[5] as number;
  if (version < 2 || version > 4) return;
  let tag = bytes.subarray(10, Math.min(10 + synchsafe(bytes, 6), bytes.length));
  if (flags & 0x80) tag = resynchronised(tag);
  let offset = 0;
  if (flags & 0x40 && version >= 3) {
    // An extended header: version 2.3 gives the size after its own four bytes, 2.4 the whole size.
    offset = version === 3 ? 4 + tag.readUInt32BE(0) : synchsafe(tag, 0);
  }
  const idLength = version === 2 ? 3 : 4;
  const headerLength = version === 2 ? 6 : 10;
  while (offset + headerLength <= tag.length && tag[offset] !== 0) {
    const id = tag.toString('latin1', offset, offset + idLength);
    const size =
      version === 2
        ? tag.readUIntBE(offset + 3, 3)
        : version === 3
          ? tag.readUInt32BE(offset + 4)
          : synchsafe(tag, offset + 4);
    const formatFlags = version === 4 ? (tag[offset + 9] as number) : 0;
    let body = tag.subarray(offset + headerLength, offset + headerLength + size);
    offset += headerLength + size;
    if (body.length < size) return;
    // Version 2.4 flags each frame: unsynchronised (0x02), preceded by its data length (0x01).
    if (formatFlags & 0x02) body = resynchronised(body);
    if (formatFlags & 0x01) body = body.subarray(4);
    if (id === 'COMM' || id === 'COM') {
      // An encoding byte, a language, a short description, then the comment.
      const encoding = body[0] as number;
      const [description, text] = terminatedPair(body.subarray(4), encoding);
      if (description === '' || !into.has('comment')) into.set('comment', text);
    } else if (id === 'TXXX' || id === 'TXX') {
      const [description, value] = terminatedPair(body.subarray(1), body[0] as number);
      if (description) into.set(description.toLowerCase(), value);
    }
  }
}

/** A NUL-terminated string and the string after it, in one of ID3v2's four text encodings. */
function terminatedPair(bytes: Buffer, encoding: number): [string, string] {
  const wide = encoding === 1 || encoding === 2;
  let end = -1;
  for (let at = 0; at + (wide ? 1 : 0) < bytes.length; at += wide ? 2 : 1) {
    if (bytes[at] === 0 && (!wide || bytes[at + 1] === 0)) {
      end = at;
      break;
    }
  }
  if (end === -1) return [decodeText(bytes, encoding), ''];
  const rest = bytes.subarray(end + (wide ? 2 : 1));
  return [decodeText(bytes.subarray(0, end), encoding), decodeText(rest, encoding).replace(/\0+$/, '')];
}

/** 0: ISO-8859-1; 1: UTF-16 after a byte order mark; 2: UTF-16 big-endian; 3: UTF-8. */
function decodeText(bytes: Buffer, encoding: number): string {
  if (encoding === 3) return bytes.toString('utf8');
  if (encoding === 0) return bytes.toString('latin1');
  let text = bytes;
  let bigEndian = encoding === 2;
  if (encoding === 1 && text.length >= 2) {
    bigEndian = text[0] === 0xfe && text[1] === 0xff;
    if ((text[0] === 0xff && text[1] === 0xfe) || bigEndian) text = text.subarray(2);
  }
  if (!bigEndian) return text.toString('utf16le');
  const swapped = Buffer.from(text.subarray(0, text.length - (text.length % 2)));
  return swapped.swap16().toString('utf16le');
}
